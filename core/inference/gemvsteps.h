// The vector steps of the decode-shaped products' kernel (gemvskeleton.h): B output rows times R
// rows of x, written once over the instruction set's vector operations (Avx512Ops, Avx2Ops) and
// compiled for each with a function-level target attribute (the rows functions avx512 and avx2,
// which inline everything they call: `flatten`), so the build runs on any x86-64 CPU. Only for
// gemvskeleton.h.
#pragma once

#include "core/inference/gemvops.h"

#include <algorithm>
#include <cstdint>

namespace accel::inference::skeleton {

inline constexpr int64_t kBlock = 4; // output rows one step reads side by side

// Before a step's loads of Bytes from each of its B rows at element i: the same columns B rows on
// (the next step's rows, stored right after these), into the cache, since the hardware prefetchers
// ramp up on each new row's short stream too late (docs/quantization.md, "Int8 decode: the two
// kernels measured": a 1-row int8 product over 252 MiB ran at 0.5 of a plain read's rate without
// this, 0.8 with it). Always inlined: GCC takes a function that only prefetches for one without
// effects and drops its calls.
template <class E, int B, int Bytes>
__attribute__((always_inline)) inline void prefetchNextRows(const E *const *row, int64_t i, int64_t k)
{
    static_assert(Bytes <= 128);
    const int64_t ahead = B * k * int64_t(sizeof(E));
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b) {
        const char *next = reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(row[b] + i) + ahead);
        _mm_prefetch(next, _MM_HINT_T0);
        if (Bytes > 64)
            _mm_prefetch(next + 64, _MM_HINT_T0);
    }
}

// How far ahead of its loads a one-output-row step prefetches along its row (and on into the rows
// after it, which are stored next): of 1, 2, 4 and 8 KiB (and 16 KiB for int8 at 2 threads), tried
// on a 500 MB int8 and a 1 GiB float32 product at 1 and 2 threads, 4 KiB was best or within noise
// of the best. Float32 rows at AVX2 take none (Avx2Ops::kPrefetchFloat32Rows).
inline constexpr int64_t kAheadBytes = 4096;

// Before a one-row step's loads of Bytes at `at`: the lines kAheadBytes on, into the cache.
template <class E, int Bytes>
__attribute__((always_inline)) inline void prefetchAhead(const E *at)
{
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(at) + uintptr_t(kAheadBytes);
#pragma GCC unroll 16
    for (int line = 0; line < (Bytes + 63) / 64; ++line)
        _mm_prefetch(reinterpret_cast<const char *>(ahead + uintptr_t(64 * line)), _MM_HINT_T0);
}

// Whether one row of x reads weight rows of `rowBytes` one at a time on Ops (rows below), rather than
// kBlock side by side: the rule the int8 kernel of its own at AVX2 (int8gemv.cpp) takes too.
template <class Ops>
constexpr bool oneStreamRows(int64_t rowBytes)
{
    return rowBytes < Ops::kOneStreamRowBytes;
}

// B output rows j.. times R rows of x; U independent accumulators per pair (k unrolled U times) so
// that one row of x still keeps enough FMAs in flight. Every loop over u, r and b is unrolled whole
// (the pragmas): GCC at -O2 leaves them rolled, and then keeps the accumulators on the stack, each
// FMA waiting for a store and a load (the int8 product ran 3x slower so).
template <class Ops, class F, class Finish, int R, int B, int U>
__attribute__((always_inline)) inline void step(const float *x, int64_t k, const typename F::Element *w,
                                                const Finish &finish, int64_t j, int64_t n, float *out)
{
    using V = typename Ops::V;
    constexpr int W = Ops::kWidth;
    V acc[U][R][B];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                acc[u][r][b] = Ops::zero();
    const typename F::Element *row[B];
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b)
        row[b] = w + (j + b) * k;
    int64_t i = 0;
    for (; i + W * U <= k; i += W * U) {
        if constexpr (B == 1) {
            if constexpr (sizeof(typename F::Element) < sizeof(float) || Ops::kPrefetchFloat32Rows)
                prefetchAhead<typename F::Element, W * U * sizeof(typename F::Element)>(row[0] + i);
        } else
            prefetchNextRows<typename F::Element, B, W * U * sizeof(typename F::Element)>(row, i, k);
#pragma GCC unroll 16
        for (int u = 0; u < U; ++u) {
            V wv[B];
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                wv[b] = Ops::template weights<F>(row[b] + i + W * u);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                const V xv = Ops::load(x + r * k + i + W * u);
#pragma GCC unroll 16
                for (int b = 0; b < B; ++b)
                    acc[u][r][b] = Ops::fmadd(wv[b], xv, acc[u][r][b]);
            }
        }
    }
    if constexpr (Ops::kMaskedTail) { // the rest, W at a time, the last masked
        for (; i < k; i += W) {
            const int64_t left = std::min<int64_t>(W, k - i);
            V wv[B];
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                wv[b] = Ops::template weights<F>(row[b] + i, left);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                const V xv = Ops::load(x + r * k + i, left);
#pragma GCC unroll 16
                for (int b = 0; b < B; ++b)
                    acc[0][r][b] = Ops::fmadd(wv[b], xv, acc[0][r][b]);
            }
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int b = 0; b < B; ++b) {
            V sum = acc[0][r][b];
#pragma GCC unroll 16
            for (int u = 1; u < U; ++u)
                sum = Ops::add(sum, acc[u][r][b]);
            float total = Ops::sum(sum);
            for (int64_t t = i; t < k; ++t) // the rest one by one, where the tail was not masked
                total += x[r * k + t] * F::widen(row[b][t]);
            out[r * n + j + b] = finish(total, j + b);
        }
}

// Output rows [begin, end) for R rows of x. One row of x and weight rows shorter than
// Ops::kOneStreamRowBytes (gemvops.h: 8 KiB at AVX-512, 4 KiB at AVX2): one output row at a time
// with four accumulators, so that each thread reads one stream, its rows in storage order,
// prefetched kAheadBytes on. Measured on the AVX-512 machine on 2026-11-29 against four rows side by
// side (docs/quantization.md, "One weight row at a time"): int8 products 15-30 % more GB/s at 1 and 2
// threads, float32 rows of 8 KiB the same either way, float32 rows of 22 KiB 13-16 % slower one at
// a time (there four long streams side by side keep more reads in flight than one stream does).
// Otherwise kBlock output rows side by side (Ops::kPromptBlock with 3 or more rows of x), each step
// prefetching the next step's rows, then one at a time.
template <class Ops, class F, class Finish, int R>
__attribute__((always_inline)) inline void rows(const float *x, int64_t k, const typename F::Element *w,
                                                const Finish &finish, int64_t begin, int64_t end, int64_t n, float *out)
{
    if constexpr (R == 1) {
        if (oneStreamRows<Ops>(k * int64_t(sizeof(typename F::Element)))) {
            for (int64_t j = begin; j < end; ++j)
                step<Ops, F, Finish, 1, 1, 4>(x, k, w, finish, j, n, out);
            return;
        }
    }
    constexpr int U = R <= 2 ? 2 : 1;
    constexpr int B = R >= 3 ? Ops::kPromptBlock : kBlock;
    int64_t j = begin;
    for (; j + B <= end; j += B)
        step<Ops, F, Finish, R, B, U>(x, k, w, finish, j, n, out);
    for (; j < end; ++j)
        step<Ops, F, Finish, R, 1, U>(x, k, w, finish, j, n, out);
}

template <class F, class Finish, int R>
__attribute__((target("avx512f"), flatten)) void avx512(const float *x, int64_t k, const typename F::Element *w,
                                                        const Finish &finish, int64_t begin, int64_t end, int64_t n,
                                                        float *out)
{
    rows<Avx512Ops, F, Finish, R>(x, k, w, finish, begin, end, n, out);
}

template <class F, class Finish, int R>
__attribute__((target("avx2,fma"), flatten)) void avx2(const float *x, int64_t k, const typename F::Element *w,
                                                       const Finish &finish, int64_t begin, int64_t end, int64_t n,
                                                       float *out)
{
    rows<Avx2Ops, F, Finish, R>(x, k, w, finish, begin, end, n, out);
}

} // namespace accel::inference::skeleton
