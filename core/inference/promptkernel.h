// Up to how many float32 rows of x a Linear or GPT-2 Conv1D on the CPU takes our kernels
// (floatgemv.h, gemvcolumns.h) rather than libtorch's GEMM: chosen by measurement, once per process,
// at the first load of a model with float32 weights on the CPU. One row (a decode step) always takes
// ours. Ours reads each weight once from memory; libtorch's GEMM (MKL's sgemm) copies the weight's
// panels first and then runs at the FMA rate, and how fast depends on the CPU: on an AVX2 AMD EPYC
// MKL took 1515 ms for a 16-row prompt's products of the 1.1B Llama where ours took 624, and ours
// stayed ahead up to 64 rows; on an AMX Xeon MKL's GEMM was ahead from 16 rows on for GPT-2 small's
// products and from 64 for the 1.1B's (docs/quantization.md, "Prompt rows by measurement").
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace accel::inference {

struct ModelConfig;

// The row counts measured, ascending; the last is the most rows our kernels ever take
// (kOurKernelMostRows, layers.h).
inline constexpr int64_t kPromptRowsMeasured[] = {4, 16, 64};

struct PromptRowsTimes {
    int64_t rows = 0;
    double oursMs = 0, libtorchMs = 0; // one pass over the measured copies
};

struct PromptProductTimes {
    // what was timed: "products [rows] x 768 by 768 x 3072 Conv1D (weight [in, out]) (copies: 8)"
    std::string product;
    std::vector<PromptRowsTimes> rows; // kPromptRowsMeasured's counts in order, up to the decisive one
};

struct PromptKernelChoice {
    int64_t ourMostRows = 0; // rows of x up to which our kernels take a product (at least 1)
    std::string reason;      // the product timed, the times per row count, what was chosen
    PromptProductTimes times;
};

// The rule: our kernels take rows of x up to the largest measured row count before the first at
// which libtorch's GEMM measured at least kMeasuredChoiceMargin (decodebound.h) times faster than
// ours (1 when that was the first count measured), libtorch's GEMM every longer product; every
// measured count when libtorch's never was.
PromptKernelChoice choosePromptKernel(const std::function<PromptProductTimes()> &measure);
// Whether libtorch's GEMM measured at least kMeasuredChoiceMargin times faster than ours.
bool libtorchClearlyFaster(const PromptRowsTimes &t);

// Our kernel against libtorch's (at::linear, or at::addmm for a Conv1D, whose weight is [in, out])
// on a product of the model's own MLP input shape, `in` by `out`, at each kPromptRowsMeasured row
// count up to the first at which libtorch's is clearly faster (the rule needs no more), over copies
// of the weight that together hold at least kMeasuredWeightBytes (decodebound.h) in float32 (at
// most kMostMeasuredCopies), best of 5 passes, the two kernels' passes alternating, on the intra-op
// threads as set. A larger weight is cut to the rows that fill kMeasuredWeightBytes.
PromptProductTimes measurePromptProducts(int64_t in, int64_t out, bool conv1d);

// At a load of a model computing in float32: the choice made in this process, else made now on the
// model's MLP input shape (config.json's hidden and intermediate sizes; GPT-2's are Conv1D) and put
// in use.
const PromptKernelChoice &choosePromptKernelAtLoad(const ModelConfig &config);

// The most float32 rows of x our kernels take now: the choice made in this process, else
// kOurKernelMostRows. useOurKernelMostRows sets it (tests, benchmarks).
int64_t ourKernelMostRows();
void useOurKernelMostRows(int64_t rows);

// {"our_kernel_most_rows", "reason", "product", "rows": [{"rows", "ours_ms", "libtorch_ms"}, ..]}:
// generate's --json prompt_kernel, serve's loaded event.
nlohmann::ordered_json promptKernelJson(const PromptKernelChoice &choice);

} // namespace accel::inference
