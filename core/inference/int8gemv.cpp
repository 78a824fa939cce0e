#include "core/inference/int8gemv.h"

#include "core/inference/gemvskeleton.h"
#include "core/inference/intraopteam.h"

#include <cstring>

namespace accel::inference::int8 {

namespace {

static_assert(kPassRows == skeleton::kPassRows);

// The load step of int8 weights: sign-extended to int32, converted to float32 (exact).
struct Int8Rows {
    using Element = int8_t;
    static float widen(int8_t v) { return static_cast<float>(v); }
    __attribute__((target("avx512f"))) static __m512 load16(const int8_t *p)
    {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
    }
    __attribute__((target("avx512f"))) static __m512 load16(const int8_t *p, int64_t left)
    {
        alignas(16) int8_t bytes[16] = {};
        std::memcpy(bytes, p, size_t(left));
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i *>(bytes))));
    }
    __attribute__((target("avx2,fma"))) static __m256 load8(const int8_t *p)
    {
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))));
    }
};

struct MultiplyScale {
    const float *scale;
    float operator()(float sum, int64_t j) const { return sum * scale[j]; }
};

// One row of x at AVX2, weight rows the generic step would take one at a time (gemvsteps.h,
// oneStreamRows): each 32 weights come in one 32-byte load, and four in-lane byte shuffles
// (vpshufb) put each weight in the top byte of an int32, w * 2^24, converted to float32 exactly.
// The shuffles keep 128-bit lanes apart, so vector q of a block holds its weights 4q..4q + 3 and
// 16 + 4q..16 + 4q + 3; x is copied once per product into that order (kBlockOrder), times 2^-24,
// so each product is the float32 product x_i w_i itself (x_i * 2^-24 is exact for |x_i| >= 2^-102).
// The generic step widens 8 weights a load (vpmovsxbd), four loads where this takes one; on the AVX2
// EPYC (Zen 3) the products of one row of x read 5-9 % more GB/s so (docs/quantization.md, "Int8
// rows in one load a block"). Each row's sums are float32 sums of the same products as the generic
// step's, in another order.
constexpr int64_t kShuffleBlock = 32;

// Where x's element i of a block sits in the kernel's order.
constexpr int64_t kBlockOrder(int64_t i)
{
    // i in 0..31: vector q = (i % 16) / 4, element (i % 4) + 4 * (i / 16) of it
    return 8 * ((i % 16) / 4) + (i % 4) + 4 * (i / 16);
}

// How far ahead of its loads the row is prefetched (on into the rows after it, stored next): of
// none, 1, 2, 4, 8 and 16 KiB, measured on the EPYC at rows of 768 and 2048 bytes, 1 and 2
// threads, 1 and 2 KiB read fastest, within 3 % of each other, and 4 KiB or more 1-13 % slower (the
// generic step's 4 KiB was chosen on the AVX-512 machine).
constexpr int64_t kShuffleAheadBytes = 2048;

// Blocks [i, i + count * kShuffleBlock) of one row into the four sums.
__attribute__((target("avx2,fma"), always_inline)) inline void shuffledBlocks(const int8_t *row, const float *xOrdered,
                                                                              int64_t i, int count, __m256 (&acc)[4])
{
    // Shuffle q's mask: the int32 lanes take bytes 4q..4q + 3 of their 128-bit lane into their top
    // byte.
    const __m256i m0 = _mm256_setr_epi8(-1, -1, -1, 0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3, -1, -1, -1, 0, -1,
                                        -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3);
    const __m256i step = _mm256_set1_epi32(4 << 24);
    const __m256i mask[4] = {m0, _mm256_add_epi32(m0, step), _mm256_add_epi32(m0, _mm256_add_epi32(step, step)),
                             _mm256_add_epi32(m0, _mm256_add_epi32(step, _mm256_add_epi32(step, step)))};
#pragma GCC unroll 2
    for (int b = 0; b < count; ++b, i += kShuffleBlock) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + i));
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q)
            acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(v, mask[q])),
                                     _mm256_loadu_ps(xOrdered + i + 8 * q), acc[q]);
    }
}

__attribute__((target("avx2,fma"))) void shuffledRowsAvx2(const float *xOrdered, const float *x, int64_t k,
                                                          const int8_t *w, const float *scale, int64_t begin,
                                                          int64_t end, float *out)
{
    const int64_t whole = k / kShuffleBlock * kShuffleBlock;
    for (int64_t j = begin; j < end; ++j) {
        const int8_t *row = w + j * k;
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        int64_t i = 0;
        for (; i + 2 * kShuffleBlock <= whole; i += 2 * kShuffleBlock) { // one prefetch a 64-byte line
            _mm_prefetch(reinterpret_cast<const char *>(row + i) + kShuffleAheadBytes, _MM_HINT_T0);
            shuffledBlocks(row, xOrdered, i, 2, acc);
        }
        if (i < whole) {
            _mm_prefetch(reinterpret_cast<const char *>(row + i) + kShuffleAheadBytes, _MM_HINT_T0);
            shuffledBlocks(row, xOrdered, i, 1, acc);
            i += kShuffleBlock;
        }
        float total =
            skeleton::Avx2Ops::sum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
        for (; i < k; ++i) // the rest one by one, as the generic step's
            total += x[i] * static_cast<float>(row[i]);
        out[j] = total * scale[j];
    }
}

} // namespace

void gemv(KernelIsa isa, const float *x, int64_t rows, int64_t k, const int8_t *w, const float *scale, int64_t n,
          float *out)
{
    // Pieces of 32 KiB of weights, half a float32 or bfloat16 product's.
    const int64_t minimumRows = skeleton::rowsHolding(int64_t(32) << 10, k, sizeof(int8_t));
    if (isa == KernelIsa::Avx2 && rows == 1 && k >= kShuffleBlock &&
        skeleton::oneStreamRows<skeleton::Avx2Ops>(k * int64_t(sizeof(int8_t)))) {
        // A float for every value of the longest row this takes.
        alignas(32) float ordered[skeleton::Avx2Ops::kOneStreamRowBytes / sizeof(int8_t)];
        for (int64_t b = 0; b + kShuffleBlock <= k; b += kShuffleBlock)
            for (int64_t i = 0; i < kShuffleBlock; ++i)
                ordered[b + kBlockOrder(i)] = x[b + i] * 0x1p-24f;
        parallelPieces(n, skeleton::kBlock, std::max(skeleton::kBlock, minimumRows),
                       [&](int64_t begin, int64_t end) { shuffledRowsAvx2(ordered, x, k, w, scale, begin, end, out); });
        return;
    }
    skeleton::product<Int8Rows>(isa, x, rows, k, w, n, out, MultiplyScale{scale}, &parallelPieces, minimumRows);
}

} // namespace accel::inference::int8
