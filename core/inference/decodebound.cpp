#include "core/inference/decodebound.h"

#include "core/inference/causallm.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/intraopteam.h"
#include "core/inference/kernelisa.h"
#include "core/inference/layers.h"

#include <nlohmann/json.hpp>

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <pthread.h>
#include <sched.h>
#include <vector>

namespace accel::inference {

DecodeBytes decodeBytes(InferenceModel &model)
{
    DecodeBytes bytes;
    const ModelConfig &config = model.config();
    for (const NamedParameter &p : model.lm().namedParameters()) {
        const at::Tensor &value = p.parameter->value;
        if (!value.defined())
            continue; // offloaded (counted below) or replaced by its quantized form
        const auto *layer = dynamic_cast<const LoraAdaptable *>(p.owner);
        if (layer && layer->quantized() && p.parameter->keepDtype)
            continue; // a pre-quantized layer's stored tensors: its quantized bytes below
        if (dynamic_cast<const Embedding *>(p.owner) && value.dim() == 2) {
            const bool head = config.tieWordEmbeddings && value.size(0) == config.vocabSize;
            if (!head) {
                bytes.resident += uint64_t(value.size(1)) * value.element_size();
                continue;
            }
        }
        bytes.resident += value.nbytes();
    }
    bytes.resident += model.quantization().quantizedBytes;
    bytes.offloaded = model.report().offloadedBytes;
    bytes.perToken = bytes.resident + bytes.offloaded;
    return bytes;
}

namespace {

constexpr size_t kStreamBytes = size_t(256) << 20; // 8x the last-level cache here (32 MiB)
constexpr int kWarmPasses = 2;                     // untimed: the helpers woken and placed, the pages' TLB entries
constexpr int kStreamPasses = 20;                  // timed; the figure is their median

// XOR of every 64-byte line of [data, data + bytes) (bytes a multiple of 256), read with the
// widest loads the CPU has: a read-only stream, as decode reads its weights.
__attribute__((target("avx512f"))) uint64_t streamAvx512(const char *data, size_t bytes)
{
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (size_t i = 0; i < bytes; i += 256) {
        a = _mm512_xor_si512(a, _mm512_loadu_si512(data + i));
        b = _mm512_xor_si512(b, _mm512_loadu_si512(data + i + 64));
        c = _mm512_xor_si512(c, _mm512_loadu_si512(data + i + 128));
        d = _mm512_xor_si512(d, _mm512_loadu_si512(data + i + 192));
    }
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d)));
    uint64_t folded = 0;
    for (uint64_t lane : lanes)
        folded ^= lane;
    return folded;
}

__attribute__((target("avx2"))) uint64_t streamAvx2(const char *data, size_t bytes)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i < bytes; i += 128) {
        a = _mm256_xor_si256(a, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(data + i)));
        b = _mm256_xor_si256(b, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(data + i + 32)));
        c = _mm256_xor_si256(c, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(data + i + 64)));
        d = _mm256_xor_si256(d, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(data + i + 96)));
    }
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i *>(lanes),
                       _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d)));
    return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}

uint64_t streamPortable(const char *data, size_t bytes)
{
    uint64_t lanes[8] = {};
    for (size_t i = 0; i < bytes; i += 64)
        for (size_t lane = 0; lane < 8; ++lane) {
            uint64_t word;
            std::memcpy(&word, data + i + 8 * lane, sizeof word);
            lanes[lane] ^= word;
        }
    uint64_t folded = 0;
    for (uint64_t lane : lanes)
        folded ^= lane;
    return folded;
}

uint64_t stream(KernelIsa isa, const char *data, size_t bytes)
{
    switch (isa) {
    case KernelIsa::Avx512:
        return streamAvx512(data, bytes);
    case KernelIsa::Avx2:
        return streamAvx2(data, bytes);
    case KernelIsa::Portable:
        break;
    }
    return streamPortable(data, bytes);
}

// The median of kStreamPasses read-only passes over kStreamBytes, after kWarmPasses untimed ones,
// each split by sharedPieces over `threads` (the count sharedThreads() gives now). A pass's time
// runs from the split to its last piece. Every 64-bit word differs, so each pass's XOR equals the
// buffer's only when every piece was read exactly once.
MemoryBandwidth measureStream(int threads)
{
    MemoryBandwidth measured;
    measured.threads = threads;
    const KernelIsa isa = hostKernelIsa();
    const size_t words = kStreamBytes / sizeof(uint64_t);
    std::unique_ptr<uint64_t, void (*)(void *)> buffer(static_cast<uint64_t *>(std::aligned_alloc(64, kStreamBytes)),
                                                       std::free);
    if (!buffer)
        return measured;
    uint64_t expected = 0; // written here, so page faults are not part of the passes
    for (size_t i = 0; i < words; ++i) {
        buffer.get()[i] = (i + 1) * 0x9e3779b97f4a7c15ULL;
        expected ^= buffer.get()[i];
    }
    const char *data = reinterpret_cast<const char *>(buffer.get());
    constexpr int64_t kLine = 256; // the kernels' step
    const int64_t lines = int64_t(kStreamBytes / kLine);
    std::vector<double> seconds;
    bool readAsWritten = true;
    for (int pass = 0; pass < kWarmPasses + kStreamPasses; ++pass) {
        std::atomic<uint64_t> folded{0};
        const auto start = std::chrono::steady_clock::now();
        sharedPieces(lines, 16, int64_t(1) << 12, [&](int64_t begin, int64_t end) {
            folded.fetch_xor(stream(isa, data + begin * kLine, size_t(end - begin) * kLine));
        });
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        readAsWritten = readAsWritten && folded.load() == expected;
        if (pass >= kWarmPasses)
            seconds.push_back(elapsed);
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    char method[240];
    std::snprintf(method, sizeof method,
                  "read-only %s stream of %zu MiB on %d thread%s (the decode products' split), median of %d "
                  "passes after %d untimed (passes %.1f to %.1f GB/s)",
                  kernelIsaName(isa), kStreamBytes >> 20, threads, threads == 1 ? "" : "s", kStreamPasses, kWarmPasses,
                  double(kStreamBytes) / seconds.back() / 1e9, double(kStreamBytes) / seconds.front() / 1e9);
    measured.method = method;
    measured.bytesPerSecond = readAsWritten && median > 0 ? double(kStreamBytes) / median : 0.0;
    return measured;
}

} // namespace

MemoryBandwidth measureMemoryBandwidth()
{
    static std::mutex mutex;
    static std::map<int, MemoryBandwidth> measured; // by thread count
    const int threads = sharedThreads();
    std::lock_guard<std::mutex> lock(mutex);
    auto it = measured.find(threads);
    if (it == measured.end())
        it = measured.emplace(threads, measureStream(threads)).first;
    return it->second;
}

MemoryBandwidth measureMemoryBandwidthNow()
{
    return measureStream(sharedThreads());
}

double memoryBandwidth()
{
    return measureMemoryBandwidth().bytesPerSecond;
}

DecodeDTypeChoice chooseDecodeDType(const std::vector<std::string> &cpuFlags, const std::string &storedDType,
                                    const std::function<ProductTimes()> &measure)
{
    DecodeDTypeChoice choice;
    choice.dtype = storedDType;
    if (storedDType != "float32") {
        choice.reason = "the model is stored in " + storedDType + " (only float32 models are switched)";
        return choice;
    }
    std::string flags;
    for (const char *flag : kBf16GemmFlags)
        if (std::find(cpuFlags.begin(), cpuFlags.end(), flag) != cpuFlags.end())
            flags += (flags.empty() ? "" : " ") + std::string(flag);
    const ProductTimes times = measure();
    choice.float32Ms = times.float32Ms;
    choice.bfloat16Ms = times.bfloat16Ms;
    char measured[160];
    std::snprintf(measured, sizeof measured, "%s took %.3f ms in bfloat16, %.3f ms in float32",
                  times.product.empty() ? "a decode-shaped product" : times.product.c_str(), times.bfloat16Ms,
                  times.float32Ms);
    const bool faster = times.bfloat16Ms > 0 && times.float32Ms >= kMeasuredChoiceMargin * times.bfloat16Ms;
    if (faster)
        choice.dtype = "bfloat16";
    const std::string margin = measuredChoiceMarginText();
    // Without the flags our bfloat16 kernels widen each weight to float32 in registers: decode still
    // reads half the bytes, so the measurement decides there too.
    choice.reason = (flags.empty() ? std::string(kNoBf16GemmFlagsText) : "CPU flags " + flags) + "; " + measured +
                    (faster ? " (bfloat16 chosen: at least " + margin + "x faster)"
                            : " (float32 kept: bfloat16 is not " + margin + "x faster)");
    return choice;
}

std::string twoDecimals(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", value);
    return text;
}

Result<DecodeDTypeChoice> chooseModelDecodeDType(const std::string &modelDir, int threads)
{
    auto config = loadModelConfig(modelDir);
    if (!config)
        return tl::unexpected(config.error());
    const std::string stored = config->torchDtype.empty() ? std::string("float32") : config->torchDtype;
    const std::vector<std::string> &flags = hostCpuFlags();
    if (threads > 0)
        at::set_num_threads(threads); // measured on the threads decode will run on
    // The model's own MLP input product, in its own layer: GPT-2's are Conv1D (weights [in, out]).
    const int64_t in = config->hiddenSize, out = config->intermediateSize;
    const bool conv1d = config->modelType == "gpt2";
    return chooseDecodeDType(flags, stored, [&] {
        return in > 0 && out > 0 ? measureDecodeProducts(in, out, conv1d) : measureDecodeProducts();
    });
}

nlohmann::ordered_json dtypeChoiceJson(const DecodeDTypeChoice &choice)
{
    return {{"dtype", choice.dtype},
            {"reason", choice.reason},
            {"float32_ms", choice.float32Ms},
            {"bfloat16_ms", choice.bfloat16Ms}};
}

MeasuredShape measuredShape(int64_t in, int64_t out, bool conv1d, int64_t elementBytes)
{
    MeasuredShape shape{in, out, 1};
    int64_t &rows = conv1d ? shape.in : shape.out;
    const int64_t rowBytes = std::max<int64_t>(1, (conv1d ? out : in) * elementBytes);
    rows = std::clamp<int64_t>(kMeasuredWeightBytes / rowBytes, 1, std::max<int64_t>(rows, 1));
    const int64_t layerBytes = std::max<int64_t>(1, shape.in * shape.out * elementBytes);
    shape.copies = std::clamp<int64_t>((kMeasuredWeightBytes + layerBytes - 1) / layerBytes, 1, kMostMeasuredCopies);
    return shape;
}

std::string MeasuredShape::product(const std::string &rows, bool conv1d) const
{
    return rows + " x " + std::to_string(in) + " by " + std::to_string(in) + " x " + std::to_string(out) +
           (conv1d ? " Conv1D (weight [in, out])" : " Linear");
}

ProductTimes measureDecodeProducts(int64_t in, int64_t out, bool conv1d)
{
    ProductTimes times;
    c10::InferenceMode guard;
    // As decode reads every layer once a token, not one layer's weights from the cache: copies of
    // the layer, together at least kMeasuredWeightBytes in bfloat16 (twice that in float32), each
    // product once a pass; a larger layer cut to the rows that fill it.
    const MeasuredShape shape = measuredShape(in, out, conv1d, int64_t(sizeof(uint16_t)));
    in = shape.in;
    out = shape.out;
    const int64_t copies = shape.copies;
    std::vector<at::Tensor> weights;
    std::vector<std::unique_ptr<Conv1D>> layers;
    for (int64_t c = 0; c < copies; ++c) {
        weights.push_back(at::randn(conv1d ? std::vector<int64_t>{in, out} : std::vector<int64_t>{out, in}) * 0.02);
        if (conv1d)
            layers.push_back(std::make_unique<Conv1D>(in, out));
    }
    const at::Tensor x = at::randn({1, in});
    OneThreadedOps decodeThreads; // as one-sequence decode runs its products
    auto best = [&](at::ScalarType type) {
        std::vector<at::Tensor> held;
        for (int64_t c = 0; c < copies; ++c) {
            held.push_back(weights[size_t(c)].to(type));
            if (conv1d) {
                layers[size_t(c)]->parameters()[0]->value = held.back();
                layers[size_t(c)]->parameters()[1]->value = at::zeros({out}, held.back().options());
            }
        }
        const at::Tensor row = x.to(type);
        double ms = 1e30;
        for (int pass = 0; pass < 5; ++pass) {
            const auto start = std::chrono::steady_clock::now();
            for (int64_t c = 0; c < copies; ++c) // the kernel decode takes for this dtype and layer
                at::Tensor y = conv1d ? layers[size_t(c)]->forward(row.view({1, 1, in}))
                                      : linearRows(row, held[size_t(c)], at::Tensor());
            ms = std::min(ms,
                          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
                              double(copies));
        }
        return ms;
    };
    times.float32Ms = best(at::kFloat);
    times.bfloat16Ms = best(at::kBFloat16);
    times.product = "a " + shape.product("1", conv1d) + " product (copies: " + std::to_string(copies) + ")";
    return times;
}

namespace {

// libtorch's intra-op threads are libgomp's team, started through intraopteam.h.
Result<void> onEveryIntraOpThread(const std::function<void(int)> &body)
{
    if (!onEveryTeamThread(body))
        return makeError(ErrorCode::Unsupported,
                         "pin threads: libtorch's OpenMP runtime (libgomp) is not loaded in this process");
    return {};
}

std::mutex g_maskMutex;
std::optional<cpu_set_t> g_processMask; // before the first pin

} // namespace

Result<std::vector<int>> pinIntraOpThreads()
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return makeError(ErrorCode::Failed, "pin threads: sched_getaffinity failed");
    {
        std::lock_guard<std::mutex> lock(g_maskMutex);
        if (!g_processMask)
            g_processMask = allowed;
        allowed = *g_processMask;
    }
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &allowed))
            cpus.push_back(cpu);
    if (cpus.empty())
        return makeError(ErrorCode::Failed, "pin threads: the process may run on no CPU");
    startSharedHelpers(); // on every allowed CPU, before the caller is confined to one
    const int threads = at::get_num_threads();
    std::vector<int> pinned(size_t(threads), -1);
    std::atomic<int> refused{-1};
    auto ran = onEveryIntraOpThread([&](int thread) {
        if (thread < 0 || thread >= threads)
            return;
        const int cpu = cpus[size_t(thread) % cpus.size()];
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
            refused = cpu;
        else
            pinned[size_t(thread)] = cpu;
    });
    if (!ran)
        return tl::unexpected(ran.error());
    if (refused >= 0)
        return makeError(ErrorCode::Failed, "pin threads: the kernel refused CPU " + std::to_string(refused.load()));
    for (int t = 0; t < threads; ++t)
        if (pinned[size_t(t)] < 0)
            return makeError(ErrorCode::Failed, "pin threads: intra-op thread " + std::to_string(t) + " did not run");
    pinSharedHelpers(cpus); // one-sequence decode's helpers: helper h where the team's thread h is
    return pinned;
}

Result<void> unpinIntraOpThreads()
{
    std::optional<cpu_set_t> mask;
    {
        std::lock_guard<std::mutex> lock(g_maskMutex);
        mask = g_processMask;
    }
    if (!mask)
        return {}; // never pinned
    std::vector<int> allowed;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &*mask))
            allowed.push_back(cpu);
    unpinSharedHelpers(allowed);
    return onEveryIntraOpThread([&](int) { pthread_setaffinity_np(pthread_self(), sizeof *mask, &*mask); });
}

std::vector<int> intraOpThreadCpus()
{
    std::vector<int> cpus(size_t(at::get_num_threads()), -1);
    auto ran = onEveryIntraOpThread([&](int thread) {
        cpu_set_t mine;
        CPU_ZERO(&mine);
        if (thread < 0 || size_t(thread) >= cpus.size() || sched_getaffinity(0, sizeof mine, &mine) != 0 ||
            CPU_COUNT(&mine) != 1)
            return;
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &mine))
                cpus[size_t(thread)] = cpu;
    });
    return ran ? cpus : std::vector<int>();
}

nlohmann::ordered_json decodeBoundJson(InferenceModel &model)
{
    const DecodeBytes bytes = decodeBytes(model);
    const MemoryBandwidth measured = measureMemoryBandwidth();
    const double bandwidth = measured.bytesPerSecond;
    nlohmann::ordered_json bound = {{"weight_bytes_per_token", bytes.perToken},
                                    {"offloaded_bytes_per_token", bytes.offloaded},
                                    {"memory_bandwidth_bytes_per_s", bandwidth},
                                    {"memory_bandwidth_threads", measured.threads},
                                    {"memory_bandwidth_method", measured.method}};
    bound["tokens_per_s"] = bandwidth > 0 && bytes.perToken > 0 ? nlohmann::ordered_json(bandwidth / bytes.perToken)
                                                                : nlohmann::ordered_json(nullptr);
    return bound;
}

} // namespace accel::inference
