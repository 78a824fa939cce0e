// The vector operations the decode kernels (gemvsteps.h, gemvcolumns.cpp, decodeattention.cpp) are
// written over, one struct per instruction set, each function compiled for it with a function-level
// target attribute. Only for the kernel sources.
#pragma once

// GCC 12's AVX-512 headers start vectors from _mm512_undefined_*, which -Wmaybe-uninitialized and
// -Wuninitialized report inside the headers (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// The kernels' helpers pass vectors to and from these functions in functions compiled without the
// vector ISA, which -Wpsabi reports as an ABI change; the target functions that call them inline all
// of it (flatten), so no such call is ever made.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include <cstdint>

namespace accel::inference::skeleton {

// 16 floats a vector; the last piece of a row masked (no read past it).
struct Avx512Ops {
    using V = __m512;
    static constexpr int kWidth = 16;
    static constexpr bool kMaskedTail = true;
    // Whether a one-output-row step over float32 weights prefetches ahead of its loads (gemvsteps.h,
    // prefetchAhead): as measured on the AVX-512 machine where the distance was chosen.
    static constexpr bool kPrefetchFloat32Rows = true;
    // Weight rows shorter than this many bytes are read one at a time when x has one row (decode;
    // gemvsteps.h, rows), as measured on the AVX-512 machine (docs/quantization.md, "One weight row
    // at a time").
    static constexpr int64_t kOneStreamRowBytes = 8192;
    // Weight rows one step reads side by side when x has 3 or more rows (a prompt; gemvsteps.h,
    // rows): 4 x 4 sums, 4 weights and x's vector fit AVX-512's 32 registers.
    static constexpr int kPromptBlock = 4;
    __attribute__((target("avx512f"))) static V zero() { return _mm512_setzero_ps(); }
    __attribute__((target("avx512f"))) static V load(const float *p) { return _mm512_loadu_ps(p); }
    __attribute__((target("avx512f"))) static V load(const float *p, int64_t left)
    {
        return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << left) - 1), p);
    }
    template <class F>
    __attribute__((target("avx512f"))) static V weights(const typename F::Element *p)
    {
        return F::load16(p);
    }
    template <class F>
    __attribute__((target("avx512f"))) static V weights(const typename F::Element *p, int64_t left)
    {
        return F::load16(p, left);
    }
    __attribute__((target("avx512f"))) static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    __attribute__((target("avx512f"))) static V add(V a, V b) { return _mm512_add_ps(a, b); }
    __attribute__((target("avx512f"))) static float sum(V v) { return _mm512_reduce_add_ps(v); }
    __attribute__((target("avx512f"))) static V broadcast(float v) { return _mm512_set1_ps(v); }
    __attribute__((target("avx512f"))) static void store(float *p, V v) { _mm512_storeu_ps(p, v); }
};

// 8 floats a vector; the rest of a row one by one into the sum.
struct Avx2Ops {
    using V = __m256;
    static constexpr int kWidth = 8;
    static constexpr bool kMaskedTail = false;
    // Not on the AVX2-only EPYC (Zen 3) it was measured on: there float32 rows taken one at a time
    // read at 0.84-0.96 of a plain read without software prefetch, at 0.65-0.90 with it at every
    // distance from 512 B to 8 KiB (docs/quantization.md, "Float32 rows without software
    // prefetch on AVX2"). Narrower weights (int8, bfloat16) prefetch at every instruction set.
    static constexpr bool kPrefetchFloat32Rows = false;
    // Half the AVX-512 machine's: on the EPYC, bfloat16 rows of 4 KiB (the 1.1B Llama's k = 2048)
    // read 1.2-1.4x faster four side by side than one at a time, and int8 rows of 5.5 KiB alike either
    // way (docs/quantization.md, "Bfloat16 rows of 4 KiB side by side on AVX2").
    static constexpr int64_t kOneStreamRowBytes = 4096;
    // 3, not 4: with 4 rows of x, 4 x 3 sums, 3 weights and x's vector are AVX2's 16 registers, where
    // 4 x 4 sums spilled two of them to the stack and took the weights as memory operands, 22 loads
    // for 16 FMAs (docs/quantization.md, "Prompt rows three weight rows at a time on AVX2").
    static constexpr int kPromptBlock = 3;
    __attribute__((target("avx2,fma"))) static V zero() { return _mm256_setzero_ps(); }
    __attribute__((target("avx2,fma"))) static V load(const float *p) { return _mm256_loadu_ps(p); }
    template <class F>
    __attribute__((target("avx2,fma"))) static V weights(const typename F::Element *p)
    {
        return F::load8(p);
    }
    __attribute__((target("avx2,fma"))) static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    __attribute__((target("avx2,fma"))) static V add(V a, V b) { return _mm256_add_ps(a, b); }
    __attribute__((target("avx2,fma"))) static float sum(V v)
    {
        const __m128 quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        const __m128 pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        return _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)));
    }
    __attribute__((target("avx2,fma"))) static V broadcast(float v) { return _mm256_set1_ps(v); }
    __attribute__((target("avx2,fma"))) static void store(float *p, V v) { _mm256_storeu_ps(p, v); }
};

} // namespace accel::inference::skeleton
