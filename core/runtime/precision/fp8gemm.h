// Which kernel computes an FP8 GEMM on a device (docs/fp8.md "The GEMM"). torch::_scaled_mm is the
// hardware FP8 GEMM on a GPU; on a CPU libtorch runs it through oneDNN, whose implementation
// depends on the CPU: a vectorised kernel on some, a reference loop 100x to 1000x slower than the
// float32 product on others (an AMX Xeon). The dequantised product (both operands to float32, then
// the float32 GEMM) computes the same values within float32 rounding. So the path is chosen by
// measuring both, once per process, device and shape class, unless ACCEL_FP8_GEMM forces one.
#pragma once

#include "core/plan/fp8config.h"

#include <c10/core/DeviceType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace accel::runtime {

enum class Fp8GemmPath { ScaledMm, Dequantized };
const char *fp8GemmPathName(Fp8GemmPath path); // "scaled_mm" / "dequantized"

// The products a shape class is measured on: each dimension capped and rounded up to a power of two.
struct Fp8GemmShapeClass {
    int64_t m = 0, k = 0, n = 0;
    bool operator<(const Fp8GemmShapeClass &other) const;
};
Fp8GemmShapeClass fp8GemmShapeClass(int64_t m, int64_t k, int64_t n);

// One measured decision: seconds per product of each path (the faster of the timed repetitions;
// scaledMmSeconds is a lower bound when the measurement stopped early on a slow kernel).
struct Fp8GemmDecision {
    c10::DeviceType device = c10::DeviceType::CPU;
    Fp8GemmShapeClass shape;
    double scaledMmSeconds = 0;
    double dequantizedSeconds = 0;
    Fp8GemmPath path = Fp8GemmPath::ScaledMm;
    std::string why; // one line for the run's log
};

// The rule on measured costs: _scaled_mm (the libraries' own kernel) unless it costs more than
// twice the dequantised product; the margin keeps noise from flipping the choice between runs.
Fp8GemmPath chooseFp8GemmPath(double scaledMmSeconds, double dequantizedSeconds);
// Whether the probe's costs mark _scaled_mm as a reference kernel (8x the dequantised product or
// more), which settles every shape class on the device without measuring it.
bool fp8GemmProbeSettlesEveryClass(double scaledMmSeconds, double dequantizedSeconds);

// The path for a [m, k] x [k, n] product on `device` under `policy`. CUDA is always _scaled_mm
// (the hardware GEMM); a device without the kernel always the dequantised product. On the CPU under
// `auto`, the first product of a shape class is preceded by the measurement (bounded: a 64^3 probe
// first, which settles every class when _scaled_mm is far slower there), and its decision is
// printed to stdout once.
Fp8GemmPath fp8GemmPath(c10::DeviceType device, int64_t m, int64_t k, int64_t n, Fp8GemmPolicy policy);

// Whether this libtorch runs torch::_scaled_mm on a device of this type (asked once for the CPU).
bool scaledMmRunsOn(c10::DeviceType device);

// The decisions measured so far in this process, in the order they were made.
std::vector<Fp8GemmDecision> fp8GemmDecisions();
// Measures the 64^3 probe on the CPU now (what `accel-worker --capabilities` reports) and returns
// its decision.
Fp8GemmDecision measureFp8GemmProbe();

// Products computed on each path since the last call (for the metrics lines: fp8_gemm_scaled_mm,
// fp8_gemm_dequantized).
struct Fp8GemmCounts {
    int64_t scaledMm = 0;
    int64_t dequantized = 0;
};
Fp8GemmCounts takeFp8GemmCounts();
void countFp8Gemm(Fp8GemmPath path);

} // namespace accel::runtime
