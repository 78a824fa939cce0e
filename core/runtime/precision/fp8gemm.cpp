#include "core/runtime/precision/fp8gemm.h"

#include "core/runtime/precision/fp8tensor.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>

namespace accel::runtime {

namespace {

// 64^3 costs a reference kernel about 10 ms, a vectorised one a few tens of microseconds.
constexpr int64_t probeSize = 64;
// _scaled_mm at this multiple of the dequantised product or more is a reference kernel. Vectorised
// kernels measured 1.1 to 1.35 times; the AMX Xeon's reference kernel over a thousand times.
constexpr double referenceKernelRatio = 4.0;
constexpr int maxPairs = 15;

std::mutex g_mutex;
std::map<c10::DeviceType, Fp8GemmPath> g_paths;
std::vector<Fp8GemmDecision> g_decisions;
std::atomic<int64_t> g_scaledMmCount{0}, g_dequantizedCount{0};

// Codes from a fixed pattern, not from the random generator: measuring never changes a run's
// random stream (dropout, shuffling), so a run is the same whether or not it measured.
Fp8Tensor patternOperand(int64_t rows, int64_t cols, c10::DeviceType device)
{
    auto values = torch::arange(rows * cols, torch::TensorOptions().dtype(torch::kFloat).device(device))
                      .remainder(15)
                      .sub(7)
                      .mul(0.25)
                      .reshape({rows, cols});
    return {values.to(at::kFloat8_e4m3fn), 1.0f};
}

double secondsOf(const std::function<void()> &product)
{
    const auto start = std::chrono::steady_clock::now();
    product();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string milliseconds(double seconds)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
    return text;
}

// Both paths on the probe after one untimed call each (which creates oneDNN's primitive), then
// timed in interleaved pairs, so that another process taking the core slows both sides of a pair.
// The decision is on the median of the pairs' ratios, which one unlucky product does not move (on
// a loaded machine a single 15 us product can take 20 ms). It stops early once three pairs agree
// on a reference kernel (each of its products takes milliseconds).
Fp8GemmDecision measure(c10::DeviceType device)
{
    torch::NoGradGuard noGrad;
    c10::impl::ExcludeDispatchKeyGuard noAutocast(c10::autocast_dispatch_keyset);
    const Fp8Tensor a = patternOperand(probeSize, probeSize, device), b = patternOperand(probeSize, probeSize, device);
    const auto dequantized = [&] { torch::mm(dequantize(a), dequantize(b)); };
    const auto scaled = [&] { scaledMm(a, b, torch::kFloat, false); };
    dequantized();
    scaled();
    std::vector<double> ratios, scaledTimes, dequantizedTimes;
    const auto median = [](std::vector<double> values) {
        std::sort(values.begin(), values.end());
        const size_t n = values.size();
        return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    };
    for (int i = 0; i < maxPairs; ++i) {
        dequantizedTimes.push_back(secondsOf(dequantized));
        scaledTimes.push_back(secondsOf(scaled));
        ratios.push_back(scaledTimes.back() / std::max(dequantizedTimes.back(), 1e-9));
        if (ratios.size() >= 3 && median(ratios) >= referenceKernelRatio)
            break;
    }
    Fp8GemmDecision decision;
    decision.device = device;
    decision.probeSize = probeSize;
    decision.scaledMmSeconds = median(scaledTimes);
    decision.dequantizedSeconds = median(dequantizedTimes);
    decision.ratio = median(ratios);
    decision.path = chooseFp8GemmPath(decision.ratio);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3g", decision.ratio);
    decision.why = std::string("fp8 GEMM on ") + c10::DeviceTypeName(device, true) + ": " +
                   fp8GemmPathName(decision.path) + " (a " + std::to_string(probeSize) + "^3 probe, medians of " +
                   std::to_string(ratios.size()) + " pairs: torch::_scaled_mm " +
                   milliseconds(decision.scaledMmSeconds) + ", dequantized " +
                   milliseconds(decision.dequantizedSeconds) + ", ratio " + ratio + "; _scaled_mm is kept below 4)";
    return decision;
}

// Under g_mutex: the device's decision, measured on first use (and then printed, for a run's log).
Fp8GemmPath decisionFor(c10::DeviceType device, bool print)
{
    if (const auto found = g_paths.find(device); found != g_paths.end())
        return found->second;
    Fp8GemmDecision decision = measure(device);
    if (print)
        std::cout << decision.why << std::endl;
    g_paths[device] = decision.path;
    g_decisions.push_back(std::move(decision));
    return g_paths[device];
}

} // namespace

const char *fp8GemmPathName(Fp8GemmPath path)
{
    return path == Fp8GemmPath::ScaledMm ? "scaled_mm" : "dequantized";
}

Fp8GemmPath chooseFp8GemmPath(double ratio)
{
    return ratio >= referenceKernelRatio ? Fp8GemmPath::Dequantized : Fp8GemmPath::ScaledMm;
}

bool scaledMmRunsOn(c10::DeviceType device)
{
    if (device == c10::DeviceType::CUDA)
        return true;
    if (device != c10::DeviceType::CPU)
        return false;
    // libtorch builds differ in whether the CPU has the kernel: ask it once with a 16x16 product.
    static const bool cpu = [] {
        try {
            const auto codes = torch::ones({16, 16}).to(at::kFloat8_e4m3fn);
            scaledMm({codes, 1.0f}, {codes, 1.0f}, torch::kFloat, false);
            return true;
        } catch (const c10::Error &) {
            return false;
        }
    }();
    return cpu;
}

Fp8GemmPath fp8GemmPath(c10::DeviceType device, Fp8GemmPolicy policy)
{
    if (policy == Fp8GemmPolicy::Dequantized)
        return Fp8GemmPath::Dequantized;
    if (!scaledMmRunsOn(device)) {
        if (policy == Fp8GemmPolicy::ScaledMm)
            throw std::invalid_argument(std::string(fp8GemmVariable) +
                                        "=scaled_mm: this libtorch has no torch::_scaled_mm on " +
                                        c10::DeviceTypeName(device, true) + "; use auto or dequantized");
        return Fp8GemmPath::Dequantized;
    }
    if (policy == Fp8GemmPolicy::ScaledMm || device == c10::DeviceType::CUDA)
        return Fp8GemmPath::ScaledMm;
    std::lock_guard<std::mutex> lock(g_mutex);
    return decisionFor(device, true);
}

std::vector<Fp8GemmDecision> fp8GemmDecisions()
{
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_decisions;
}

Fp8GemmDecision measureFp8GemmProbe()
{
    if (!scaledMmRunsOn(c10::DeviceType::CPU)) {
        Fp8GemmDecision none;
        none.path = Fp8GemmPath::Dequantized;
        none.why = "this libtorch has no torch::_scaled_mm on the CPU";
        return none;
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    decisionFor(c10::DeviceType::CPU, false); // the capability report's stdout is its JSON
    for (const auto &decision : g_decisions)
        if (decision.device == c10::DeviceType::CPU)
            return decision;
    return {};
}

void countFp8Gemm(Fp8GemmPath path)
{
    (path == Fp8GemmPath::ScaledMm ? g_scaledMmCount : g_dequantizedCount).fetch_add(1, std::memory_order_relaxed);
}

Fp8GemmCounts takeFp8GemmCounts()
{
    return {g_scaledMmCount.exchange(0, std::memory_order_relaxed),
            g_dequantizedCount.exchange(0, std::memory_order_relaxed)};
}

} // namespace accel::runtime
