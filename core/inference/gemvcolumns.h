// The one-row float32 product for weights stored [in, out] (GPT-2's Conv1D): out[j] = b[j] +
// sum_i x[i] W[i, j], every product and sum in float32. The weight is read once, as stored, neither
// transposed nor copied (offload, LoRA and saving read the parameter as it is): whole rows, four at
// a time front to back, into partial sums of all columns that stay in the L1 cache (a block of
// columns down the rows, a short stretch of every row, ran at 0.6 of the [out, in] product's rate,
// this at 0.9). The rows are cut in at most eight chunks, each chunk's partial sums added in chunk
// order at the end, so the result does not depend on the thread count; the chunks go to the caller
// and the other threads as they are free (intraopteam.h's sharedPieces). AVX-512F, AVX2 with FMA or
// a portable loop (kernelisa.h); a bfloat16 variant below. Includes no libtorch header.
#pragma once

#include "core/inference/kernelisa.h"

#include <cstdint>

namespace accel::inference::f32 {

// out [n] = x [k] W (+ bias), W float32 [k, n] row-major, bias [n] or null. `isa` must be one the
// CPU runs (kernelisa.h).
void gemvColumns(KernelIsa isa, const float *x, int64_t k, const float *w, const float *bias, int64_t n, float *out);

// out [rows, n] = x [rows, k] W (+ bias), W float32 [k, n] row-major, for a prompt's rows (libtorch's
// GEMM, addmm, copies the weight's panels first, which takes most of its time at a few rows). W's
// rows are cut in at most eight chunks, each a contiguous stretch of memory, on libtorch's OpenMP
// team (intraopteam.h's parallelPieces). A chunk is read in blocks of about kColumnChunkBytes of
// whole rows, front to back, into strips of three vectors of columns, and tiles of kTileRows rows
// of x by one strip hold their sums in registers down the block. Each chunk's sums are added in
// chunk order after the bias, so the result does not depend on the thread count.
inline constexpr int64_t kTileRows = 4;
inline constexpr int64_t kColumnChunkBytes = int64_t(128) << 10;
void gemmColumns(KernelIsa isa, const float *x, int64_t rows, int64_t k, const float *w, const float *bias, int64_t n,
                 float *out);

} // namespace accel::inference::f32

namespace accel::inference::bf16 {

// gemvColumns with x, W, bias and out in bfloat16 (bits): x and bias widened to float32 (exact), W
// widened in registers, every product and sum in float32, each output rounded once to bfloat16, to
// nearest even (bf16gemv.h's narrow), as libtorch's CPU addmm rounds its float32 accumulator. At
// KernelIsa::Avx512 on a CPU with avx512_bf16 (bf16pairs.h's pairsRunHere) the rows are taken two
// at a time into AVX512_BF16's dot pairs instead, as stored (each product exact, each pair added
// with one rounding, values below float32's normal range as zero), the next rows prefetched.
void gemvColumns(KernelIsa isa, const uint16_t *x, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
                 uint16_t *out);

} // namespace accel::inference::bf16
