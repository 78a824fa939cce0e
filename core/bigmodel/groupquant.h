// Group-wise integer weights as GPTQ and AWQ checkpoints store them, unpacked and dequantized by
// pure functions over the raw tensors (no libtorch). A Linear weight W [out, in] is stored as
// `bits`-bit integers q with, per group of `groupSize` input channels and per output channel, a
// zero point z and a scale s (float16 in the checkpoint, passed here as float32, which holds every
// float16 exactly): W[o, i] = s[g, o] * (q[i, o] - z[g, o]). The product of a float16 scale and a
// small integer is exact in float32, so the float32 result rounded to float16 (nearest, ties to
// even) is bit for bit what the reference kernels compute in float16.
//
// GPTQ (AutoGPTQ / GPTQModel / optimum, quant_method "gptq", bits 2, 4 or 8):
//   qweight int32 [in * bits / 32, out]: packed along the input dimension, input r * (32 / bits) + j
//           in bits [bits * j, bits * (j + 1)) of row r;
//   qzeros  int32 [groups, out * bits / 32]: packed along the output dimension the same way;
//   scales  [groups, out];
//   g_idx   int32 [in]: the group of each input channel (act-order checkpoints permute them);
//           without it, i / groupSize.
//   checkpoint_format "gptq" (v1, AutoGPTQ's) stores each zero point minus one: z = stored + 1 (the
//   stored value masked to `bits` first, as AutoGPTQ's reference dequantization does); "gptq_v2"
//   stores z itself.
// AWQ (AutoAWQ / llm-awq GEMM, quant_method "awq", version "gemm", 4 bits):
//   qweight int32 [in, out / 8]: packed along the output dimension, output 8 c + AWQ_ORDER[j] in
//           bits [4 j, 4 j + 4) of column c, AWQ_ORDER = {0, 2, 4, 6, 1, 3, 5, 7};
//   qzeros  int32 [groups, out / 8], packed the same way; scales [groups, out]; group = i / groupSize.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>

namespace accel::bigmodel::groupquant {

enum class GptqFormat { V1, V2 }; // checkpoint_format "gptq" / "gptq_v2"

struct GptqWeight {
    const int32_t *qweight = nullptr;
    const int32_t *qzeros = nullptr;
    const float *scales = nullptr;
    const int32_t *gIdx = nullptr; // may be null
    int64_t inFeatures = 0, outFeatures = 0, groupSize = 128;
    int bits = 4;
    GptqFormat format = GptqFormat::V1;
};

struct AwqWeight {
    const int32_t *qweight = nullptr;
    const int32_t *qzeros = nullptr;
    const float *scales = nullptr;
    int64_t inFeatures = 0, outFeatures = 0, groupSize = 128;
};

// Checks the sizes (bits, divisibility, g_idx in range) and writes W [out, in] row-major.
Result<void> dequantizeGptq(const GptqWeight &weight, float *out);
Result<void> dequantizeAwq(const AwqWeight &weight, float *out);

// The unpacked integers alone (q [in, out], z [groups, out], zero points as the format defines
// them: GPTQ v1's plus one applied), for inspection and tests.
Result<void> unpackGptq(const GptqWeight &weight, int32_t *q, int32_t *z);
Result<void> unpackAwq(const AwqWeight &weight, int32_t *q, int32_t *z);

// IEEE half precision bits <-> float32 (exact one way, nearest-even the other).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);

} // namespace accel::bigmodel::groupquant
