// The bfloat16 decode product (bf16gemv.h, x in bfloat16) through AVX512_BF16's dot-pair
// instruction (vdpbf16ps): 32 stored bfloat16 weights times 32 bfloat16 values of x a vector, each
// product exact in float32 (8-bit significands), each pair of products added into one of 16
// float32 lanes (round to nearest even; inputs and results below float32's normal range read and
// written as zero, DAZ/FTZ), so no weight is widened first. One output row at a time for one row of
// x (decode), four side by side for up to kPassRows rows of x per pass over the weight, the last
// k % 32 values through masked loads; the output rows split by sharedPieces (intraopteam.h); the
// bias added in float32 and each output rounded once to bfloat16, to nearest even, as bf16::gemv
// does. bf16::gemv takes it at KernelIsa::Avx512 where pairsRunHere(); docs/quantization.md
// ("Bfloat16 products in pairs") has what it measured. Includes no libtorch header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// The function attribute of every function that runs the dot-pair instruction (here and in
// gemvcolumns.cpp's bfloat16 column product).
#define ACCEL_PAIRS_TARGET target("avx512bf16,avx512f,avx512bw")

namespace accel::inference::bf16 {

// Whether CPU flags (hardware::parseCpuInfo's) include avx512_bf16. Every CPU that has it (Cooper
// Lake, Sapphire Rapids and later, Zen 4 and later) has AVX-512F and BW, which the kernel uses too.
bool pairsRunWith(const std::vector<std::string> &cpuFlags);
// This CPU's (hostCpuFlags(), kernelisa.h).
bool pairsRunHere();

// out [rows, n] = x [rows, k] W^T (+ bias), x and W [n, k] row-major and bias [n] (or null)
// bfloat16 bits, out bfloat16. Only where pairsRunHere().
void gemvPairs(const uint16_t *x, int64_t rows, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
               uint16_t *out);

} // namespace accel::inference::bf16
