// Decode-shaped products with int8 weights: x [rows, k] float32 times W [n, k] stored as int8 rows
// with a float32 scale each (bitsandbytes' CB, and SCB / 127): out[r, j] = scale[j] * sum_i x[r, i]
// * W[j, i], every product and sum in float32. Each call streams each weight byte once per
// kPassRows rows of x, widening the int8 values to float32 in registers (AVX-512F, or AVX2 with FMA,
// or a portable loop: kernelisa.h; at AVX2 one row of x over rows shorter than 4 KiB takes a kernel
// of its own, int8gemv.cpp), with the output rows split over libtorch's intra-op threads
// (intraopteam.h). Includes no libtorch header.
#pragma once

#include "core/inference/kernelisa.h"

#include <cstdint>

namespace accel::inference::int8 {

inline constexpr int64_t kPassRows = 4; // x rows one pass over the weight serves

// out [rows, n] = x [rows, k] W^T, W int8 [n, k] row-major with scale [n]. `isa` must be one the
// CPU runs (kernelisa.h).
void gemv(KernelIsa isa, const float *x, int64_t rows, int64_t k, const int8_t *w, const float *scale, int64_t n,
          float *out);

} // namespace accel::inference::int8
