// What bounds decode on a CPU: each new token reads every weight the forward uses once, so tokens/s
// cannot pass the machine's memory bandwidth divided by those bytes. The serve worker reports both
// with a loaded model (the Playground shows them beside the measured tokens/s) and the inference
// benchmark compares against the same bound.
#pragma once

#include "core/common/result.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace accel::inference {

class InferenceModel;

struct DecodeBytes {
    uint64_t perToken = 0;  // weight bytes one decode step reads (the KV cache comes on top)
    uint64_t resident = 0;  // of them: held on the devices, quantized layers as quantized
    uint64_t offloaded = 0; // of them: brought in from the CPU copy or the offload folder each step
};

// Every weight once, as held (quantized layers by their quantized bytes, offloaded ones by the
// bytes brought in), except embedding tables that are only looked up: one row per token. The token
// embedding of a model with tie_word_embeddings is also its output head, read whole.
DecodeBytes decodeBytes(InferenceModel &model);

// This machine's memory bandwidth in bytes read per second as decode reads its weights: the median
// of 20 read-only passes (XOR of wide loads at kernelisa.h's ISA) over 256 MiB (8x the last-level
// cache of the CPUs this runs on), after 2 untimed ones, each split by sharedPieces (intraopteam.h)
// over sharedThreads(), the threads one-sequence decode runs its products on (pinned ones stay
// pinned). Every pass must read each word exactly once (their XOR is checked). Measured on the
// first call for each thread count (about 0.3 s and 256 MiB for that moment), then remembered for
// the process.
struct MemoryBandwidth {
    double bytesPerSecond = 0; // 0 when the passes read something else than was written
    int threads = 0;           // the sharedThreads() it was measured on
    std::string method;        // "read-only avx512 stream of 256 MiB on 2 threads (...), median of 20 passes (...)"
};
MemoryBandwidth measureMemoryBandwidth();
double memoryBandwidth(); // measureMemoryBandwidth().bytesPerSecond
// The same measured again now, neither remembered nor taken from memory: for a bound read next to
// the decode it bounds (this machine's bandwidth moves between levels from one minute to the next).
MemoryBandwidth measureMemoryBandwidthNow();

// bfloat16 weights for decode, chosen by measurement, never silently: a float32 model is measured
// and bfloat16 is chosen when a decode-shaped product (one row times a weight) ran at least
// kMeasuredChoiceMargin times faster in bfloat16 than in float32. On every CPU: with amx_bf16 or
// avx512_bf16 (the flags hardware::parseCpuInfo reads from /proc/cpuinfo) our bfloat16 kernels
// multiply in bfloat16, without them they widen each weight to float32 in registers, and either way
// decode reads half the bytes. `reason` names the flags (or kNoBf16GemmFlagsText) and both times,
// for the user to see.
inline constexpr const char *kNoBf16GemmFlagsText = "no bfloat16 instructions (neither amx_bf16 nor avx512_bf16: "
                                                    "bfloat16 widened to float32 in our kernels)";
// The margin of every measured kernel choice (this one and the int8 kernel's, int8kernel.h): the
// path other than the default is taken only when it measured at least this many times faster.
inline constexpr double kMeasuredChoiceMargin = 1.2;
// For the reasons of measured choices: kMeasuredChoiceMargin as "1.2", and a figure with two
// decimals ("0.41").
inline std::string measuredChoiceMarginText()
{
    char text[16];
    std::snprintf(text, sizeof text, "%.1f", kMeasuredChoiceMargin);
    return text;
}
std::string twoDecimals(double value);
struct DecodeDTypeChoice {
    std::string dtype;  // "bfloat16" or the stored dtype
    std::string reason; // "CPU flags avx512_bf16; 1x2048x8192 product 0.41 ms in bfloat16, 0.83 ms in float32"
    double float32Ms = 0, bfloat16Ms = 0; // 0 when not measured
};
struct ProductTimes {
    double float32Ms = 0, bfloat16Ms = 0;
    std::string product; // what was timed, for the reason ("" : a decode-shaped product)
};
DecodeDTypeChoice chooseDecodeDType(const std::vector<std::string> &cpuFlags, const std::string &storedDType,
                                    const std::function<ProductTimes()> &measure);
// What --dtype auto does, for the user (accel generate's --help, the Playground's dtype choice).
inline std::string autoComputeDTypeMeaning()
{
    return "bfloat16 for a float32 model where a measured decode-shaped product runs at least " +
           measuredChoiceMarginText() +
           "x faster in it on this CPU (with or without its bfloat16 instructions), else the checkpoint's";
}
// --dtype auto for the model in `modelDir` (accel generate and the serve worker's load): chooseDecodeDType
// with config.json's torch_dtype (float32 when it has none), /proc/cpuinfo's flags and the products
// measured on `threads` intra-op threads (0: as they are set), the threads decode will run on.
Result<DecodeDTypeChoice> chooseModelDecodeDType(const std::string &modelDir, int threads);
// {"dtype", "reason", "float32_ms", "bfloat16_ms"}: generate's --json dtype_choice, serve's loaded event.
nlohmann::ordered_json dtypeChoiceJson(const DecodeDTypeChoice &choice);
// The fastest of a few 1 x `in` by `in` x `out` products in each dtype, through the kernels and the
// threads one-sequence decode uses (inside a OneThreadedOps scope, the count as set): a Linear's
// (linearRows, weight [out, in]), or with `conv1d` a GPT-2 Conv1D's (Conv1D::forward, weight
// [in, out]).
// Each product is timed over copies of its weight that together hold kMeasuredWeightBytes in
// bfloat16 (more than the last-level cache), as decode reads each layer's weights from memory; at most
// kMostMeasuredCopies (a tiny model's layers stay in the cache, as its decode does); a larger weight
// is cut to the rows that fill kMeasuredWeightBytes, and the description names the shape timed.
inline constexpr int64_t kMeasuredWeightBytes = int64_t(64) << 20;
inline constexpr int64_t kMostMeasuredCopies = 64;
// What a measured product of `in` by `out` (a Linear's weight [out, in], with `conv1d` a Conv1D's
// [in, out]) is timed on at `elementBytes` a weight: a weight over kMeasuredWeightBytes cut to the
// rows that fill it (output rows of a Linear, input rows of a Conv1D: the same kernel, the same
// bytes per row), and the copies of it that together hold at least kMeasuredWeightBytes, at most
// kMostMeasuredCopies.
struct MeasuredShape {
    int64_t in = 0, out = 0, copies = 0;
    // "ROWS x in by in x out Linear" (or "Conv1D (weight [in, out])"), for a reason.
    std::string product(const std::string &rows, bool conv1d) const;
};
MeasuredShape measuredShape(int64_t in, int64_t out, bool conv1d, int64_t elementBytes);
ProductTimes measureDecodeProducts(int64_t in = 2048, int64_t out = 8192, bool conv1d = false);

// Pins each of libtorch's intra-op threads (the OpenMP team of at::get_num_threads() threads, the
// calling thread being thread 0) to its own CPU of the process's allowed set: thread i to the i-th
// allowed CPU, wrapping when there are more threads than CPUs. One-sequence decode's product
// helpers (sharedPieces on libtorch's inter-op threads, intraopteam.h) follow: helper h runs on
// the CPU of thread h (pinSharedHelpers). Returns the CPU of each thread, in thread order; errors
// name what failed (no OpenMP runtime loaded, a CPU the kernel refused).
Result<std::vector<int>> pinIntraOpThreads();
// Every intra-op thread, and every inter-op thread a helper was moved on, back on the CPUs the
// process had before the first pinIntraOpThreads().
Result<void> unpinIntraOpThreads();
// The CPU each intra-op thread is confined to, in thread order (-1: more than one allowed).
std::vector<int> intraOpThreadCpus();

// {"weight_bytes_per_token", "offloaded_bytes_per_token", "memory_bandwidth_bytes_per_s",
//  "memory_bandwidth_threads", "memory_bandwidth_method", "tokens_per_s"}: the bound for this model
// on this machine and the threads set now (tokens_per_s null when unmeasured).
nlohmann::ordered_json decodeBoundJson(InferenceModel &model);

} // namespace accel::inference
