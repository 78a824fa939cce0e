// Which kernel computes the decode products of int8 weights (QuantizedWeight::matmul with at most
// kDecodeRows rows): ours (int8gemv.h, at the widest ISA the CPU's /proc/cpuinfo flags allow) or
// libtorch's _weight_int8pack_mm. Chosen by capability and by measurement, as the bfloat16 choice
// is (decodebound.h), once per process and activation dtype, at the first load of a model with
// int8 layers: one decode-shaped row through the model's own int8 layers (the first of them up to
// kMeasureBytes of weights, so that the weights come from memory rather than cache), best of
// kMeasurePasses passes each, the two kernels' passes alternating; the faster wins, ours on a tie (it accumulates the
// dequantized product exactly in float32). Longer inputs (prefill) keep the products of quantizedweight.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace accel::inference {

class QuantizedWeight;

enum class Int8Kernel { Ours, Libtorch };

inline constexpr int64_t kDecodeRows = 4;             // rows the choice covers
inline constexpr uint64_t kMeasureBytes = 256u << 20; // int8 weight bytes one measured pass reads at most
inline constexpr int kMeasurePasses = 3;

struct Int8KernelTimes {
    double oursMs = 0, libtorchMs = 0; // one pass; libtorchMs < 0: libtorch refused the dtype
    uint64_t bytes = 0;                // weight bytes a pass read
    size_t layers = 0;
    std::string libtorchError; // why libtorch refused, when it did
};

struct Int8KernelChoice {
    Int8Kernel kernel = Int8Kernel::Ours;
    std::string name;   // "ours-avx512", "ours-avx2", "ours-portable" or "libtorch-_weight_int8pack_mm"
    std::string dtype;  // the activations': "float32", "bfloat16", "float16"
    std::string reason; // the flags, the layers measured and both times
    Int8KernelTimes times;
};

// The rule, over the CPU's flags and a measurement (tests pass fixtures and made-up times).
Int8KernelChoice chooseInt8Kernel(const std::vector<std::string> &cpuFlags, const std::string &dtype,
                                  const std::function<Int8KernelTimes()> &measure);

// Both kernels over `layers` (int8 ones; others are passed over) with activations of `dtype`
// ("float32", "bfloat16", "float16"), on the intra-op threads as set.
Int8KernelTimes measureInt8Kernels(const std::vector<const QuantizedWeight *> &layers, const std::string &dtype);

// At a load: the choice for `dtype` made in this process, else made now (this CPU's flags, the
// given layers measured) and put in use.
const Int8KernelChoice &chooseInt8KernelAtLoad(const std::vector<const QuantizedWeight *> &layers,
                                               const std::string &dtype);

// The kernel in use for activations of `dtype`: the choice made for it, else by capability alone
// (ours, unless the CPU runs only the portable loop). useInt8Kernel sets it (tests, benchmarks).
Int8Kernel int8KernelFor(const std::string &dtype);
void useInt8Kernel(const std::string &dtype, Int8Kernel kernel);

} // namespace accel::inference
