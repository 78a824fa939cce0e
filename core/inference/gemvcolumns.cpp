#include "core/inference/gemvcolumns.h"

#include "core/inference/bf16load.h"
#include "core/inference/gemvops.h"
#include "core/inference/intraopteam.h"

#include <algorithm>
#include <vector>

namespace accel::inference {

namespace {

constexpr int kSweepRows = 4;      // weight rows one sweep over the partial sums adds
constexpr int64_t kMostChunks = 8; // row chunks, so partial sums to add up at the end

using bf16::value;
using Wide = skeleton::Avx512Ops;
using Narrow = skeleton::Avx2Ops;

// partial[j] = sum over rows i of [i0, i1) of x[i] W[i, j]: kSweepRows whole rows at a time, each
// read front to back (contiguous streams the hardware prefetchers follow: a block of columns down
// the rows, a short stretch of every row, read at 0.6 of this rate), into the partial sums, which
// stay in the L1 cache. W float32, or bfloat16 widened in registers.
template <class Ops, class E>
__attribute__((always_inline)) inline void sweep(const float *x, int64_t i0, int64_t i1, const E *w, int64_t n,
                                                 float *partial)
{
    using V = typename Ops::V;
    constexpr int W = Ops::kWidth;
    const int64_t whole = n / W * W;
    std::fill(partial, partial + n, 0.0f);
    int64_t i = i0;
    for (; i + kSweepRows <= i1; i += kSweepRows) {
        V xv[kSweepRows];
#pragma GCC unroll 16
        for (int r = 0; r < kSweepRows; ++r)
            xv[r] = Ops::broadcast(x[i + r]);
        const E *row = w + i * n;
        for (int64_t j = 0; j < whole; j += W) {
            V acc = Ops::load(partial + j);
#pragma GCC unroll 16
            for (int r = 0; r < kSweepRows; ++r)
                acc = Ops::fmadd(bf16::loadWidened<Ops>(row + r * n + j), xv[r], acc);
            Ops::store(partial + j, acc);
        }
        for (int64_t j = whole; j < n; ++j)
            for (int r = 0; r < kSweepRows; ++r)
                partial[j] += x[i + r] * value(row[r * n + j]);
    }
    for (; i < i1; ++i)
        for (int64_t j = 0; j < n; ++j)
            partial[j] += x[i] * value(w[i * n + j]);
}

template <class E>
void portable(const float *x, int64_t i0, int64_t i1, const E *w, int64_t n, float *partial)
{
    std::fill(partial, partial + n, 0.0f);
    for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < n; ++j)
            partial[j] += x[i] * value(w[i * n + j]);
}

// out[j] = bias[j] + partial[0][j] + partial[1][j] + ..., in that order at every ISA.
void addUpFrom(int64_t j, const float *partial, int64_t chunks, const float *bias, int64_t n, float *out)
{
    for (; j < n; ++j) {
        float sum = bias ? bias[j] : 0.0f;
        for (int64_t c = 0; c < chunks; ++c)
            sum += partial[c * n + j];
        out[j] = sum;
    }
}

template <class Ops>
__attribute__((always_inline)) inline void addUp(const float *partial, int64_t chunks, const float *bias, int64_t n,
                                                 float *out)
{
    constexpr int W = Ops::kWidth;
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        auto sum = bias ? Ops::load(bias + j) : Ops::zero();
        for (int64_t c = 0; c < chunks; ++c)
            sum = Ops::add(sum, Ops::load(partial + c * n + j));
        Ops::store(out + j, sum);
    }
    addUpFrom(j, partial, chunks, bias, n, out);
}

template <class E>
__attribute__((target("avx512f"), flatten)) void avx512(const float *x, int64_t i0, int64_t i1, const E *w, int64_t n,
                                                        float *partial)
{
    sweep<Wide>(x, i0, i1, w, n, partial);
}

__attribute__((target("avx512f"), flatten)) void addUpAvx512(const float *partial, int64_t chunks, const float *bias,
                                                             int64_t n, float *out)
{
    addUp<Wide>(partial, chunks, bias, n, out);
}

template <class E>
__attribute__((target("avx2,fma"), flatten)) void avx2(const float *x, int64_t i0, int64_t i1, const E *w, int64_t n,
                                                       float *partial)
{
    sweep<Narrow>(x, i0, i1, w, n, partial);
}

__attribute__((target("avx2,fma"), flatten)) void addUpAvx2(const float *partial, int64_t chunks, const float *bias,
                                                            int64_t n, float *out)
{
    addUp<Narrow>(partial, chunks, bias, n, out);
}

// out [n] = x [k] W (+ bias) in float32, W float32 or bfloat16 [k, n].
template <class E>
void columns(KernelIsa isa, const float *x, int64_t k, const E *w, const float *bias, int64_t n, float *out)
{
    if (n <= 0)
        return;
    // Chunks of whole sweeps, at least 64 KiB of weights each (sharing a chunk costs little
    // against it), at most kMostChunks: the chunks, and so the order of the sums, do not depend on
    // the number of threads that take them.
    const int64_t sweeps = std::max<int64_t>(1, (k + kSweepRows - 1) / kSweepRows);
    const int64_t leastSweeps = std::max<int64_t>(1, (int64_t(64) << 10) / (n * kSweepRows * int64_t(sizeof(E))));
    const int64_t chunkSweeps = std::max(leastSweeps, (sweeps + kMostChunks - 1) / kMostChunks);
    const int64_t chunkRows = chunkSweeps * kSweepRows;
    const int64_t chunks = std::max<int64_t>(1, (k + chunkRows - 1) / chunkRows);
    thread_local std::vector<float> partials; // the calling thread's; helpers write into it
    partials.resize(size_t(chunks * n));
    float *partial = partials.data();
    sharedPieces(chunks, 1, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
            const int64_t i0 = c * chunkRows, i1 = std::min(k, i0 + chunkRows);
            float *into = partial + c * n;
            switch (isa) {
            case KernelIsa::Avx512:
                avx512(x, i0, i1, w, n, into);
                break;
            case KernelIsa::Avx2:
                avx2(x, i0, i1, w, n, into);
                break;
            case KernelIsa::Portable:
                portable(x, i0, i1, w, n, into);
                break;
            }
        }
    });
    switch (isa) {
    case KernelIsa::Avx512:
        return addUpAvx512(partial, chunks, bias, n, out);
    case KernelIsa::Avx2:
        return addUpAvx2(partial, chunks, bias, n, out);
    case KernelIsa::Portable:
        break;
    }
    addUpFrom(0, partial, chunks, bias, n, out);
}

// A thread's float32 scratch (the widened x, bias and the sums before their rounding).
std::vector<float> &scratch(int which, size_t count)
{
    thread_local std::vector<float> buffers[3];
    buffers[which].resize(count);
    return buffers[which];
}

} // namespace

void f32::gemvColumns(KernelIsa isa, const float *x, int64_t k, const float *w, const float *bias, int64_t n,
                      float *out)
{
    columns(isa, x, k, w, bias, n, out);
}

void bf16::gemvColumns(KernelIsa isa, const uint16_t *x, int64_t k, const uint16_t *w, const uint16_t *bias, int64_t n,
                       uint16_t *out)
{
    if (n <= 0)
        return;
    std::vector<float> &wideX = scratch(0, size_t(k));
    for (int64_t i = 0; i < k; ++i)
        wideX[size_t(i)] = widen(x[i]);
    const float *wideBias = nullptr;
    if (bias) {
        std::vector<float> &b = scratch(1, size_t(n));
        for (int64_t j = 0; j < n; ++j)
            b[size_t(j)] = widen(bias[j]);
        wideBias = b.data();
    }
    std::vector<float> &sum = scratch(2, size_t(n));
    columns(isa, wideX.data(), k, w, wideBias, n, sum.data());
    for (int64_t j = 0; j < n; ++j)
        out[j] = narrow(sum[size_t(j)]);
}

} // namespace accel::inference
