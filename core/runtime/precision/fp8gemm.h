// Which kernel computes an FP8 GEMM on a device (docs/fp8.md "The GEMM"). torch::_scaled_mm is the
// hardware FP8 GEMM on a GPU; on a CPU libtorch runs it through oneDNN, whose implementation
// depends on the CPU: a vectorised kernel on some (1.1 to 1.3 times the cost of the dequantised
// product on an AVX-512 EPYC), a reference loop hundreds of times slower on others (an AMX Xeon).
// The dequantised product (both operands to float32, then the float32 GEMM) computes the same
// values within float32 rounding. So the path is chosen per process and device by timing a probe
// product on both, unless ACCEL_FP8_GEMM forces one. The decision is per device, not per shape:
// per-shape decisions on tiny products flipped between two runs of the same job on a loaded machine,
// which changes a run's last bits.
#pragma once

#include "core/plan/fp8config.h"

#include <c10/core/DeviceType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace accel::runtime {

enum class Fp8GemmPath { ScaledMm, Dequantized };
const char *fp8GemmPathName(Fp8GemmPath path); // "scaled_mm" / "dequantized"

// One measured decision: seconds per probe product of each path and the ratio between them
// (medians over interleaved pairs).
struct Fp8GemmDecision {
    c10::DeviceType device = c10::DeviceType::CPU;
    int64_t probeSize = 0; // the probe is probeSize^3
    double scaledMmSeconds = 0;
    double dequantizedSeconds = 0;
    double ratio = 0; // scaledMmSeconds / dequantizedSeconds, pair by pair
    Fp8GemmPath path = Fp8GemmPath::ScaledMm;
    std::string why; // one line for the run's log
};

// The rule on the measured ratio (_scaled_mm's cost over the dequantised product's): _scaled_mm (the
// libraries' own kernel) unless it costs 4 times as much or more, which only a reference kernel
// does; the margin keeps timing noise from flipping the choice between runs.
Fp8GemmPath chooseFp8GemmPath(double ratio);

// The path for a product on `device` under `policy`. CUDA is always _scaled_mm (the hardware
// GEMM); a device without the kernel always the dequantised product. On the CPU under `auto`, the
// first product of the process is preceded by the probe (64^3, a few milliseconds even on a
// reference kernel), whose decision is printed to stdout once.
Fp8GemmPath fp8GemmPath(c10::DeviceType device, Fp8GemmPolicy policy);

// Whether this libtorch runs torch::_scaled_mm on a device of this type (asked once for the CPU).
bool scaledMmRunsOn(c10::DeviceType device);

// The decisions measured so far in this process, in the order they were made.
std::vector<Fp8GemmDecision> fp8GemmDecisions();
// The CPU's decision, measured now if it was not yet (what `accel-worker --capabilities` reports).
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
