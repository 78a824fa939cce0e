#include "core/inference/decodebound.h"

#include "core/inference/causallm.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/layers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

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

double memoryBandwidth()
{
    static const double measured = [] {
        const size_t size = size_t(256) << 20;
        std::unique_ptr<char[]> from(new char[size]), to(new char[size]);
        std::memset(from.get(), 1, size);
        std::memset(to.get(), 0, size); // both touched: page faults are not part of the copies
        double best = 1e30;
        for (int i = 0; i < 5; ++i) {
            const auto start = std::chrono::steady_clock::now();
            std::memcpy(to.get(), from.get(), size);
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        return to[size / 2] == 1 && best > 0 ? double(size) / best : 0.0;
    }();
    return measured;
}

nlohmann::ordered_json decodeBoundJson(InferenceModel &model)
{
    const DecodeBytes bytes = decodeBytes(model);
    const double bandwidth = memoryBandwidth();
    nlohmann::ordered_json bound = {{"weight_bytes_per_token", bytes.perToken},
                                    {"offloaded_bytes_per_token", bytes.offloaded},
                                    {"memory_bandwidth_bytes_per_s", bandwidth}};
    bound["tokens_per_s"] = bandwidth > 0 && bytes.perToken > 0 ? nlohmann::ordered_json(bandwidth / bytes.perToken)
                                                                : nlohmann::ordered_json(nullptr);
    return bound;
}

} // namespace accel::inference
