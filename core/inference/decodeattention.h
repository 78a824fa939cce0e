// Attention of one new position per sequence (decode) over the cached keys and values, in one pass
// per query head: the scores, their scale and soft cap, the softmax and the weighted sum of the
// values, with no tensor made in between. The heads are split over the threads as the decode
// products are (intraopteam.h's parallelPieces: in one-sequence decode the caller and its spinning
// helpers), where libtorch's batched matmul runs one head after another on the calling thread.
//
// The arithmetic of causalAttention's tensor path (layers.h), which this replaces for one query:
// products and sums in float32, the softmax as max, exp(score - max), times 1 / sum. With bfloat16
// elements it rounds where libtorch's bfloat16 matmul does: each score to bfloat16 before the scale,
// each probability to bfloat16 before the weighted sum, each output once. AVX-512F, AVX2 with FMA or
// a portable loop (kernelisa.h). Includes no libtorch header.
#pragma once

#include "core/inference/kernelisa.h"

#include <cstdint>

namespace accel::inference {

struct DecodeAttentionShape {
    int64_t batch = 0, heads = 0, kvHeads = 0, keys = 0, dim = 0; // heads a multiple of kvHeads
    // Element strides of q [batch, heads, 1, dim] and of k, v [batch, kvHeads, keys, dim]; the dim
    // elements of each row are contiguous. Query head h reads key/value head h / (heads / kvHeads).
    int64_t qBatch = 0, qHead = 0;
    int64_t kBatch = 0, kHead = 0, kKey = 0;
    int64_t vBatch = 0, vHead = 0, vKey = 0;
    float scale = 1.0f;   // the scores' factor
    float softcap = 0.0f; // > 0: scores become tanh(score / softcap) * softcap
};

// out [batch, heads, dim], contiguous. `isa` must be one the CPU runs (kernelisa.h).
void decodeAttention(KernelIsa isa, const DecodeAttentionShape &shape, const float *q, const float *k, const float *v,
                     float *out);
// The same in bfloat16 (bits).
void decodeAttention(KernelIsa isa, const DecodeAttentionShape &shape, const uint16_t *q, const uint16_t *k,
                     const uint16_t *v, uint16_t *out);

} // namespace accel::inference
