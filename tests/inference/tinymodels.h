// Tiny random checkpoints for the inference tests: config.json plus model.safetensors written with
// core/bigmodel's writer, and the weights kept in memory for the naive references.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>

namespace accel::test {

struct TinyModel {
    std::string dir;
    std::map<std::string, at::Tensor> weights; // float32, by Hugging Face name
    int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kvHeads = 0, inter = 0, positions = 0;
    double eps = 1e-5, theta = 10000.0;
    bool tied = false, qkvBias = false;
};

// modelType: "gpt2", "llama", "mistral" or "qwen2". `storeAs` is the safetensors dtype of the
// floating weights (at::kFloat or at::kBFloat16); the weights map holds those values in float32.
// With `withoutBasePrefix` gpt2 keys are written without "transformer." like OpenAI's checkpoints.
// `vocab` > 0 replaces the family's tiny vocabulary (e.g. to match a tokenizer.json fixture).
TinyModel writeTinyModel(const std::string &dir, const std::string &modelType, uint64_t seed,
                         at::ScalarType storeAs = at::kFloat, bool tied = true, bool withoutBasePrefix = false,
                         int64_t vocab = 0);

// Plain no-cache forward passes written straight from the architecture descriptions.
at::Tensor referenceGpt2(const TinyModel &m, const at::Tensor &ids);
at::Tensor referenceLlama(const TinyModel &m, const at::Tensor &ids);

} // namespace accel::test
