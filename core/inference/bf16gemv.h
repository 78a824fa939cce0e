// Decode-shaped products with bfloat16 weights: x [rows, k] times W [n, k] (a Linear's weight as
// stored, bfloat16 bits) transposed, plus an optional bfloat16 bias [n]. Every product and sum in
// float32, the bias added in float32, and each output rounded once to bfloat16, to nearest even, as
// libtorch's CPU linear rounds its float32 accumulator. Each weight is widened to float32 in
// registers (its 16 bits shifted left 16: exact) in the kernel and thread split of floatgemv.h
// (gemvskeleton.h), reading half the bytes; with bfloat16 x, KernelIsa::Avx512 and a CPU with
// avx512_bf16, the weights and x are multiplied in pairs as stored instead (bf16pairs.h). Includes
// no libtorch header.
#pragma once

#include "core/inference/kernelisa.h"

#include <cstdint>
#include <cstring>

namespace accel::inference::bf16 {

// A bfloat16 value's bits as float32 (exact).
inline float widen(uint16_t bits)
{
    const uint32_t wide = uint32_t(bits) << 16;
    float value;
    std::memcpy(&value, &wide, sizeof value);
    return value;
}

// float32 to bfloat16 bits, rounded to nearest even; a NaN stays a (quiet) NaN.
inline uint16_t narrow(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return uint16_t((bits >> 16) | 0x0040u);
    return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// out [rows, n] = x [rows, k] W^T (+ bias), W bfloat16 [n, k] row-major, bias bfloat16 [n] or null,
// out bfloat16. `isa` must be one the CPU runs (kernelisa.h).
void gemv(KernelIsa isa, const float *x, int64_t rows, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
          uint16_t *out);
// The same with x in bfloat16, widened once to float32 first.
void gemv(KernelIsa isa, const uint16_t *x, int64_t rows, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
          uint16_t *out);

} // namespace accel::inference::bf16
