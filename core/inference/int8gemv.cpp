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

} // namespace

void gemv(KernelIsa isa, const float *x, int64_t rows, int64_t k, const int8_t *w, const float *scale, int64_t n,
          float *out)
{
    // Pieces of 32 KiB of weights, half a float32 or bfloat16 product's.
    skeleton::product<Int8Rows>(isa, x, rows, k, w, n, out, MultiplyScale{scale}, &parallelPieces,
                                skeleton::rowsHolding(int64_t(32) << 10, k, sizeof(int8_t)));
}

} // namespace accel::inference::int8
