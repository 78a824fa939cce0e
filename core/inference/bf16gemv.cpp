#include "core/inference/bf16gemv.h"

#include "core/inference/gemvskeleton.h"
#include "core/inference/intraopteam.h"

#include <vector>

namespace accel::inference::bf16 {

namespace {

// The load step of bfloat16 weights: each 16-bit value zero-extended to 32 bits and shifted into the
// high half, which is the float32 of the same value (exact).
struct Bf16Rows {
    using Element = uint16_t;
    static float widen(uint16_t v) { return bf16::widen(v); }
    __attribute__((target("avx512f"))) static __m512 load16(const uint16_t *p)
    {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
    }
    __attribute__((target("avx512f"))) static __m512 load16(const uint16_t *p, int64_t left)
    {
        alignas(32) uint16_t bits[16] = {};
        std::memcpy(bits, p, size_t(left) * sizeof(uint16_t));
        return load16(bits);
    }
    __attribute__((target("avx2,fma"))) static __m256 load8(const uint16_t *p)
    {
        const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    }
};

struct AddBias {
    const uint16_t *bias;
    float operator()(float sum, int64_t j) const { return sum + (bias ? bf16::widen(bias[j]) : 0.0f); }
};

// The float32 sums before their one rounding, per calling thread (a decode step's few thousand).
std::vector<float> &sums(size_t count)
{
    thread_local std::vector<float> buffer;
    buffer.resize(count);
    return buffer;
}

} // namespace

void gemv(KernelIsa isa, const float *x, int64_t rows, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
          uint16_t *out)
{
    std::vector<float> &sum = sums(size_t(rows * n));
    // Output rows per piece: enough weight bytes (64 KiB) that starting the team costs little against them.
    skeleton::product<Bf16Rows>(isa, x, rows, k, w, n, sum.data(), AddBias{bias}, &sharedPieces,
                                (int64_t(32) << 10) / std::max<int64_t>(k, 1));
    for (int64_t i = 0; i < rows * n; ++i)
        out[i] = narrow(sum[i]);
}

void gemv(KernelIsa isa, const uint16_t *x, int64_t rows, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
          uint16_t *out)
{
    thread_local std::vector<float> wide;
    wide.resize(size_t(rows * k));
    for (int64_t i = 0; i < rows * k; ++i)
        wide[size_t(i)] = widen(x[i]);
    gemv(isa, wide.data(), rows, k, w, bias, n, out);
}

} // namespace accel::inference::bf16
