#include "core/inference/promptkernel.h"

#include "core/inference/decodebound.h"
#include "core/inference/floatgemv.h"
#include "core/inference/gemvcolumns.h"
#include "core/inference/kernelisa.h"
#include "core/inference/layers.h"
#include "core/inference/modelconfig.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>

namespace accel::inference {

static_assert(std::end(kPromptRowsMeasured)[-1] == kOurKernelMostRows,
              "the last row count measured is the most rows our kernels take");

namespace {

std::atomic<int64_t> g_ourMostRows{kOurKernelMostRows};

// Passes of each kernel at each row count, the fastest taken. With 3, the 1.1B Llama's 64-row
// products on the AMX Xeon measured libtorch's GEMM 1.2-1.5x faster from one load to the next, and
// the choice moved between 16 and 64 rows with it.
constexpr int kPromptMeasurePasses = 5;

} // namespace

bool libtorchClearlyFaster(const PromptRowsTimes &t)
{
    return t.libtorchMs > 0 && t.libtorchMs * kMeasuredChoiceMargin <= t.oursMs;
}

PromptKernelChoice choosePromptKernel(const std::function<PromptProductTimes()> &measure)
{
    PromptKernelChoice choice;
    choice.times = measure();
    choice.ourMostRows = 1;
    std::string measured;
    int64_t libtorchFrom = 0; // the first row count at which libtorch's GEMM measured the margin faster
    for (const PromptRowsTimes &t : choice.times.rows) {
        measured += (measured.empty() ? "" : ", ") + std::to_string(t.rows) + " rows " + twoDecimals(t.oursMs) +
                    " ms ours, " + twoDecimals(t.libtorchMs) + " ms libtorch's";
        if (libtorchFrom > 0)
            continue;
        if (libtorchClearlyFaster(t))
            libtorchFrom = t.rows;
        else
            choice.ourMostRows = t.rows;
    }
    const std::string margin = measuredChoiceMarginText();
    choice.reason = "float32 " + choice.times.product + ": " + measured + "; ours up to " +
                    std::to_string(choice.ourMostRows) + (choice.ourMostRows == 1 ? " row" : " rows") +
                    (libtorchFrom > 0 ? ", libtorch's GEMM beyond (at least " + margin + "x faster at " +
                                            std::to_string(libtorchFrom) + " rows)"
                                      : " (libtorch's GEMM was not " + margin + "x faster at any)");
    return choice;
}

PromptProductTimes measurePromptProducts(int64_t in, int64_t out, bool conv1d)
{
    c10::InferenceMode guard;
    PromptProductTimes times;
    // A prompt reads each layer's weights from memory: copies that together hold kMeasuredWeightBytes
    // in float32, a larger layer cut to the rows that fill it.
    const MeasuredShape shape = measuredShape(in, out, conv1d, int64_t(sizeof(float)));
    in = shape.in;
    out = shape.out;
    const int64_t copies = shape.copies;
    std::vector<at::Tensor> weights;
    for (int64_t c = 0; c < copies; ++c) // constant values: the time does not depend on them
        weights.push_back(at::full(conv1d ? std::vector<int64_t>{in, out} : std::vector<int64_t>{out, in}, 0.02f));
    const at::Tensor bias = at::zeros({out});
    const KernelIsa isa = hostKernelIsa();
    for (const int64_t rows : kPromptRowsMeasured) {
        const at::Tensor x = at::full({rows, in}, 0.5f);
        at::Tensor y = at::empty({rows, out});
        auto pass = [&](bool ours) {
            const auto start = std::chrono::steady_clock::now();
            for (const at::Tensor &w : weights) {
                if (ours && conv1d)
                    f32::gemmColumns(isa, x.data_ptr<float>(), rows, in, w.data_ptr<float>(), bias.data_ptr<float>(),
                                     out, y.data_ptr<float>());
                else if (ours)
                    f32::gemv(isa, x.data_ptr<float>(), rows, in, w.data_ptr<float>(), nullptr, out,
                              y.data_ptr<float>());
                else if (conv1d)
                    y = at::addmm(bias, x, w);
                else
                    y = at::linear(x, w);
            }
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        };
        PromptRowsTimes t;
        t.rows = rows;
        t.oursMs = t.libtorchMs = 1e30;
        for (int p = 0; p < kPromptMeasurePasses; ++p) { // alternating: both meet the same load from others
            t.oursMs = std::min(t.oursMs, pass(true));
            t.libtorchMs = std::min(t.libtorchMs, pass(false));
        }
        times.rows.push_back(t);
        if (libtorchClearlyFaster(t)) // the rule stops here: the longer products are libtorch's
            break;
    }
    times.product = "products " + shape.product("[rows]", conv1d) + " (copies: " + std::to_string(copies) + ")";
    return times;
}

const PromptKernelChoice &choosePromptKernelAtLoad(const ModelConfig &config)
{
    static std::mutex mutex;
    static std::optional<PromptKernelChoice> made;
    std::lock_guard<std::mutex> lock(mutex);
    if (!made) {
        // The model's own MLP input product, in its own layer: GPT-2's are Conv1D (weights [in, out]).
        const int64_t in = config.hiddenSize > 0 ? config.hiddenSize : 2048,
                      out = config.intermediateSize > 0 ? config.intermediateSize : 8192;
        made = choosePromptKernel([&] { return measurePromptProducts(in, out, config.modelType == "gpt2"); });
        useOurKernelMostRows(made->ourMostRows);
    }
    return *made;
}

int64_t ourKernelMostRows()
{
    return g_ourMostRows.load(std::memory_order_relaxed);
}

void useOurKernelMostRows(int64_t rows)
{
    g_ourMostRows.store(std::clamp<int64_t>(rows, 1, kOurKernelMostRows), std::memory_order_relaxed);
}

nlohmann::ordered_json promptKernelJson(const PromptKernelChoice &choice)
{
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const PromptRowsTimes &t : choice.times.rows)
        rows.push_back({{"rows", t.rows}, {"ours_ms", t.oursMs}, {"libtorch_ms", t.libtorchMs}});
    return {{"our_kernel_most_rows", choice.ourMostRows},
            {"reason", choice.reason},
            {"product", choice.times.product},
            {"rows", std::move(rows)}};
}

} // namespace accel::inference
