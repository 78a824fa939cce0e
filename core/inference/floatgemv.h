// Decode-shaped products with float32 weights: x [rows, k] times W [n, k] (a Linear's weight as
// stored) transposed, plus an optional bias [n], every product and sum in float32. A decode step
// is bound by reading the weights: each call reads each weight row from memory once, kPassRows rows
// of x a pass (more rows: every pass over a cached chunk of the weight, gemvskeleton.h), four output
// rows at a time (AVX-512F, or AVX2 with FMA, or a portable loop: kernelisa.h), with
// the output rows split in pieces that the caller and the other at::get_num_threads() - 1 threads take
// when they are free: for one row of x without a team barrier (intraopteam.h's sharedPieces), so that a
// thread the system holds back does not hold up a decode step; for more rows on libtorch's OpenMP team
// (parallelPieces; intraopteam.h's piecesForRows). Includes no libtorch header.
#pragma once

#include "core/inference/kernelisa.h"

#include <cstdint>

namespace accel::inference::f32 {

inline constexpr int64_t kPassRows = 4; // x rows one pass over the weight serves

// out [rows, n] = x [rows, k] W^T (+ bias), W float32 [n, k] row-major, bias [n] or null. `isa`
// must be one the CPU runs (kernelisa.h).
void gemv(KernelIsa isa, const float *x, int64_t rows, int64_t k, const float *w, const float *bias, int64_t n,
          float *out);

} // namespace accel::inference::f32
