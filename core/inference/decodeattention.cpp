#include "core/inference/decodeattention.h"

#include "core/inference/bf16load.h"
#include "core/inference/gemvops.h"
#include "core/inference/gemvskeleton.h"
#include "core/inference/intraopteam.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace accel::inference {

namespace {

using bf16::value;

// q [dim] . k [dim]: Ops' vectors, the rest one by one (Ops void: all one by one).
template <class Ops, class E>
__attribute__((always_inline)) inline float dot(const float *q, const E *k, int64_t dim)
{
    float sum = 0.0f;
    int64_t i = 0;
    if constexpr (!std::is_void_v<Ops>) {
        auto acc = Ops::zero();
        for (; i + Ops::kWidth <= dim; i += Ops::kWidth)
            acc = Ops::fmadd(Ops::load(q + i), bf16::loadWidened<Ops>(k + i), acc);
        sum = Ops::sum(acc);
    }
    for (; i < dim; ++i)
        sum += q[i] * value(k[i]);
    return sum;
}

// acc [dim] += p v [dim].
template <class Ops, class E>
__attribute__((always_inline)) inline void addScaled(float *acc, float p, const E *v, int64_t dim)
{
    int64_t i = 0;
    if constexpr (!std::is_void_v<Ops>) {
        const auto scale = Ops::broadcast(p);
        for (; i + Ops::kWidth <= dim; i += Ops::kWidth)
            Ops::store(acc + i, Ops::fmadd(bf16::loadWidened<Ops>(v + i), scale, Ops::load(acc + i)));
    }
    for (; i < dim; ++i)
        acc[i] += p * value(v[i]);
}

// One query head over its key/value head's `keys` rows: acc [dim] = softmax(scores) . v, in float32.
template <class Ops, class E>
__attribute__((always_inline)) inline void head(const DecodeAttentionShape &s, const float *q, const E *k, const E *v,
                                                float *scores, float *acc)
{
    constexpr bool kBf16 = std::is_same_v<E, uint16_t>;
    float most = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < s.keys; ++j) {
        float score = dot<Ops>(q, k + j * s.kKey, s.dim);
        if constexpr (kBf16)
            score = value(bf16::narrow(score));
        score *= s.scale;
        if (s.softcap > 0)
            score = std::tanh(score / s.softcap) * s.softcap;
        scores[j] = score;
        most = std::max(most, score);
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < s.keys; ++j) {
        scores[j] = std::exp(scores[j] - most);
        sum += scores[j];
    }
    const float inverse = 1.0f / sum;
    std::fill(acc, acc + s.dim, 0.0f);
    for (int64_t j = 0; j < s.keys; ++j) {
        float p = scores[j] * inverse;
        if constexpr (kBf16)
            p = value(bf16::narrow(p));
        addScaled<Ops>(acc, p, v + j * s.vKey, s.dim);
    }
}

template <class E>
__attribute__((target("avx512f"), flatten)) void headAvx512(const DecodeAttentionShape &s, const float *q, const E *k,
                                                            const E *v, float *scores, float *acc)
{
    head<skeleton::Avx512Ops>(s, q, k, v, scores, acc);
}

template <class E>
__attribute__((target("avx2,fma"), flatten)) void headAvx2(const DecodeAttentionShape &s, const float *q, const E *k,
                                                           const E *v, float *scores, float *acc)
{
    head<skeleton::Avx2Ops>(s, q, k, v, scores, acc);
}

template <class E>
void attend(KernelIsa isa, const DecodeAttentionShape &s, const E *q, const E *k, const E *v, E *out)
{
    if (s.batch <= 0 || s.heads <= 0 || s.kvHeads <= 0 || s.keys <= 0 || s.dim <= 0)
        return;
    const int64_t groups = std::max<int64_t>(1, s.heads / s.kvHeads);
    // Heads per piece: enough keys and values that sharing the piece costs little against reading them.
    const int64_t headBytes = 2 * s.keys * s.dim * int64_t(sizeof(E));
    const int64_t leastHeads = std::max<int64_t>(1, skeleton::kPieceBytes / headBytes);
    parallelPieces(s.batch * s.heads, 1, leastHeads, [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> buffer; // this thread's scores, sums and (bfloat16) widened query
        buffer.resize(size_t(s.keys + 2 * s.dim));
        float *scores = buffer.data(), *acc = scores + s.keys, *wideQ = acc + s.dim;
        for (int64_t p = begin; p < end; ++p) {
            const int64_t b = p / s.heads, h = p % s.heads, g = h / groups;
            const E *qRow = q + b * s.qBatch + h * s.qHead;
            const float *query = wideQ;
            if constexpr (std::is_same_v<E, float>)
                query = qRow;
            else
                for (int64_t i = 0; i < s.dim; ++i)
                    wideQ[i] = value(qRow[i]);
            const E *kHead = k + b * s.kBatch + g * s.kHead;
            const E *vHead = v + b * s.vBatch + g * s.vHead;
            switch (isa) {
            case KernelIsa::Avx512:
                headAvx512(s, query, kHead, vHead, scores, acc);
                break;
            case KernelIsa::Avx2:
                headAvx2(s, query, kHead, vHead, scores, acc);
                break;
            case KernelIsa::Portable:
                head<void>(s, query, kHead, vHead, scores, acc);
                break;
            }
            E *o = out + p * s.dim;
            for (int64_t i = 0; i < s.dim; ++i) {
                if constexpr (std::is_same_v<E, float>)
                    o[i] = acc[i];
                else
                    o[i] = bf16::narrow(acc[i]);
            }
        }
    });
}

} // namespace

void decodeAttention(KernelIsa isa, const DecodeAttentionShape &shape, const float *q, const float *k, const float *v,
                     float *out)
{
    attend(isa, shape, q, k, v, out);
}

void decodeAttention(KernelIsa isa, const DecodeAttentionShape &shape, const uint16_t *q, const uint16_t *k,
                     const uint16_t *v, uint16_t *out)
{
    attend(isa, shape, q, k, v, out);
}

} // namespace accel::inference
