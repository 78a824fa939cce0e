#include "core/inference/bf16pairs.h"

#include "core/inference/bf16gemv.h"
#include "core/inference/gemvskeleton.h"
#include "core/inference/intraopteam.h"
#include "core/inference/kernelisa.h"

#include <algorithm>
#include <iterator>

namespace accel::inference::bf16 {

namespace {

constexpr int64_t kWidth = 32; // bfloat16 values a vector: 16 pairs, one per float32 lane

__attribute__((ACCEL_PAIRS_TARGET, always_inline)) inline __m512 dotPairs(__m512 acc, __m512i x, __m512i w)
{
    return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
}

__attribute__((ACCEL_PAIRS_TARGET, always_inline)) inline __m512i loadLeft(const uint16_t *p, int64_t left)
{
    return _mm512_maskz_loadu_epi16(__mmask32((uint64_t(1) << left) - 1), p);
}

// B output rows j.. times R rows of x, U independent accumulators per pair (k unrolled U times),
// every loop over u, r and b unrolled whole (as in gemvsteps.h, whose prefetch of the next rows
// this uses too).
template <int R, int B, int U>
__attribute__((ACCEL_PAIRS_TARGET, always_inline)) inline void step(const uint16_t *x, int64_t k, const uint16_t *w,
                                                                    const uint16_t *bias, int64_t j, int64_t n,
                                                                    uint16_t *out)
{
    __m512 acc[U][R][B] = {}; // zeros
    const uint16_t *row[B];
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b)
        row[b] = w + (j + b) * k;
    int64_t i = 0;
    for (; i + kWidth * U <= k; i += kWidth * U) {
        if constexpr (B == 1) { // one stream: the lines skeleton::kAheadBytes on along the row (and the next rows)
            skeleton::prefetchAhead<uint16_t, kWidth * U * sizeof(uint16_t)>(row[0] + i);
        } else {
            skeleton::prefetchNextRows<uint16_t, B, kWidth * U * sizeof(uint16_t)>(row, i, k);
        }
#pragma GCC unroll 16
        for (int u = 0; u < U; ++u) {
            __m512i wv[B];
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                wv[b] = _mm512_loadu_si512(row[b] + i + kWidth * u);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                const __m512i xv = _mm512_loadu_si512(x + r * k + i + kWidth * u);
#pragma GCC unroll 16
                for (int b = 0; b < B; ++b)
                    acc[u][r][b] = dotPairs(acc[u][r][b], xv, wv[b]);
            }
        }
    }
#pragma GCC unroll 16
    for (int u = 1; u < U; ++u) // the unrolled accumulators into the first
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                acc[0][r][b] = _mm512_add_ps(acc[0][r][b], acc[u][r][b]);
    for (; i < k; i += kWidth) { // the rest, 32 at a time, the last masked (zeros add nothing)
        const int64_t left = std::min(kWidth, k - i);
        __m512i wv[B];
#pragma GCC unroll 16
        for (int b = 0; b < B; ++b)
            wv[b] = loadLeft(row[b] + i, left);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const __m512i xv = loadLeft(x + r * k + i, left);
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                acc[0][r][b] = dotPairs(acc[0][r][b], xv, wv[b]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int b = 0; b < B; ++b) {
            float total = _mm512_reduce_add_ps(acc[0][r][b]);
            if (bias)
                total += widen(bias[j + b]);
            out[r * n + j + b] = narrow(total);
        }
}

// Output rows [begin, end) for R rows of x. One row of x (decode): one output row at a time, four
// accumulators, its row prefetched skeleton::kAheadBytes on, so that each thread reads one stream in storage
// order: at 1 thread [5632 x 2048] read 38.9-39.5 GB/s and [2048 x 5632] 31.9-36.4 against
// 31.3-32.5 and 31.6-33.8 with four output rows side by side (bench_inference bf16Products, the
// two builds alternated twice, load 1.1; 8 KiB ahead was within noise of 4 KiB). More rows of x:
// kBlock output rows at a time, then one at a time.
template <int R>
__attribute__((ACCEL_PAIRS_TARGET, flatten)) void outputRows(const uint16_t *x, int64_t k, const uint16_t *w,
                                                             const uint16_t *bias, int64_t begin, int64_t end,
                                                             int64_t n, uint16_t *out)
{
    if constexpr (R == 1) {
        for (int64_t j = begin; j < end; ++j)
            step<1, 1, 4>(x, k, w, bias, j, n, out);
        return;
    }
    constexpr int U = R <= 2 ? 2 : 1;
    constexpr int B = int(skeleton::kBlock);
    int64_t j = begin;
    for (; j + B <= end; j += B)
        step<R, B, U>(x, k, w, bias, j, n, out);
    for (; j < end; ++j)
        step<R, 1, U>(x, k, w, bias, j, n, out);
}

} // namespace

bool pairsRunWith(const std::vector<std::string> &cpuFlags)
{
    return std::find(cpuFlags.begin(), cpuFlags.end(), "avx512_bf16") != cpuFlags.end();
}

bool pairsRunHere()
{
    static const bool runs = pairsRunWith(hostCpuFlags());
    return runs;
}

void gemvPairs(const uint16_t *x, int64_t rows, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
               uint16_t *out)
{
    using Kernel =
        void (*)(const uint16_t *, int64_t, const uint16_t *, const uint16_t *, int64_t, int64_t, int64_t, uint16_t *);
    static constexpr Kernel kernels[] = {&outputRows<1>, &outputRows<2>, &outputRows<3>, &outputRows<4>};
    static_assert(std::size(kernels) == skeleton::kPassRows);
    const int64_t minimumRows = skeleton::rowsHolding(skeleton::kPieceBytes, k, sizeof(uint16_t)); // as bf16::gemv's
    for (int64_t r0 = 0; r0 < rows; r0 += skeleton::kPassRows) {
        const int count = int(std::min(skeleton::kPassRows, rows - r0));
        const uint16_t *xs = x + r0 * k;
        uint16_t *os = out + r0 * n;
        sharedPieces(n, skeleton::kBlock, std::max(skeleton::kBlock, minimumRows),
                     [&](int64_t begin, int64_t end) { kernels[count - 1](xs, k, w, bias, begin, end, n, os); });
    }
}

} // namespace accel::inference::bf16
