// bitsandbytes' quantized weight formats as pure functions over raw buffers (no libtorch):
//
// * LLM.int8 weights (Linear8bitLt, load_in_8bit): int8 values per output row, CB [rows, columns],
//   with the row's absolute maximum SCB [rows] (float32). Dequantized as bitsandbytes'
//   int8_vectorwise_dequant computes it: (CB * SCB) * float32(1/127), each product rounded to
//   float32. Quantized as int8_vectorwise_quant (threshold 0): q = round-half-even(w * scale) with
//   scale = float32(float32(1 / absmax) * 127), torch's 127.0 / absmax (a reciprocal, then a
//   product). Linear8bitLt quantizes the weight cast to float16.
// * 4-bit NF4 and FP4 (Linear4bit, load_in_4bit): the weight flattened row-major, cut in blocks of
//   `blocksize` elements (64 by default) with each block's absolute maximum as a float32 scale;
//   each element is a 4-bit index into a 16-value code (get_4bit_type's tables), two per byte, the
//   first element in the high nibble. Dequantized: code[index] * absmax[block] in float32.
//   Quantized as quantize_4bit's reference: scaled = clamp(w * (1 / absmax), -1, 1), the index of
//   the nearest code value (the lowest index on a tie). A trailing partial block has its own absmax.
// * Nested statistics (bnb_4bit_use_double_quant, compress_statistics): the absmax values are
//   themselves 8-bit indices into a 256-value code, in blocks of 256 with float32 scales, plus an
//   offset: absmax[b] = code8[q[b]] * absmax2[b / 256] + offset, rounded to float32 at each step.
//
// The CUDA kernels and bitsandbytes' CPU library give the same float32 values; its pure-PyTorch
// fallback (used where no native library runs) rounds the FP4 code to four decimals, which is not
// the format's definition.
#pragma once

#include <array>
#include <cstdint>

namespace accel::bigmodel::bnb {

// --- int8 per output row -------------------------------------------------------------------------
void dequantizeInt8Rows(const int8_t *cb, const float *scb, int64_t rows, int64_t columns, float *out);
void quantizeInt8Rows(const float *weight, int64_t rows, int64_t columns, int8_t *cb, float *scb);

// --- 4-bit NF4 / FP4 ----------------------------------------------------------------------------
enum class FourBit { NF4, FP4 };
const char *fourBitName(FourBit type); // "nf4", "fp4" (bnb_4bit_quant_type)
// get_4bit_type(type): NF4's normal-distribution quantiles; FP4 = {0, 0.0625, 8, 12, 4, 6, 2, 3}
// and their negatives divided by 12 (sign bit 8, 2 exponent bits, 1 mantissa bit).
const std::array<float, 16> &fourBitCode(FourBit type);

constexpr int64_t kDefaultBlocksize = 64;
int64_t blockCount(int64_t elements, int64_t blocksize); // blocks of absmax values
int64_t packedBytes(int64_t elements);                   // two indices per byte

// `packed` holds packedBytes(elements) bytes, `absmax` blockCount(elements, blocksize) values.
void dequantize4bit(const uint8_t *packed, const float *absmax, int64_t elements, int64_t blocksize, FourBit type,
                    float *out);
void quantize4bit(const float *weight, int64_t elements, int64_t blocksize, FourBit type, uint8_t *packed,
                  float *absmax);

// --- nested absmax -------------------------------------------------------------------------------
constexpr int64_t kNestedBlocksize = 256;
// `quantized` holds `blocks` indices into `code` (256 values, the checkpoint's nested_quant_map),
// `scales` blockCount(blocks, nestedBlocksize) float32 values (nested_absmax).
void dequantizeNestedAbsmax(const uint8_t *quantized, int64_t blocks, const float *code, const float *scales,
                            int64_t nestedBlocksize, float offset, float *absmax);

} // namespace accel::bigmodel::bnb
