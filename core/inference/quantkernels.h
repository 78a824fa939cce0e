// Matrix products with 4-bit quantized weights on the CPU, over raw buffers: x [rows, k] float32
// times a weight [n, k] stored as 4-bit indices (two per byte, the first element in the high
// nibble, row-major over the flattened weight) into a 16-value table per block of `blocksize`
// elements: bitsandbytes' NF4 / FP4 code times the block's absmax, or a group's affine integers
// scale * (q - zero). Each pass (up to 4 rows) streams each weight byte once through AVX-512 (the
// table lookup is one vpermps), split by output rows over libtorch's intra-op threads
// (intraopteam.h); a portable loop runs without AVX-512. Many rows (prefill) dequantize tiles of
// the weight (4-bit or int8 rows) and multiply them with libtorch's GEMM. Int8 products are
// int8gemv.h's. Includes no libtorch header.
#pragma once

#include <cstdint>

namespace accel::inference::qk {

struct FourBitWeight {
    const uint8_t *packed = nullptr; // (n * k + 1) / 2 bytes
    int64_t n = 0, k = 0;
    int64_t blocksize = 64; // elements of the flattened weight per table
    // Table of block b: code[q] * absmax[b] (code: 16 values), or scales[b] * (q - zeros[b]).
    const float *code = nullptr;
    const float *absmax = nullptr;
    const float *scales = nullptr;
    const float *zeros = nullptr;
};

// out[r, j] = sum_i x[r, i] * W[j, i]
void fourBit(const float *x, int64_t rows, const FourBitWeight &w, float *out);
// W's rows [begin, end) as float32, [end - begin, k].
void dequantizeFourBitRows(const FourBitWeight &w, int64_t begin, int64_t end, float *out);
void dequantizeInt8Rows(const int8_t *w, const float *scale, int64_t k, int64_t begin, int64_t end, float *out);

// Whether this CPU runs the AVX-512 kernels.
bool hasAvx512();

} // namespace accel::inference::qk
