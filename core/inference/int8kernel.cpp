#include "core/inference/int8kernel.h"

#include "core/inference/decodebound.h"
#include "core/inference/int8gemv.h"
#include "core/inference/kernelisa.h"
#include "core/inference/quantizedweight.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

namespace accel::inference {

namespace {

// The kernel in use per activation dtype (float32, bfloat16, float16); -1 until chosen or set.
std::array<std::atomic<int>, 3> g_inUse{-1, -1, -1};

int slot(const std::string &dtype)
{
    return dtype == "bfloat16" ? 1 : dtype == "float16" ? 2 : 0;
}

at::ScalarType scalarType(const std::string &dtype)
{
    return dtype == "bfloat16" ? at::kBFloat16 : dtype == "float16" ? at::kHalf : at::kFloat;
}

} // namespace

Int8KernelChoice chooseInt8Kernel(const std::vector<std::string> &cpuFlags, const std::string &dtype,
                                  const std::function<Int8KernelTimes()> &measure)
{
    Int8KernelChoice choice;
    choice.dtype = dtype;
    const KernelIsa isa = kernelIsaForFlags(cpuFlags);
    const std::string ours = std::string("ours-") + kernelIsaName(isa);
    std::string flags;
    for (const char *flag : {"avx512f", "avx2", "fma"})
        if (std::find(cpuFlags.begin(), cpuFlags.end(), flag) != cpuFlags.end())
            flags += (flags.empty() ? "" : " ") + std::string(flag);
    choice.times = measure();
    const Int8KernelTimes &t = choice.times;
    std::string reason = "CPU flags " + (flags.empty() ? std::string("without avx512f, avx2 or fma") : flags) + ": " +
                         ours + "; 1-row " + dtype + " products through " + std::to_string(t.layers) +
                         " int8 layer(s) (" + twoDecimals(double(t.bytes) / 1e6) + " MB) " + twoDecimals(t.oursMs) +
                         " ms ours, ";
    if (t.libtorchMs < 0) {
        choice.kernel = Int8Kernel::Ours;
        reason += "libtorch's _weight_int8pack_mm refused them (" + t.libtorchError + ")";
    } else {
        // libtorch's kernel only for a clear win (a measurement under load swings both ways).
        choice.kernel = t.libtorchMs * kMeasuredChoiceMargin <= t.oursMs ? Int8Kernel::Libtorch : Int8Kernel::Ours;
        reason += twoDecimals(t.libtorchMs) + " ms libtorch's _weight_int8pack_mm (taken when " +
                  measuredChoiceMarginText() + "x faster)";
    }
    choice.name = choice.kernel == Int8Kernel::Ours ? ours : "libtorch-_weight_int8pack_mm";
    choice.reason = reason;
    return choice;
}

Int8KernelTimes measureInt8Kernels(const std::vector<const QuantizedWeight *> &layers, const std::string &dtype)
{
    c10::InferenceMode guard;
    Int8KernelTimes times;
    std::vector<std::pair<const QuantizedWeight *, at::Tensor>> inputs;
    for (const QuantizedWeight *w : layers) {
        if (!w || w->format() != QuantizedWeight::Format::Int8Rows)
            continue;
        if (times.bytes > 0 && times.bytes + w->bytes() > kMeasureBytes)
            break;
        times.bytes += w->bytes();
        inputs.emplace_back(w, at::randn({1, w->inFeatures()}).to(scalarType(dtype)));
    }
    times.layers = inputs.size();
    // Passes of the two kernels alternate, so that both meet the same load from other processes.
    auto pass = [&](Int8Kernel kernel) {
        const auto start = std::chrono::steady_clock::now();
        for (const auto &[w, x] : inputs)
            w->decodeProduct(x, kernel);
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    times.oursMs = times.libtorchMs = 1e30;
    for (int p = 0; p < kMeasurePasses; ++p) {
        times.oursMs = std::min(times.oursMs, pass(Int8Kernel::Ours));
        if (times.libtorchMs < 0)
            continue;
        try {
            times.libtorchMs = std::min(times.libtorchMs, pass(Int8Kernel::Libtorch));
        } catch (const c10::Error &e) {
            times.libtorchMs = -1;
            times.libtorchError = e.what_without_backtrace();
            if (const auto newline = times.libtorchError.find('\n'); newline != std::string::npos)
                times.libtorchError.resize(newline);
        }
    }
    return times;
}

const Int8KernelChoice &chooseInt8KernelAtLoad(const std::vector<const QuantizedWeight *> &layers,
                                               const std::string &dtype)
{
    static std::mutex mutex;
    static std::map<std::string, Int8KernelChoice> made;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = made.find(dtype);
    if (it == made.end()) {
        it = made.emplace(dtype,
                          chooseInt8Kernel(hostCpuFlags(), dtype, [&] { return measureInt8Kernels(layers, dtype); }))
                 .first;
        useInt8Kernel(dtype, it->second.kernel);
    }
    return it->second;
}

Int8Kernel int8KernelFor(const std::string &dtype)
{
    const int set = g_inUse[size_t(slot(dtype))].load(std::memory_order_relaxed);
    if (set >= 0)
        return Int8Kernel(set);
    return hostKernelIsa() == KernelIsa::Portable ? Int8Kernel::Libtorch : Int8Kernel::Ours;
}

void useInt8Kernel(const std::string &dtype, Int8Kernel kernel)
{
    g_inUse[size_t(slot(dtype))].store(int(kernel), std::memory_order_relaxed);
}

} // namespace accel::inference
