#include "core/bigmodel/memoryestimate.h"

#include "core/bigmodel/memorysize.h"
#include "core/bigmodel/modulesizes.h"

#include <algorithm>
#include <numeric>

namespace accel::bigmodel {

namespace {

// Divisor of the float32 size, and bytes of one KV-cache element, for each dtype.
struct EstimateDtype {
    const char *name;
    double divisor;
    bool training;
    double cacheBytes;
};

const EstimateDtype kDtypes[] = {
    {"float32", 1, true, 4}, {"float16", 2, true, 2}, {"bfloat16", 2, true, 2},
    {"fp8", 4, true, 1},     {"int8", 4, false, 2},   {"int4", 8, false, 2},
};

// Characters, not bytes: titles carry the model's name, which may be any UTF-8 text.
size_t characters(const std::string &text)
{
    return static_cast<size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Python's str.center: the odd space goes left when the width is odd, right when it is even.
std::string centre(const std::string &text, size_t width)
{
    const size_t length = characters(text);
    if (length >= width)
        return text;
    const size_t margin = width - length;
    const size_t left = margin / 2 + (margin & width & 1);
    return std::string(left, ' ') + text + std::string(margin - left, ' ');
}

// printf's "%Ns": right-aligned in N characters, never cut.
std::string rightAligned(const std::string &text, size_t width)
{
    const size_t length = characters(text);
    return length >= width ? text : std::string(width - length, ' ') + text;
}

std::string repeat(const std::string &s, size_t n)
{
    std::string out;
    for (size_t i = 0; i < n; ++i)
        out += s;
    return out;
}

} // namespace

Result<MemoryEstimate> estimateMemory(const LoadedModel &model, const std::vector<std::string> &dtypes, int64_t batch,
                                      std::optional<int64_t> context, const QuantizedLoad *quantization)
{
    MemoryEstimate estimate;
    estimate.model = model.name;
    const ModelStructure &s = model.structure;
    estimate.parameters = s.parameterCount();
    // Accelerate builds the model in float32: every floating tensor counts 4 bytes. It builds
    // transformers' AutoModel, the base model without the causal-LM head, so its figures are
    // those of the base module ("model" / "transformer"); the inference weights keep the head.
    const ModuleSizes sizes(s, TargetDType{"float32", 4, true}, true);
    estimate.float32FullModel = sizes.of("");
    const std::string base = baseModelName(s.family);
    const bool hasBase = !base.empty() && s.module(base);
    estimate.baseModule = hasBase ? base : std::string();
    estimate.float32Total = sizes.of(estimate.baseModule);
    const MaxLayer largest = maxLayerSize(moduleWorkList(s, estimate.baseModule), s, sizes, s.noSplitClasses);
    estimate.float32Largest = largest.size;
    estimate.largestLayerNames = largest.names;
    estimate.batch = batch;
    if (batch < 1)
        return makeError(ErrorCode::InvalidInput, "--batch must be at least 1, got " + std::to_string(batch));
    const std::optional<ModelConfig> &c = model.config;
    if (c) {
        estimate.context = context.value_or(std::min<int64_t>(c->maxPositions > 0 ? c->maxPositions : 2048, 4096));
        if (estimate.context < 1)
            return makeError(ErrorCode::InvalidInput,
                             "--context must be at least 1, got " + std::to_string(estimate.context));
    }

    auto inferenceFigures = [&](EstimateRow &row, double cacheBytes) {
        if (!c)
            return;
        const double tokens = static_cast<double>(batch) * static_cast<double>(estimate.context);
        // Keys and values of every layer for every token.
        row.kvCache = tokens * static_cast<double>(c->numLayers) * 2.0 *
                      static_cast<double>(c->numKeyValueHeads * c->headDim) * cacheBytes;
        // One layer's working set during prefill: hidden states and residual (4·h), the MLP's
        // intermediate pair (2·i, for mixtral per routed expert), eager attention scores
        // (heads·T per token), and float32 logits of the last position.
        const double compute = cacheBytes;
        const double experts = c->expertsPerToken > 0 ? static_cast<double>(c->expertsPerToken) : 1.0;
        row.activations =
            tokens *
                (4.0 * static_cast<double>(c->hiddenSize) + 2.0 * experts * static_cast<double>(c->intermediateSize)) *
                compute +
            tokens * static_cast<double>(c->numHeads) * static_cast<double>(estimate.context) * compute +
            static_cast<double>(batch) * static_cast<double>(c->vocabSize) * 4.0;
    };

    for (const std::string &name : dtypes) {
        const EstimateDtype *d = nullptr;
        for (const EstimateDtype &candidate : kDtypes) {
            if (name == candidate.name)
                d = &candidate;
        }
        if (!d)
            return makeError(ErrorCode::InvalidInput,
                             "unknown dtype \"" + name + "\" (valid: float32, float16, bfloat16, fp8, int8, int4)");
        EstimateRow row;
        row.dtype = name;
        const double total = static_cast<double>(estimate.float32Total);
        row.totalSize = total / d->divisor;
        row.weights = static_cast<double>(estimate.float32FullModel) / d->divisor;
        row.largestLayer = static_cast<double>(estimate.float32Largest) / d->divisor;
        if (d->training)
            row.trainingAdam = d->divisor == 1 ? 4 * total : 2 * total;
        inferenceFigures(row, d->cacheBytes);
        estimate.rows.push_back(row);
    }
    if (quantization && !quantization->method.empty()) {
        if (auto checked = checkQuantizedLoad(s, *quantization); !checked)
            return tl::unexpected(checked.error());
        const ModuleSizes quantized(s, TargetDType{"float32", 4, true}, true, quantization);
        EstimateRow row;
        row.dtype = quantization->method;
        row.totalSize = static_cast<double>(quantized.of(estimate.baseModule));
        row.weights = static_cast<double>(quantized.of(""));
        row.largestLayer = static_cast<double>(
            maxLayerSize(moduleWorkList(s, estimate.baseModule), s, quantized, s.noSplitClasses).size);
        inferenceFigures(row, 4);
        estimate.rows.push_back(row);
    }
    return estimate;
}

std::string renderBoxTable(const std::string &title, const std::vector<std::string> &headers,
                           const std::vector<std::vector<std::string>> &rows)
{
    // Accelerate's layout, quirks included: columns as wide as their widest cell, no padding; a
    // title wider than the columns widens the last column by the difference twice over.
    const size_t count = headers.size();
    std::vector<size_t> widths(count);
    for (size_t i = 0; i < count; ++i) {
        widths[i] = characters(headers[i]);
        for (const auto &row : rows)
            widths[i] = std::max(widths[i], i < row.size() ? characters(row[i]) : 0);
    }
    const std::vector<size_t> cellWidths = widths; // what the row format keeps
    const size_t sum = std::accumulate(widths.begin(), widths.end(), size_t(0));
    size_t extra = 0;
    if (characters(title) > sum) {
        const size_t separatorLength = sum + (count - 1) + 2;
        extra = characters(title) > separatorLength ? characters(title) - separatorLength
                                                    : separatorLength - characters(title);
    }
    widths.back() += extra;
    auto rule = [&](const char *left, const char *middle, const char *right, size_t trailing) {
        std::string out = left;
        for (size_t i = 0; i < count; ++i)
            out += (i ? middle : "") + repeat("─", widths[i]);
        return out + repeat("─", trailing) + right + "\n";
    };
    const std::string separator = rule("├", "┼", "┤", extra);
    std::string table = rule("┌", "─", "┐", extra);
    table += "│" + centre(title, characters(separator) - 3) + "│\n";
    table += rule("├", "┬", "┤", extra);
    widths.back() += extra;
    auto line = [&](const std::vector<std::string> &values) {
        std::string out = "│";
        for (size_t i = 0; i < count; ++i)
            out += rightAligned(centre(i < values.size() ? values[i] : std::string(), widths[i]), cellWidths[i]) + "│";
        return out + "\n";
    };
    table += line(headers);
    table += separator;
    for (const auto &row : rows)
        table += line(row);
    table += rule("└", "┴", "┘", 0);
    return table;
}

std::string renderEstimate(const MemoryEstimate &e)
{
    std::vector<std::vector<std::string>> rows;
    for (const EstimateRow &r : e.rows)
        rows.push_back({r.dtype, formatAccelerateSize(r.largestLayer), formatAccelerateSize(r.totalSize),
                        r.trainingAdam ? formatAccelerateSize(*r.trainingAdam) : std::string("N/A")});
    std::string out = renderBoxTable("Memory Usage for loading `" + e.model + "`",
                                     {"dtype", "Largest Layer", "Total Size", "Training using Adam"}, rows);
    if (e.context > 0) {
        std::vector<std::vector<std::string>> inference;
        for (const EstimateRow &r : e.rows)
            inference.push_back({r.dtype, formatAccelerateSize(r.weights), formatAccelerateSize(r.kvCache.value_or(0)),
                                 formatAccelerateSize(r.activations.value_or(0)),
                                 formatAccelerateSize(r.weights + r.kvCache.value_or(0) + r.activations.value_or(0))});
        out +=
            renderBoxTable("Inference with batch " + std::to_string(e.batch) + ", context " + std::to_string(e.context),
                           {"dtype", "Weights", "KV cache", "Activations", "Total"}, inference);
    }
    std::string names;
    for (const std::string &n : e.largestLayerNames)
        names += (names.empty() ? "" : ", ") + (n.empty() ? std::string("(root)") : n);
    if (names.size() > 100)
        names = names.substr(0, 97) + "...";
    out += "Parameters: " + std::to_string(e.parameters) + "; largest layer: " + names + "\n";
    return out;
}

} // namespace accel::bigmodel
