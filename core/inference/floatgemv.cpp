#include "core/inference/floatgemv.h"

#include "core/inference/gemvskeleton.h"
#include "core/inference/intraopteam.h"

namespace accel::inference::f32 {

namespace {

static_assert(kPassRows == skeleton::kPassRows);

// The load step of float32 weights: the values themselves.
struct Float32Rows {
    using Element = float;
    static float widen(float v) { return v; }
    __attribute__((target("avx512f"))) static __m512 load16(const float *p) { return _mm512_loadu_ps(p); }
    __attribute__((target("avx512f"))) static __m512 load16(const float *p, int64_t left)
    {
        return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << left) - 1), p);
    }
    __attribute__((target("avx2,fma"))) static __m256 load8(const float *p) { return _mm256_loadu_ps(p); }
};

struct AddBias {
    const float *bias;
    float operator()(float sum, int64_t j) const { return sum + (bias ? bias[j] : 0.0f); }
};

} // namespace

void gemv(KernelIsa isa, const float *x, int64_t rows, int64_t k, const float *w, const float *bias, int64_t n,
          float *out)
{
    skeleton::product<Float32Rows>(isa, x, rows, k, w, n, out, AddBias{bias}, piecesForRows(rows),
                                   skeleton::rowsHolding(skeleton::kPieceBytes, k, sizeof(float)));
}

} // namespace accel::inference::f32
