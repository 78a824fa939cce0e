#include "core/inference/bf16gemv.h"

#include "core/inference/bf16load.h"
#include "core/inference/bf16pairs.h"
#include "core/inference/gemvskeleton.h"
#include "core/inference/intraopteam.h"

#include <vector>

namespace accel::inference::bf16 {

namespace {

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
    skeleton::product<Bf16Rows>(isa, x, rows, k, w, n, sum.data(), AddBias{bias}, piecesForRows(rows),
                                skeleton::rowsHolding(skeleton::kPieceBytes, k, sizeof(uint16_t)));
    for (int64_t i = 0; i < rows * n; ++i)
        out[i] = narrow(sum[i]);
}

void gemv(KernelIsa isa, const uint16_t *x, int64_t rows, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
          uint16_t *out)
{
    // AVX512_BF16's dot pairs multiply the stored bfloat16 values as they are (bf16pairs.h): taken at
    // Avx512 where the CPU's flags have avx512_bf16, because the widening costs instructions the
    // float32 load does not. Measured (bench_inference bf16Products, Llama 1.1B's MLP shapes, 1 and 2
    // threads, shared machine): 1.06-1.34x the widening kernel's GB/s; whole decode where both wait
    // for memory ran alike (docs/quantization.md, "Bfloat16 products in pairs"). Everywhere else x
    // is widened once and the kernel below runs.
    if (isa == KernelIsa::Avx512 && pairsRunHere())
        return gemvPairs(x, rows, k, w, bias, n, out);
    thread_local std::vector<float> wide;
    wide.resize(size_t(rows * k));
    for (int64_t i = 0; i < rows * k; ++i)
        wide[size_t(i)] = widen(x[i]);
    gemv(isa, wide.data(), rows, k, w, bias, n, out);
}

} // namespace accel::inference::bf16
