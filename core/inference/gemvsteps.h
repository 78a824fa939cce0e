// The vector steps of the decode-shaped products' kernel (gemvskeleton.h): B output rows times R
// rows of x with AVX-512F or with AVX2 and FMA, each variant compiled with a function-level target
// attribute, so the build runs on any x86-64 CPU. Only for gemvskeleton.h.
#pragma once

// GCC 12's AVX-512 headers start vectors from _mm512_undefined_*, which -Wmaybe-uninitialized and
// -Wuninitialized report inside the headers (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace accel::inference::skeleton {

inline constexpr int64_t kBlock = 4; // output rows one step reads side by side

// Before a step's loads of Bytes from each of its rows at element i: the same columns kBlock rows on
// (the next step's rows, stored right after these), into the cache, since the hardware prefetchers
// ramp up on each new row's short stream too late (docs/quantization.md, "Int8 decode: the two
// kernels measured": a 1-row int8 product over 252 MiB ran at 0.5 of a plain read's rate without
// this, 0.8 with it). Always inlined: GCC takes a function that only prefetches for one without
// effects and drops its calls.
template <class E, int B, int Bytes>
__attribute__((always_inline)) inline void prefetchNextRows(const E *const *row, int64_t i, int64_t k)
{
    static_assert(Bytes <= 128);
    const int64_t ahead = kBlock * k * int64_t(sizeof(E));
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b) {
        const char *next = reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(row[b] + i) + ahead);
        _mm_prefetch(next, _MM_HINT_T0);
        if (Bytes > 64)
            _mm_prefetch(next + 64, _MM_HINT_T0);
    }
}

// B output rows j.. times R rows of x; U independent accumulators per pair (k unrolled U times) so
// that one row of x still keeps enough FMAs in flight. Every loop over u, r and b is unrolled whole
// (the pragmas): GCC at -O2 leaves them rolled, and then keeps the accumulators on the stack, each
// FMA waiting for a store and a load (the int8 product ran 3x slower so).
template <class F, class Finish, int R, int B, int U>
__attribute__((target("avx512f"))) void stepAvx512(const float *x, int64_t k, const typename F::Element *w,
                                                   const Finish &finish, int64_t j, int64_t n, float *out)
{
    __m512 acc[U][R][B];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                acc[u][r][b] = _mm512_setzero_ps();
    const typename F::Element *row[B];
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b)
        row[b] = w + (j + b) * k;
    int64_t i = 0;
    for (; i + 16 * U <= k; i += 16 * U) {
        prefetchNextRows<typename F::Element, B, 16 * U * sizeof(typename F::Element)>(row, i, k);
#pragma GCC unroll 16
        for (int u = 0; u < U; ++u) {
            __m512 wv[B];
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                wv[b] = F::load16(row[b] + i + 16 * u);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                const __m512 xv = _mm512_loadu_ps(x + r * k + i + 16 * u);
#pragma GCC unroll 16
                for (int b = 0; b < B; ++b)
                    acc[u][r][b] = _mm512_fmadd_ps(wv[b], xv, acc[u][r][b]);
            }
        }
    }
    for (; i < k; i += 16) { // the rest, 16 at a time, the last masked (no read past the row)
        const int64_t left = std::min<int64_t>(16, k - i);
        const __mmask16 mask = static_cast<__mmask16>((1u << left) - 1);
        __m512 wv[B];
#pragma GCC unroll 16
        for (int b = 0; b < B; ++b)
            wv[b] = F::load16(row[b] + i, left);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x + r * k + i);
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                acc[0][r][b] = _mm512_fmadd_ps(wv[b], xv, acc[0][r][b]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int b = 0; b < B; ++b) {
            __m512 sum = acc[0][r][b];
#pragma GCC unroll 16
            for (int u = 1; u < U; ++u)
                sum = _mm512_add_ps(sum, acc[u][r][b]);
            out[r * n + j + b] = finish(_mm512_reduce_add_ps(sum), j + b);
        }
}

__attribute__((target("avx2,fma"))) inline float sum8(__m256 v)
{
    const __m128 quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
    return _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)));
}

template <class F, class Finish, int R, int B, int U>
__attribute__((target("avx2,fma"))) void stepAvx2(const float *x, int64_t k, const typename F::Element *w,
                                                  const Finish &finish, int64_t j, int64_t n, float *out)
{
    __m256 acc[U][R][B];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                acc[u][r][b] = _mm256_setzero_ps();
    const typename F::Element *row[B];
#pragma GCC unroll 16
    for (int b = 0; b < B; ++b)
        row[b] = w + (j + b) * k;
    int64_t i = 0;
    for (; i + 8 * U <= k; i += 8 * U) {
        prefetchNextRows<typename F::Element, B, 8 * U * sizeof(typename F::Element)>(row, i, k);
#pragma GCC unroll 16
        for (int u = 0; u < U; ++u) {
            __m256 wv[B];
#pragma GCC unroll 16
            for (int b = 0; b < B; ++b)
                wv[b] = F::load8(row[b] + i + 8 * u);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                const __m256 xv = _mm256_loadu_ps(x + r * k + i + 8 * u);
#pragma GCC unroll 16
                for (int b = 0; b < B; ++b)
                    acc[u][r][b] = _mm256_fmadd_ps(wv[b], xv, acc[u][r][b]);
            }
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int b = 0; b < B; ++b) {
            __m256 sum = acc[0][r][b];
#pragma GCC unroll 16
            for (int u = 1; u < U; ++u)
                sum = _mm256_add_ps(sum, acc[u][r][b]);
            float total = sum8(sum);
            for (int64_t t = i; t < k; ++t)
                total += x[r * k + t] * F::widen(row[b][t]);
            out[r * n + j + b] = finish(total, j + b);
        }
}

// Output rows [begin, end) for R rows of x, kBlock at a time, then one at a time.
template <class F, class Finish, int R>
__attribute__((target("avx512f"))) void avx512(const float *x, int64_t k, const typename F::Element *w,
                                               const Finish &finish, int64_t begin, int64_t end, int64_t n, float *out)
{
    constexpr int U = R <= 2 ? 2 : 1;
    int64_t j = begin;
    for (; j + kBlock <= end; j += kBlock)
        stepAvx512<F, Finish, R, kBlock, U>(x, k, w, finish, j, n, out);
    for (; j < end; ++j)
        stepAvx512<F, Finish, R, 1, U>(x, k, w, finish, j, n, out);
}

template <class F, class Finish, int R>
__attribute__((target("avx2,fma"))) void avx2(const float *x, int64_t k, const typename F::Element *w,
                                              const Finish &finish, int64_t begin, int64_t end, int64_t n, float *out)
{
    constexpr int U = R <= 2 ? 2 : 1;
    int64_t j = begin;
    for (; j + kBlock <= end; j += kBlock)
        stepAvx2<F, Finish, R, kBlock, U>(x, k, w, finish, j, n, out);
    for (; j < end; ++j)
        stepAvx2<F, Finish, R, 1, U>(x, k, w, finish, j, n, out);
}

} // namespace accel::inference::skeleton
