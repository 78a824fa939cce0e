#include "core/runtime/precision/fp8gemm.h"

#include "core/runtime/precision/fp8tensor.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace accel::runtime {

namespace {

// Shape classes: each dimension rounded up to a power of two from 16 to 256. Larger products are
// measured at 256 per dimension, which bounds a measurement on a reference kernel (about 0.6 s for
// one product on the slowest CPU seen) while keeping vectorised kernels in their steady state.
constexpr int64_t smallestDimension = 16, largestDimension = 256;
// The probe that comes before any class on a device: 64^3 costs a reference kernel about 10 ms.
constexpr int64_t probeDimension = 64;
// At this ratio or more on the probe, _scaled_mm is a reference kernel: every class takes the
// dequantised product without being measured.
constexpr double referenceKernelRatio = 8.0;
constexpr int timedRepetitions = 5;

struct Key {
    c10::DeviceType device;
    Fp8GemmShapeClass shape;
    bool operator<(const Key &other) const
    {
        if (device != other.device)
            return device < other.device;
        return shape < other.shape;
    }
};

std::mutex g_mutex;
std::map<Key, Fp8GemmPath> g_paths;
std::vector<Fp8GemmDecision> g_decisions;
std::map<c10::DeviceType, Fp8GemmDecision> g_probes;
std::atomic<int64_t> g_scaledMmCount{0}, g_dequantizedCount{0};

int64_t roundedDimension(int64_t size)
{
    int64_t rounded = smallestDimension;
    while (rounded < size && rounded < largestDimension)
        rounded *= 2;
    return rounded;
}

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

std::string shapeText(const Fp8GemmShapeClass &shape)
{
    return std::to_string(shape.m) + "x" + std::to_string(shape.k) + "x" + std::to_string(shape.n);
}

// Both paths on one shape, interleaved (so that another process taking the core slows both, not
// one) after one untimed call each (which creates oneDNN's primitive): the faster of the timed
// repetitions. It stops early once _scaled_mm costs referenceKernelRatio times the dequantised
// product: the decision cannot change any more.
Fp8GemmDecision measure(c10::DeviceType device, const Fp8GemmShapeClass &shape)
{
    torch::NoGradGuard noGrad;
    c10::impl::ExcludeDispatchKeyGuard noAutocast(c10::autocast_dispatch_keyset);
    const Fp8Tensor a = patternOperand(shape.m, shape.k, device), b = patternOperand(shape.k, shape.n, device);
    const auto dequantized = [&] { torch::mm(dequantize(a), dequantize(b)); };
    const auto scaled = [&] { scaledMm(a, b, torch::kFloat, false); };
    Fp8GemmDecision decision;
    decision.device = device;
    decision.shape = shape;
    dequantized();
    scaled();
    decision.dequantizedSeconds = decision.scaledMmSeconds = 1e30;
    for (int i = 0; i < timedRepetitions; ++i) {
        decision.dequantizedSeconds = std::min(decision.dequantizedSeconds, secondsOf(dequantized));
        decision.scaledMmSeconds = std::min(decision.scaledMmSeconds, secondsOf(scaled));
        if (fp8GemmProbeSettlesEveryClass(decision.scaledMmSeconds, decision.dequantizedSeconds))
            break;
    }
    decision.path = chooseFp8GemmPath(decision.scaledMmSeconds, decision.dequantizedSeconds);
    return decision;
}

void record(Fp8GemmDecision decision, const std::string &scope)
{
    decision.why = std::string("fp8 GEMM on ") + c10::DeviceTypeName(decision.device, true) + ", " + scope + ": " +
                   fp8GemmPathName(decision.path) + " (measured per product: torch::_scaled_mm " +
                   milliseconds(decision.scaledMmSeconds) + ", dequantized " +
                   milliseconds(decision.dequantizedSeconds) + ")";
    std::cout << decision.why << std::endl;
    g_decisions.push_back(std::move(decision));
}

// Under g_mutex.
const Fp8GemmDecision &probe(c10::DeviceType device)
{
    auto found = g_probes.find(device);
    if (found == g_probes.end())
        found = g_probes.emplace(device, measure(device, {probeDimension, probeDimension, probeDimension})).first;
    return found->second;
}

} // namespace

const char *fp8GemmPathName(Fp8GemmPath path)
{
    return path == Fp8GemmPath::ScaledMm ? "scaled_mm" : "dequantized";
}

bool Fp8GemmShapeClass::operator<(const Fp8GemmShapeClass &other) const
{
    if (m != other.m)
        return m < other.m;
    if (k != other.k)
        return k < other.k;
    return n < other.n;
}

Fp8GemmShapeClass fp8GemmShapeClass(int64_t m, int64_t k, int64_t n)
{
    return {roundedDimension(m), roundedDimension(k), roundedDimension(n)};
}

Fp8GemmPath chooseFp8GemmPath(double scaledMmSeconds, double dequantizedSeconds)
{
    return scaledMmSeconds > 2.0 * dequantizedSeconds ? Fp8GemmPath::Dequantized : Fp8GemmPath::ScaledMm;
}

bool fp8GemmProbeSettlesEveryClass(double scaledMmSeconds, double dequantizedSeconds)
{
    return scaledMmSeconds >= referenceKernelRatio * dequantizedSeconds;
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

Fp8GemmPath fp8GemmPath(c10::DeviceType device, int64_t m, int64_t k, int64_t n, Fp8GemmPolicy policy)
{
    if (policy == Fp8GemmPolicy::Dequantized)
        return Fp8GemmPath::Dequantized;
    if (!scaledMmRunsOn(device)) {
        if (policy == Fp8GemmPolicy::ScaledMm)
            throw std::invalid_argument(std::string(fp8GemmVariable) +
                                        "=scaled_mm: this libtorch has no "
                                        "torch::_scaled_mm on " +
                                        c10::DeviceTypeName(device, true) + "; use auto or dequantized");
        return Fp8GemmPath::Dequantized;
    }
    if (policy == Fp8GemmPolicy::ScaledMm || device == c10::DeviceType::CUDA)
        return Fp8GemmPath::ScaledMm;
    const Key key{device, fp8GemmShapeClass(m, k, n)};
    std::lock_guard<std::mutex> lock(g_mutex);
    if (const auto found = g_paths.find(key); found != g_paths.end())
        return found->second;
    const bool firstOnDevice = !g_probes.count(device);
    const Fp8GemmDecision &probed = probe(device);
    if (fp8GemmProbeSettlesEveryClass(probed.scaledMmSeconds, probed.dequantizedSeconds)) {
        if (firstOnDevice)
            record(probed, "every shape (a " + shapeText(probed.shape) + " probe: _scaled_mm is " +
                               std::to_string(int(probed.scaledMmSeconds / probed.dequantizedSeconds)) +
                               "x slower here)");
        g_paths[key] = Fp8GemmPath::Dequantized;
        return Fp8GemmPath::Dequantized;
    }
    Fp8GemmDecision decision = measure(device, key.shape);
    g_paths[key] = decision.path;
    record(decision, "products of shape class " + shapeText(key.shape));
    return g_paths[key];
}

std::vector<Fp8GemmDecision> fp8GemmDecisions()
{
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_decisions;
}

Fp8GemmDecision measureFp8GemmProbe()
{
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!scaledMmRunsOn(c10::DeviceType::CPU)) {
        Fp8GemmDecision none;
        none.path = Fp8GemmPath::Dequantized;
        none.why = "this libtorch has no torch::_scaled_mm on the CPU";
        return none;
    }
    Fp8GemmDecision decision = probe(c10::DeviceType::CPU);
    if (fp8GemmProbeSettlesEveryClass(decision.scaledMmSeconds, decision.dequantizedSeconds))
        decision.path = Fp8GemmPath::Dequantized;
    return decision;
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
