// `accel estimate-memory JOB.yaml`: the trained model of a built-in recipe job (gpt, mlp) counted
// from the job file alone, without libtorch: the keys and defaults come from the job schema
// (launcher/jobfile.h, the table accel-worker's defaults follow), the layer shapes are those
// accel-worker builds (core/worker/gptrecipe.cpp, recipes.cpp), and the mlp's input width and class
// count from its data file (safetensors header; the targets when mlp.classes is not set).
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>

namespace accel::cli {

struct RecipeModel {
    std::string jobFile;
    std::string recipe; // gpt or mlp
    std::string shape;  // "2 layers, 2 heads, n_embd 64, context 64" / "4 -> 64 -> 64 -> 3"
    uint64_t parameters = 0;
    std::string optimizer;      // adamw or sgd
    int optimizerStates = 2;    // state tensors per parameter: AdamW 2, SGD with momentum 1, without 0
    std::string mixedPrecision; // training.mixed_precision ("" = the launcher's)
};

// True when `path` names a YAML file (the MODEL argument is then a job file).
bool isJobFile(const std::string &path);
// Errors name the job file and the key (an unknown recipe, a bad shape value, a data file without
// `inputs` / `targets`).
Result<RecipeModel> recipeModel(const std::string &jobFile);

} // namespace accel::cli
