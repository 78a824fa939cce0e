// `accel estimate-memory JOB.yaml`: the trained model of a built-in recipe job (gpt, mlp,
// causal_lm) counted from the job file alone, without libtorch: the keys and defaults come from the
// job schema (launcher/jobfile.h, the table accel-worker's defaults follow), the layer shapes are
// those accel-worker builds (core/worker/gptrecipe.cpp, recipes.cpp), the mlp's input width and
// class count from its data file (safetensors header; the targets when mlp.classes is not set), and
// a causal_lm model from its folder's safetensors headers and config.json, with LoRA's adapters
// counted by peft's target_modules rule (core/bigmodel/loratargets.h).
#pragma once

#include "core/bigmodel/modelloader.h"
#include "core/common/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace accel::cli {

struct RecipeModel {
    std::string jobFile;
    std::string recipe; // gpt, mlp or causal_lm
    // "2 layers, 2 heads, n_embd 64, context 64" / "4 -> 64 -> 64 -> 3" / "llama, 2 layers, hidden 32"
    std::string shape;
    std::string family;      // causal_lm: config.json's model_type
    uint64_t parameters = 0; // every parameter, trained or not
    // causal_lm with LoRA: the adapters are trained (float32), the base is frozen: held as the plan
    // holds parameters, without gradients or optimizer state.
    uint64_t trainable = 0;         // == parameters without LoRA
    uint64_t frozenStoredBytes = 0; // the frozen base in the checkpoint's dtypes
    int64_t loraRank = 0;
    std::vector<std::string> loraLayers;
    std::string optimizer;      // adamw or sgd
    int optimizerStates = 2;    // state tensors per parameter: AdamW 2, SGD with momentum 1, without 0
    std::string mixedPrecision; // training.mixed_precision ("" = the launcher's)
    // causal_lm: the model folder as read (its tensors split under parallelism_config tp_size) and
    // training.vocab_parallel / training.sequence_parallel.
    std::shared_ptr<const bigmodel::LoadedModel> loaded;
    bool vocabParallel = false;
    bool sequenceParallel = false;
};

// True when `path` names a YAML file (the MODEL argument is then a job file).
bool isJobFile(const std::string &path);
// Errors name the job file and the key (an unknown recipe, a bad shape value, a data file without
// `inputs` / `targets`, a model folder that cannot be read, a LoRA target that matches nothing).
Result<RecipeModel> recipeModel(const std::string &jobFile);

} // namespace accel::cli
