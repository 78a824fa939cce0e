#include "core/inference/quantkernels.h"

#include "core/inference/intraopteam.h"

// GCC 12's AVX-512 headers start vectors from _mm512_undefined_*, which -Wmaybe-uninitialized
// reports inside the headers (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace accel::inference::qk {

namespace {

constexpr int64_t kMaxRows = 4; // x rows a kernel call keeps in registers

// The 16 table values of block b.
inline void blockTable(const FourBitWeight &w, int64_t b, float *table)
{
    if (w.code) {
        const float a = w.absmax[b];
        for (int q = 0; q < 16; ++q)
            table[q] = w.code[q] * a;
    } else {
        const float s = w.scales[b], z = w.zeros[b];
        for (int q = 0; q < 16; ++q)
            table[q] = s * (static_cast<float>(q) - z);
    }
}

inline int nibble(const uint8_t *packed, int64_t element)
{
    const uint8_t byte = packed[element / 2];
    return element % 2 == 0 ? byte >> 4 : byte & 0x0F;
}

// --- portable ---------------------------------------------------------------------------------

void fourBitPortable(const float *x, int64_t rows, const FourBitWeight &w, int64_t begin, int64_t end, float *out)
{
    float table[16];
    int64_t tableBlock = -1;
    for (int64_t j = begin; j < end; ++j) {
        float acc[kMaxRows] = {0, 0, 0, 0};
        for (int64_t i = 0; i < w.k; ++i) {
            const int64_t element = j * w.k + i;
            if (element / w.blocksize != tableBlock) {
                tableBlock = element / w.blocksize;
                blockTable(w, tableBlock, table);
            }
            const float v = table[nibble(w.packed, element)];
            for (int64_t r = 0; r < rows; ++r)
                acc[r] += x[r * w.k + i] * v;
        }
        for (int64_t r = 0; r < rows; ++r)
            out[r * w.n + j] = acc[r];
    }
}

// --- AVX-512 ----------------------------------------------------------------------------------

__attribute__((target("avx512f"))) inline float sum16(__m512 v)
{
    return _mm512_reduce_add_ps(v);
}

// 16 indices from 8 bytes: element 2t from byte t's high nibble, 2t + 1 from its low nibble.
__attribute__((target("avx512f"))) inline __m512i indices16(const uint8_t *bytes)
{
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(bytes));
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
    const __m128i lo = _mm_and_si128(v, mask);
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(hi, lo));
}

// Rows whose blocks start at the row's start: k a multiple of blocksize, blocksize of 16.
template <int R>
__attribute__((target("avx512f"))) void fourBitAvx512(const float *x, const FourBitWeight &w, int64_t begin,
                                                      int64_t end, float *out)
{
    const int64_t k = w.k, bs = w.blocksize, blocksPerRow = k / bs;
    const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 code = w.code ? _mm512_loadu_ps(w.code) : _mm512_setzero_ps();
    for (int64_t j = begin; j < end; ++j) {
        const uint8_t *row = w.packed + j * k / 2;
        __m512 acc[R];
        for (int r = 0; r < R; ++r)
            acc[r] = _mm512_setzero_ps();
        for (int64_t b = 0; b < blocksPerRow; ++b) {
            const int64_t block = j * blocksPerRow + b;
            const __m512 table = w.code ? _mm512_mul_ps(code, _mm512_set1_ps(w.absmax[block]))
                                        : _mm512_mul_ps(_mm512_set1_ps(w.scales[block]),
                                                        _mm512_sub_ps(iota, _mm512_set1_ps(w.zeros[block])));
            const uint8_t *bytes = row + b * bs / 2;
            const int64_t base = b * bs;
            for (int64_t t = 0; t < bs; t += 16) {
                const __m512 v = _mm512_permutexvar_ps(indices16(bytes + t / 2), table);
                for (int r = 0; r < R; ++r)
                    acc[r] = _mm512_fmadd_ps(v, _mm512_loadu_ps(x + r * k + base + t), acc[r]);
            }
        }
        for (int r = 0; r < R; ++r)
            out[r * w.n + j] = sum16(acc[r]);
    }
}

bool avx512Supported()
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

// Output rows per task: enough bytes per task that scheduling costs nothing.
int64_t grain(int64_t bytesPerRow)
{
    return std::max<int64_t>(1, (64 << 10) / std::max<int64_t>(bytesPerRow, 1));
}

} // namespace

bool hasAvx512()
{
    static const bool supported = avx512Supported();
    return supported;
}

void fourBit(const float *x, int64_t rows, const FourBitWeight &w, float *out)
{
    const bool fast = hasAvx512() && w.blocksize % 16 == 0 && w.k % w.blocksize == 0;
    for (int64_t r0 = 0; r0 < rows; r0 += kMaxRows) {
        const int64_t count = std::min(kMaxRows, rows - r0);
        const float *xs = x + r0 * w.k;
        float *os = out + r0 * w.n;
        parallelPieces(w.n, 1, grain(w.k / 2), [&](int64_t begin, int64_t end) {
            if (!fast)
                return fourBitPortable(xs, count, w, begin, end, os);
            switch (count) {
            case 1:
                return fourBitAvx512<1>(xs, w, begin, end, os);
            case 2:
                return fourBitAvx512<2>(xs, w, begin, end, os);
            case 3:
                return fourBitAvx512<3>(xs, w, begin, end, os);
            default:
                return fourBitAvx512<4>(xs, w, begin, end, os);
            }
        });
    }
}

void dequantizeFourBitRows(const FourBitWeight &w, int64_t begin, int64_t end, float *out)
{
    parallelPieces(end - begin, 1, grain(w.k * 4), [&](int64_t from, int64_t to) {
        const int64_t b = begin + from, e = begin + to;
        float table[16];
        int64_t tableBlock = -1;
        for (int64_t j = b; j < e; ++j)
            for (int64_t i = 0; i < w.k; ++i) {
                const int64_t element = j * w.k + i;
                if (element / w.blocksize != tableBlock) {
                    tableBlock = element / w.blocksize;
                    blockTable(w, tableBlock, table);
                }
                out[(j - begin) * w.k + i] = table[nibble(w.packed, element)];
            }
    });
}

void dequantizeInt8Rows(const int8_t *w, const float *scale, int64_t k, int64_t begin, int64_t end, float *out)
{
    parallelPieces(end - begin, 1, grain(k * 4), [&](int64_t from, int64_t to) {
        const int64_t b = begin + from, e = begin + to;
        for (int64_t j = b; j < e; ++j)
            for (int64_t i = 0; i < k; ++i)
                out[(j - begin) * k + i] = static_cast<float>(w[j * k + i]) * scale[j];
    });
}

} // namespace accel::inference::qk
