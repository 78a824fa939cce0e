// The one kernel of the decode-shaped products (floatgemv.h, int8gemv.h): out [rows, n] = x [rows, k]
// times W [n, k] transposed, W's elements widened to float32 in registers, every product and sum in
// float32, then finish(sum, j) per output (a bias added, a row scale multiplied). Four output rows
// side by side, kPassRows rows of x per pass over the weight, AVX-512F, AVX2 with FMA or a portable
// loop (kernelisa.h; the vector steps, one template for both instruction sets, in gemvsteps.h),
// the output rows split over threads by `split` (intraopteam.h). A weight format is only its load
// step:
//   struct Format {
//       using Element = ...;
//       static float widen(Element);                           // one value (the portable loop, tails)
//       static __m512 load16(const Element *);                 // target("avx512f"): 16 values
//       static __m512 load16(const Element *, int64_t left);   // the first left < 16, zeros after, no read past
//       static __m256 load8(const Element *);                  // target("avx2,fma"): 8 values
//   };
// Only for the kernel sources (floatgemv.cpp, int8gemv.cpp); includes no libtorch header.
#pragma once

#include "core/inference/gemvsteps.h"
#include "core/inference/intraopteam.h"
#include "core/inference/kernelisa.h"

#include <algorithm>
#include <cstdint>
#include <functional>

namespace accel::inference::skeleton {

inline constexpr int64_t kPassRows = 4; // x rows one pass over the weight serves

// Output rows a piece of a product needs to hold `bytes` of weights, rows of k elements of
// `elementBytes` each: enough that starting the team costs little against reading them.
inline int64_t rowsHolding(int64_t bytes, int64_t k, int64_t elementBytes)
{
    return bytes / elementBytes / std::max<int64_t>(k, 1);
}
inline constexpr int64_t kPieceBytes = int64_t(64) << 10; // a float32 or bfloat16 product's pieces

template <class F, class Finish>
void portable(int rows, const float *x, int64_t k, const typename F::Element *w, const Finish &finish, int64_t begin,
              int64_t end, int64_t n, float *out)
{
    for (int64_t j = begin; j < end; ++j) {
        const typename F::Element *row = w + j * k;
        for (int r = 0; r < rows; ++r) {
            const float *xr = x + r * k;
            float acc = 0;
            for (int64_t i = 0; i < k; ++i)
                acc += xr[i] * F::widen(row[i]);
            out[r * n + j] = finish(acc, j);
        }
    }
}

// Weights one chunk of a piece holds when x has more than kPassRows rows (a prompt): every pass runs
// over a chunk before the next chunk starts, so the chunk comes from memory once and the passes after
// the first read it from the cache (a core's L2 here). Measured on the AVX2 EPYC, the 1.1B Llama's
// float32 weights at 16 rows of x: 624 ms a prompt so, 874 ms one pass over the whole weight after
// the other (docs/quantization.md, "Prompts through the decode kernel").
inline constexpr int64_t kChunkBytes = int64_t(256) << 10;

// The product, every kPassRows rows of x one pass, the output rows split by `split` in pieces of at
// least `minimumRows`; with more rows of x than one pass serves, each piece in chunks of kChunkBytes
// of weights, every pass over a chunk before the next.
template <class F, class Finish>
void product(KernelIsa isa, const float *x, int64_t rows, int64_t k, const typename F::Element *w, int64_t n,
             float *out, const Finish &finish, Pieces split, int64_t minimumRows)
{
    using Kernel = void (*)(const float *, int64_t, const typename F::Element *, const Finish &, int64_t, int64_t,
                            int64_t, float *);
    static constexpr Kernel wide[] = {&avx512<F, Finish, 1>, &avx512<F, Finish, 2>, &avx512<F, Finish, 3>,
                                      &avx512<F, Finish, 4>};
    static constexpr Kernel narrow[] = {&avx2<F, Finish, 1>, &avx2<F, Finish, 2>, &avx2<F, Finish, 3>,
                                        &avx2<F, Finish, 4>};
    static_assert(kPassRows == 4);
    const int64_t chunk =
        rows <= kPassRows
            ? n
            : std::max(kBlock, rowsHolding(kChunkBytes, k, sizeof(typename F::Element)) / kBlock * kBlock);
    split(n, kBlock, std::max(kBlock, minimumRows), [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; c += chunk) {
            const int64_t cend = std::min(end, c + chunk);
            for (int64_t r0 = 0; r0 < rows; r0 += kPassRows) {
                const int count = int(std::min(kPassRows, rows - r0));
                const float *xs = x + r0 * k;
                float *os = out + r0 * n;
                switch (isa) {
                case KernelIsa::Avx512:
                    wide[count - 1](xs, k, w, finish, c, cend, n, os);
                    continue;
                case KernelIsa::Avx2:
                    narrow[count - 1](xs, k, w, finish, c, cend, n, os);
                    continue;
                case KernelIsa::Portable:
                    break;
                }
                portable<F>(count, xs, k, w, finish, c, cend, n, os);
            }
        }
    });
}

} // namespace accel::inference::skeleton
