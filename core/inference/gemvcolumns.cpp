#include "core/inference/gemvcolumns.h"

#include "core/inference/bf16load.h"
#include "core/inference/bf16pairs.h"
#include "core/inference/gemvops.h"
#include "core/inference/gemvskeleton.h"
#include "core/inference/intraopteam.h"

#include <algorithm>
#include <type_traits>
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

// The column of natural order that place p of a 32-column block holds after sweepPairs: vpunpcklwd
// and vpunpckhwd of two rows interleave within each 128-bit lane, so the low vector's 16 pairs are
// columns 0-3, 8-11, 16-19, 24-27 and the high vector's the others.
constexpr int64_t pairColumn(int64_t p)
{
    const int64_t e = p % 16;
    return 8 * (e / 4) + (p < 16 ? 0 : 4) + e % 4;
}
constexpr int64_t kPairBlock = 32; // columns of one step: 32 bfloat16 weights of a row, one vector

// sweep's partial sums with bfloat16 W and x through AVX512_BF16's dot pairs (bf16pairs.h): rows i
// and i + 1 interleaved into (W[i, j], W[i + 1, j]) pairs, times the pair (x[i], x[i + 1]), four
// rows a step, so no weight is widened first; each product exact in float32, each pair added into
// the partial sum with one rounding (inputs and sums below float32's normal range as zero). The
// whole 32-column blocks' sums are put back in column order (pairColumn) before the rows past the
// last four and the columns past the last block are added one by one.
__attribute__((ACCEL_PAIRS_TARGET, flatten)) void sweepPairs(const uint16_t *xBits, const float *x, int64_t i0,
                                                             int64_t i1, const uint16_t *w, int64_t n, float *partial)
{
    const int64_t whole = n / kPairBlock * kPairBlock;
    std::fill(partial, partial + n, 0.0f);
    int64_t i = i0;
    for (; i + kSweepRows <= i1; i += kSweepRows) {
        static_assert(kSweepRows == 4);
        const __m512i x01 = _mm512_set1_epi32(int(uint32_t(xBits[i]) | uint32_t(xBits[i + 1]) << 16));
        const __m512i x23 = _mm512_set1_epi32(int(uint32_t(xBits[i + 2]) | uint32_t(xBits[i + 3]) << 16));
        const uint16_t *row = w + i * n;
        for (int64_t j = 0; j < whole; j += kPairBlock) {
#pragma GCC unroll 4
            for (int r = kSweepRows; r < 2 * kSweepRows; ++r) // the same columns of the next step's rows
                _mm_prefetch(reinterpret_cast<const char *>(row + r * n + j), _MM_HINT_T0);
            const __m512i r0 = _mm512_loadu_si512(row + j), r1 = _mm512_loadu_si512(row + n + j);
            const __m512i r2 = _mm512_loadu_si512(row + 2 * n + j), r3 = _mm512_loadu_si512(row + 3 * n + j);
            __m512 low = _mm512_loadu_ps(partial + j), high = _mm512_loadu_ps(partial + j + 16);
            low = _mm512_dpbf16_ps(low, (__m512bh)_mm512_unpacklo_epi16(r0, r1), (__m512bh)x01);
            low = _mm512_dpbf16_ps(low, (__m512bh)_mm512_unpacklo_epi16(r2, r3), (__m512bh)x23);
            high = _mm512_dpbf16_ps(high, (__m512bh)_mm512_unpackhi_epi16(r0, r1), (__m512bh)x01);
            high = _mm512_dpbf16_ps(high, (__m512bh)_mm512_unpackhi_epi16(r2, r3), (__m512bh)x23);
            _mm512_storeu_ps(partial + j, low);
            _mm512_storeu_ps(partial + j + 16, high);
        }
        for (int64_t j = whole; j < n; ++j)
            for (int r = 0; r < kSweepRows; ++r)
                partial[j] += x[i + r] * value(row[r * n + j]);
    }
    float block[kPairBlock];
    for (int64_t j = 0; j < whole; j += kPairBlock) {
        for (int64_t p = 0; p < kPairBlock; ++p)
            block[pairColumn(p)] = partial[j + p];
        std::copy(block, block + kPairBlock, partial + j);
    }
    for (; i < i1; ++i)
        for (int64_t j = 0; j < n; ++j)
            partial[j] += x[i] * value(w[i * n + j]);
}

// The chunks W's rows [0, k) are cut in (rows of n elements of elementBytes each), for columns()
// (whole sweeps: multiple = kSweepRows) and gemmColumns (multiple = 1): whole multiples, at least
// skeleton::kPieceBytes of weights each (sharing a chunk costs little against it), at most
// kMostChunks. The chunks, and so the order of the sums, do not depend on the number of threads that
// take them.
struct RowChunks {
    int64_t rows, count;
};
RowChunks rowChunks(int64_t k, int64_t n, int64_t elementBytes, int64_t multiple)
{
    const int64_t units = std::max<int64_t>(1, (k + multiple - 1) / multiple);
    const int64_t leastUnits =
        std::max<int64_t>(1, skeleton::rowsHolding(skeleton::kPieceBytes, n * multiple, elementBytes));
    const int64_t rows = std::max(leastUnits, (units + kMostChunks - 1) / kMostChunks) * multiple;
    return {rows, std::max<int64_t>(1, (k + rows - 1) / rows)};
}

// out [n] = x [k] W (+ bias) in float32, W float32 or bfloat16 [k, n]; with xBits (x's bfloat16
// bits, bfloat16 W) at Avx512 where pairsRunHere(), the dot-pair sweep.
template <class E>
void columns(KernelIsa isa, const float *x, int64_t k, const E *w, const float *bias, int64_t n, float *out,
             const uint16_t *xBits = nullptr)
{
    if (n <= 0)
        return;
    const RowChunks split = rowChunks(k, n, sizeof(E), kSweepRows);
    const int64_t chunkRows = split.rows, chunks = split.count;
    thread_local std::vector<float> partials; // the calling thread's; helpers write into it
    partials.resize(size_t(chunks * n));
    const bool usePairs = xBits && isa == KernelIsa::Avx512 && bf16::pairsRunHere();
    float *partial = partials.data();
    sharedPieces(chunks, 1, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
            const int64_t i0 = c * chunkRows, i1 = std::min(k, i0 + chunkRows);
            float *into = partial + c * n;
            if constexpr (std::is_same_v<E, uint16_t>) {
                if (usePairs) {
                    sweepPairs(xBits, x, i0, i1, w, n, into);
                    continue;
                }
            }
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

// gemmColumns' tiles: kTileRows rows of x by kTileVectors vectors of columns, 12 of AVX2's 16
// registers of sums, 3 for the weights' row and one for x's value.
constexpr int kTileVectors = 3;

// out[r * ldo + ...] for R rows of x (row stride ldx, each from the block's first column) and C
// vectors of columns, over `count` rows of the weight (row stride ldw, from the tile's first column):
// started from zero when `first`, else from out, where the block before left the sums (a float32
// store and load, so the sums are those of one pass).
template <class Ops, int R, int C>
__attribute__((always_inline)) inline void tile(const float *x, int64_t ldx, int64_t count, bool first, const float *w,
                                                int64_t ldw, float *out, int64_t ldo)
{
    using V = typename Ops::V;
    constexpr int W = Ops::kWidth;
    V acc[R][C];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            acc[r][c] = first ? Ops::zero() : Ops::load(out + r * ldo + c * W);
    for (int64_t i = 0; i < count; ++i, w += ldw) {
        V wv[C];
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            wv[c] = Ops::load(w + c * W);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const V xv = Ops::broadcast(x[r * ldx + i]);
#pragma GCC unroll 16
            for (int c = 0; c < C; ++c)
                acc[r][c] = Ops::fmadd(wv[c], xv, acc[r][c]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
            Ops::store(out + r * ldo + c * W, acc[r][c]);
}

// The same for `columns` columns one value at a time: the columns past the last whole vector, and
// the portable loop.
inline void scalarTile(const float *x, int64_t rows, int64_t ldx, int64_t count, bool first, const float *w,
                       int64_t ldw, int64_t columns, float *out, int64_t ldo)
{
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < columns; ++j) {
            float acc = first ? 0.0f : out[r * ldo + j];
            for (int64_t i = 0; i < count; ++i)
                acc += x[r * ldx + i] * w[i * ldw + j];
            out[r * ldo + j] = acc;
        }
}

// One block of gemmColumns' weight rows, [i0, i0 + count), into the chunk's sums (row r of x at
// out + r * ldo): whole tiles from `packed` (the block's columns in strips of kTileVectors vectors,
// each strip's rows one after the other), then the columns past the last strip from W as stored,
// a vector and then a value at a time.
template <class Ops, int R>
__attribute__((always_inline)) inline void block(const float *x, int64_t k, int64_t i0, int64_t count, bool first,
                                                 const float *w, int64_t n, const float *packed, float *out,
                                                 int64_t ldo)
{
    constexpr int W = Ops::kWidth, S = kTileVectors * W;
    const float *xs = x + i0;
    int64_t j = 0;
    for (; j + S <= n; j += S)
        tile<Ops, R, kTileVectors>(xs, k, count, first, packed + j * count, S, out + j, ldo);
    const float *rows = w + i0 * n;
    for (; j + W <= n; j += W)
        tile<Ops, R, 1>(xs, k, count, first, rows + j, n, out + j, ldo);
    scalarTile(xs, R, k, count, first, rows + j, n, n - j, out + j, ldo);
}

// Rows [i0, i1) of W, a contiguous stretch of memory, times the same columns of x into `out` (row r
// of x at out + r * ldo): blocks of about kColumnChunkBytes of whole rows, each read front to back
// once (one stream the hardware prefetchers follow) into the strips of `packed`, from which every
// tile of rows of x then reads it from the cache. Reading the weight strip by strip instead, a
// short stretch of every row, read it at half the rate on the AVX2 EPYC.
template <class Ops>
__attribute__((always_inline)) inline void chunk(const float *x, int64_t rows, int64_t k, int64_t i0, int64_t i1,
                                                 const float *w, int64_t n, float *packed, int64_t blockRows,
                                                 float *out, int64_t ldo)
{
    static_assert(f32::kTileRows == 4);
    constexpr int W = Ops::kWidth, S = kTileVectors * W;
    const int64_t strips = n / S;
    for (int64_t b0 = i0; b0 < i1; b0 += blockRows) {
        const int64_t count = std::min(i1, b0 + blockRows) - b0;
        for (int64_t i = 0; i < count; ++i) {
            const float *from = w + (b0 + i) * n;
            for (int64_t s = 0; s < strips; ++s)
#pragma GCC unroll 16
                for (int c = 0; c < kTileVectors; ++c)
                    Ops::store(packed + s * S * count + i * S + c * W, Ops::load(from + s * S + c * W));
        }
        const bool first = b0 == i0;
        for (int64_t r0 = 0; r0 < rows; r0 += f32::kTileRows) {
            const float *xs = x + r0 * k;
            float *os = out + r0 * ldo;
            switch (std::min<int64_t>(f32::kTileRows, rows - r0)) {
            case 1:
                block<Ops, 1>(xs, k, b0, count, first, w, n, packed, os, ldo);
                break;
            case 2:
                block<Ops, 2>(xs, k, b0, count, first, w, n, packed, os, ldo);
                break;
            case 3:
                block<Ops, 3>(xs, k, b0, count, first, w, n, packed, os, ldo);
                break;
            default:
                block<Ops, 4>(xs, k, b0, count, first, w, n, packed, os, ldo);
                break;
            }
        }
    }
}

__attribute__((target("avx512f"), flatten)) void chunkAvx512(const float *x, int64_t rows, int64_t k, int64_t i0,
                                                             int64_t i1, const float *w, int64_t n, float *packed,
                                                             int64_t blockRows, float *out, int64_t ldo)
{
    chunk<Wide>(x, rows, k, i0, i1, w, n, packed, blockRows, out, ldo);
}

__attribute__((target("avx2,fma"), flatten)) void chunkAvx2(const float *x, int64_t rows, int64_t k, int64_t i0,
                                                            int64_t i1, const float *w, int64_t n, float *packed,
                                                            int64_t blockRows, float *out, int64_t ldo)
{
    chunk<Narrow>(x, rows, k, i0, i1, w, n, packed, blockRows, out, ldo);
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

void f32::gemmColumns(KernelIsa isa, const float *x, int64_t rows, int64_t k, const float *w, const float *bias,
                      int64_t n, float *out)
{
    if (rows <= 0 || n <= 0)
        return;
    // rowChunks' chunks; each chunk's sums for every row of x apart, added up in chunk order after the
    // bias (addUp), so every output is the same on any thread count.
    const RowChunks split = rowChunks(k, n, sizeof(float), 1);
    const int64_t chunkRows = split.rows, chunks = split.count;
    const int64_t blockRows = std::max<int64_t>(1, kColumnChunkBytes / int64_t(sizeof(float)) / n);
    thread_local std::vector<float> partials; // [row of x][chunk][n], the calling thread's; helpers write into it
    // Every chunk's first block writes all its sums (tile's `first`); only k = 0, no block at all,
    // leaves them to this zero.
    if (k > 0)
        partials.resize(size_t(rows * chunks * n));
    else
        partials.assign(size_t(rows * chunks * n), 0.0f);
    float *partial = partials.data();
    const int64_t ldo = chunks * n;
    parallelPieces(chunks, 1, 1, [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> packed; // this thread's block, in strips
        packed.resize(size_t(std::min(blockRows, k) * n));
        for (int64_t c = begin; c < end; ++c) {
            const int64_t i0 = c * chunkRows, i1 = std::min(k, i0 + chunkRows);
            float *into = partial + c * n;
            switch (isa) {
            case KernelIsa::Avx512:
                chunkAvx512(x, rows, k, i0, i1, w, n, packed.data(), blockRows, into, ldo);
                continue;
            case KernelIsa::Avx2:
                chunkAvx2(x, rows, k, i0, i1, w, n, packed.data(), blockRows, into, ldo);
                continue;
            case KernelIsa::Portable:
                break;
            }
            scalarTile(x + i0, rows, k, i1 - i0, true, w + i0 * n, n, n, into, ldo);
        }
    });
    for (int64_t r = 0; r < rows; ++r) {
        const float *sums = partial + r * ldo;
        switch (isa) {
        case KernelIsa::Avx512:
            addUpAvx512(sums, chunks, bias, n, out + r * n);
            continue;
        case KernelIsa::Avx2:
            addUpAvx2(sums, chunks, bias, n, out + r * n);
            continue;
        case KernelIsa::Portable:
            break;
        }
        addUpFrom(0, sums, chunks, bias, n, out + r * n);
    }
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
    columns(isa, wideX.data(), k, w, wideBias, n, sum.data(), x);
    for (int64_t j = 0; j < n; ++j)
        out[j] = narrow(sum[size_t(j)]);
}

} // namespace accel::inference
