// Resolves what the user points at (a model folder, a config.json, a .safetensors file or an
// index) into a ModelStructure: checkpoint headers give the real tensors, config.json gives the
// family's order, class names and ties; a config alone is planned analytically.
#pragma once

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/modelstructure.h"
#include "core/common/result.h"

#include <optional>
#include <string>

namespace accel::bigmodel {

struct LoadedModel {
    ModelStructure structure;
    std::optional<ModelConfig> config;
    std::optional<Checkpoint> checkpoint; // absent when planned from config.json alone
    std::string name;                     // for titles: the folder or file name
};

// Merges checkpoint tensors into a structure: known tensors take the checkpoint's dtype and shape,
// unknown ones are appended, and lm_head missing from the checkpoint becomes tied to the
// embedding.
ModelStructure structureFromCheckpoint(const Checkpoint &checkpoint, const std::optional<ModelConfig> &config);

// config.json may not declare more layers (`declared`, under the key of `modelType`'s layer count:
// layerCountKey) than the checkpoint's tensor names number ("layers.N." / "h.N."): checked before a
// structure or model is built from it. Checkpoints whose names have no numbered blocks are not
// checked.
Result<void> checkLayersAgainstCheckpoint(int64_t declared, const std::string &modelType, const std::string &configPath,
                                          const Checkpoint &checkpoint);

// A model folder, config.json, .safetensors file or index; a path that does not exist and reads as
// a Hugging Face Hub model id ("ORG/NAME", "ORG/NAME@REVISION") is resolved through the local
// cache and, when the cache lacks it, the Hub's HTTP API (hubmodel.h).
Result<LoadedModel> loadModel(const std::string &path);

// The model of what was read: `model` with its config (or none) and warnings, and a checkpoint
// (or none: planned from the config alone). The config may not declare more layers than the
// checkpoint holds.
Result<LoadedModel> assembleModel(LoadedModel model, std::optional<Checkpoint> checkpoint);

} // namespace accel::bigmodel
