#include "core/inference/floatgemv.h"

#include "core/inference/intraopteam.h"

// GCC 12's AVX-512 headers start vectors from _mm512_undefined_*, which -Wmaybe-uninitialized and
// -Wuninitialized report inside the headers (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

namespace accel::inference::f32 {

namespace {

constexpr int64_t kBlock = 4; // output rows one step reads side by side

// Output rows per piece: enough weight bytes (64 KiB) that starting the team costs little against them.
int64_t minimumRows(int64_t k)
{
    return std::max<int64_t>(kBlock, (int64_t(16) << 10) / std::max<int64_t>(k, 1));
}

float biasOf(const float *bias, int64_t j)
{
    return bias ? bias[j] : 0.0f;
}

// --- portable ---------------------------------------------------------------------------------

void portable(int rows, const float *x, int64_t k, const float *w, const float *bias, int64_t begin, int64_t end,
              int64_t n, float *out)
{
    for (int64_t j = begin; j < end; ++j) {
        const float *row = w + j * k;
        for (int r = 0; r < rows; ++r) {
            const float *xr = x + r * k;
            float acc = 0;
            for (int64_t i = 0; i < k; ++i)
                acc += xr[i] * row[i];
            out[r * n + j] = acc + biasOf(bias, j);
        }
    }
}

// --- AVX-512F ---------------------------------------------------------------------------------

// B output rows j.. times R rows of x; U independent accumulators per pair (k unrolled U times) so
// that one row of x still keeps enough FMAs in flight.
template <int R, int B, int U>
__attribute__((target("avx512f"))) void stepAvx512(const float *x, int64_t k, const float *w, const float *bias,
                                                   int64_t j, int64_t n, float *out)
{
    __m512 acc[U][R][B];
    for (int u = 0; u < U; ++u)
        for (int r = 0; r < R; ++r)
            for (int b = 0; b < B; ++b)
                acc[u][r][b] = _mm512_setzero_ps();
    const float *row[B];
    for (int b = 0; b < B; ++b)
        row[b] = w + (j + b) * k;
    int64_t i = 0;
    for (; i + 16 * U <= k; i += 16 * U) {
        for (int u = 0; u < U; ++u) {
            __m512 wv[B];
            for (int b = 0; b < B; ++b)
                wv[b] = _mm512_loadu_ps(row[b] + i + 16 * u);
            for (int r = 0; r < R; ++r) {
                const __m512 xv = _mm512_loadu_ps(x + r * k + i + 16 * u);
                for (int b = 0; b < B; ++b)
                    acc[u][r][b] = _mm512_fmadd_ps(wv[b], xv, acc[u][r][b]);
            }
        }
    }
    for (; i < k; i += 16) { // the rest, 16 at a time, the last masked (no read past the row)
        const int64_t left = std::min<int64_t>(16, k - i);
        const __mmask16 mask = static_cast<__mmask16>((1u << left) - 1);
        __m512 wv[B];
        for (int b = 0; b < B; ++b)
            wv[b] = _mm512_maskz_loadu_ps(mask, row[b] + i);
        for (int r = 0; r < R; ++r) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x + r * k + i);
            for (int b = 0; b < B; ++b)
                acc[0][r][b] = _mm512_fmadd_ps(wv[b], xv, acc[0][r][b]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int b = 0; b < B; ++b) {
            __m512 sum = acc[0][r][b];
            for (int u = 1; u < U; ++u)
                sum = _mm512_add_ps(sum, acc[u][r][b]);
            out[r * n + j + b] = _mm512_reduce_add_ps(sum) + biasOf(bias, j + b);
        }
}

template <int R>
__attribute__((target("avx512f"))) void avx512(const float *x, int64_t k, const float *w, const float *bias,
                                               int64_t begin, int64_t end, int64_t n, float *out)
{
    constexpr int U = R <= 2 ? 2 : 1;
    int64_t j = begin;
    for (; j + kBlock <= end; j += kBlock)
        stepAvx512<R, kBlock, U>(x, k, w, bias, j, n, out);
    for (; j < end; ++j)
        stepAvx512<R, 1, U>(x, k, w, bias, j, n, out);
}

// --- AVX2 + FMA -------------------------------------------------------------------------------

__attribute__((target("avx2,fma"))) inline float sum8(__m256 v)
{
    const __m128 quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
    return _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)));
}

template <int R, int B, int U>
__attribute__((target("avx2,fma"))) void stepAvx2(const float *x, int64_t k, const float *w, const float *bias,
                                                  int64_t j, int64_t n, float *out)
{
    __m256 acc[U][R][B];
    for (int u = 0; u < U; ++u)
        for (int r = 0; r < R; ++r)
            for (int b = 0; b < B; ++b)
                acc[u][r][b] = _mm256_setzero_ps();
    const float *row[B];
    for (int b = 0; b < B; ++b)
        row[b] = w + (j + b) * k;
    int64_t i = 0;
    for (; i + 8 * U <= k; i += 8 * U) {
        for (int u = 0; u < U; ++u) {
            __m256 wv[B];
            for (int b = 0; b < B; ++b)
                wv[b] = _mm256_loadu_ps(row[b] + i + 8 * u);
            for (int r = 0; r < R; ++r) {
                const __m256 xv = _mm256_loadu_ps(x + r * k + i + 8 * u);
                for (int b = 0; b < B; ++b)
                    acc[u][r][b] = _mm256_fmadd_ps(wv[b], xv, acc[u][r][b]);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int b = 0; b < B; ++b) {
            __m256 sum = acc[0][r][b];
            for (int u = 1; u < U; ++u)
                sum = _mm256_add_ps(sum, acc[u][r][b]);
            float total = sum8(sum);
            for (int64_t t = i; t < k; ++t)
                total += x[r * k + t] * row[b][t];
            out[r * n + j + b] = total + biasOf(bias, j + b);
        }
}

template <int R>
__attribute__((target("avx2,fma"))) void avx2(const float *x, int64_t k, const float *w, const float *bias,
                                              int64_t begin, int64_t end, int64_t n, float *out)
{
    constexpr int U = R <= 2 ? 2 : 1;
    int64_t j = begin;
    for (; j + kBlock <= end; j += kBlock)
        stepAvx2<R, kBlock, U>(x, k, w, bias, j, n, out);
    for (; j < end; ++j)
        stepAvx2<R, 1, U>(x, k, w, bias, j, n, out);
}

// Output rows [begin, end) for `rows` (1..kPassRows) rows of x.
void piece(KernelIsa isa, int rows, const float *x, int64_t k, const float *w, const float *bias, int64_t begin,
           int64_t end, int64_t n, float *out)
{
    using Kernel = void (*)(const float *, int64_t, const float *, const float *, int64_t, int64_t, int64_t, float *);
    static constexpr Kernel wide[] = {&avx512<1>, &avx512<2>, &avx512<3>, &avx512<4>};
    static constexpr Kernel narrow[] = {&avx2<1>, &avx2<2>, &avx2<3>, &avx2<4>};
    static_assert(kPassRows == 4);
    switch (isa) {
    case KernelIsa::Avx512:
        return wide[rows - 1](x, k, w, bias, begin, end, n, out);
    case KernelIsa::Avx2:
        return narrow[rows - 1](x, k, w, bias, begin, end, n, out);
    case KernelIsa::Portable:
        break;
    }
    portable(rows, x, k, w, bias, begin, end, n, out);
}

} // namespace

void gemv(KernelIsa isa, const float *x, int64_t rows, int64_t k, const float *w, const float *bias, int64_t n,
          float *out)
{
    for (int64_t r0 = 0; r0 < rows; r0 += kPassRows) {
        const int count = int(std::min(kPassRows, rows - r0));
        const float *xs = x + r0 * k;
        float *os = out + r0 * n;
        sharedPieces(n, kBlock, minimumRows(k),
                     [&](int64_t begin, int64_t end) { piece(isa, count, xs, k, w, bias, begin, end, n, os); });
    }
}

} // namespace accel::inference::f32
