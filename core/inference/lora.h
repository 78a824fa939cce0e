// LoRA adapters on the model families, in peft's layout: a folder with adapter_config.json
// (peft_type LORA, r, lora_alpha, target_modules, ...) and adapter_model.safetensors holding
// "base_model.model.<module>.lora_A.weight" [r, in] and "...lora_B.weight" [out, r]. The training
// recipe attaches and saves them; inference (--adapter) and `merge-lora` load them. Only what
// the branch out += scaling * B(A(x)) covers is read; anything else peft can describe (DoRA,
// per-module ranks, LoRA biases, modules_to_save, ...) is refused by name. Includes libtorch.
#pragma once

#include "core/common/result.h"
#include "core/inference/causallm.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace accel::inference {

struct LoraConfig {
    int64_t rank = 8;
    double alpha = 8;
    double dropout = 0.0;
    bool rslora = false; // scaling alpha / sqrt(r) instead of alpha / r
    // peft's matching: a module whose full name equals an entry or ends with "." + entry.
    // "all-linear" takes every Linear / Conv1D except the output layer (lm_head).
    std::vector<std::string> targetModules;
    double scaling() const;
};

// The adaptable layers `config` selects, by full name. Errors name the entries that match
// nothing and those that match a layer LoRA cannot adapt (an Embedding, a norm, a block).
Result<std::vector<std::pair<std::string, LoraAdaptable *>>> loraTargets(CausalLM &model, const LoraConfig &config);

// Attaches a LoRA branch to every target and initialises it as peft does (lora_A
// kaiming-uniform with a = sqrt(5), that is U(-1/sqrt(in), 1/sqrt(in)), drawn from `generator`;
// lora_B zeros), in float32 on each layer's execution device. Returns the adapted layers' names.
Result<std::vector<std::string>> attachLora(CausalLM &model, const LoraConfig &config, at::Generator generator);

// Writes `dir`/adapter_config.json and adapter_model.safetensors (float32), atomically.
// `baseModel` is recorded as base_model_name_or_path.
Result<void> saveLoraAdapter(CausalLM &model, const LoraConfig &config, const std::string &dir,
                             const std::string &baseModel);

// Reads an adapter folder's adapter_config.json (errors name the file and the key).
Result<LoraConfig> readLoraConfig(const std::string &dir);

// Attaches the adapter's branches to the modules its tensors name and loads their values (on each
// layer's execution device, in `dtype` when given, else float32). Returns the adapted layers.
Result<std::vector<std::string>> loadLoraAdapter(CausalLM &model, const std::string &dir,
                                                 std::optional<at::ScalarType> dtype = {});

// Folds every LoRA branch into its layer's weight (W += scaling * B @ A, transposed for Conv1D),
// computed in float32 and stored in the weight's dtype, and removes nothing else: the branches stay
// attached (a caller writing the model leaves lora_A / lora_B out).
void mergeLora(CausalLM &model);

// Tensor parallelism (tensorparallel.h; the branches attached after the split): draws every branch's
// lora_A again from `generator` as attachLora draws it on the whole model, in place, keeping for
// the layers `splitInputs` names (row-wise: their inputs split in `size` parts) this rank's columns,
// so that the adapter starts as one process's would.
Result<void> redrawLoraA(CausalLM &model, const LoraConfig &config, at::Generator generator,
                         const std::set<std::string> &splitInputs, int rank, int size);

// A layer whose forward does not run its LoRA branch (a row-wise tensor-parallel Linear, whose
// output is summed over the group): each forward multiplies by W + scaling * lora_B @ lora_A in
// place of W, autograd reaching both factors, which adds the branch to this rank's part of the
// output before the sum. The branch's input is not dropped out (lora.dropout 0 only).
void mergeLoraInEachForward(LoraAdaptable &layer);

// Whether a parameter's full name belongs to a LoRA branch ("...lora_A.weight").
bool isLoraParameter(const std::string &name);

} // namespace accel::inference
