// The vector load step of bfloat16 weights (the Format of gemvskeleton.h): each 16-bit value
// zero-extended to 32 bits and shifted into the high half, which is the float32 of the same value
// (exact); and loads of float32 or bfloat16 elements alike. For the kernel sources that read
// bfloat16 (bf16gemv.cpp, gemvcolumns.cpp, decodeattention.cpp); includes no libtorch header.
#pragma once

#include "core/inference/bf16gemv.h"
#include "core/inference/gemvops.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace accel::inference::bf16 {

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

// One element as float32: float32 as stored, bfloat16 widened (exact).
inline float value(float v)
{
    return v;
}
inline float value(uint16_t bits)
{
    return widen(bits);
}

// Ops::kWidth elements from p as float32 vectors (gemvops.h's Ops), float32 as stored or bfloat16
// widened.
template <class Ops, class E>
__attribute__((always_inline)) inline typename Ops::V loadWidened(const E *p)
{
    if constexpr (std::is_same_v<E, float>)
        return Ops::load(p);
    else
        return Ops::template weights<Bf16Rows>(p);
}

} // namespace accel::inference::bf16
