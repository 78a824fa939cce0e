// Loading a checkpoint into a model under a device map (facts 5.6-5.9): every tensor goes to the
// device of its longest matching device-map prefix, floating tensors cast to the compute dtype.
// Tensors that stay on the CPU in their checkpoint dtype are zero-copy views of the mapped
// safetensors. Offloaded modules ("disk", and "cpu" when the main device is a GPU) keep a
// memory-mapped weights map (the checkpoint's own safetensors, or Accelerate's offload folder
// when one is given) and get hooks that bring their weights to the execution device for each
// forward and release them after. Torch-light: no libtorch include.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace accel::bigmodel {
class Checkpoint;
class ModelStructure;
} // namespace accel::bigmodel

namespace accel::inference {

class Module;

using DeviceMap = std::vector<std::pair<std::string, std::string>>; // module/tensor prefix → "cpu" | "disk" | "0"...

struct DispatchOptions {
    DeviceMap deviceMap;      // empty: everything on the CPU
    std::string computeDType; // "float32", "bfloat16", "float16"; empty: keep the checkpoint's
    // Where "disk" weights live: empty reads them lazily from the checkpoint's own safetensors;
    // else Accelerate's offload folder (index.json + <name>.dat), written when its index.json is
    // missing and read through a mapping otherwise.
    std::string offloadFolder;
    bool strict = false; // unexpected checkpoint tensors are errors
    // The model's tree as core/bigmodel plans it (what `accel device-map` and the studio name). A
    // key naming one of its modules or tensors that the engine's tree does not hold is accepted
    // when it holds no weight the engine loads: modules without tensors (dropouts, activations),
    // buffers the engine computes itself (rotary frequencies), a tied head (it computes with the
    // embedding's weight, on the embedding's device; a different device is a warning). Null: only
    // the engine's own names are accepted.
    const bigmodel::ModelStructure *plannedStructure = nullptr;
    // Run what the map puts on GPU indices on the CPU (a map planned for another machine); the
    // first GPU of the map stays the main device, so "cpu" entries are offloaded as beside a GPU.
    bool gpusOnCpu = false;
};

struct DispatchReport {
    std::string mainDevice = "cpu";
    size_t residentTensors = 0;
    size_t offloadedTensors = 0;
    size_t zeroCopyTensors = 0;  // resident tensors that view the mapping in place
    uint64_t residentBytes = 0;  // bytes held on devices (views count: the page cache holds them)
    uint64_t offloadedBytes = 0; // bytes of the offloaded tensors' sources (CPU copy or offload folder)
    size_t hookedModules = 0;
    size_t offloadFolderWrites = 0;
    std::vector<std::string> unexpectedKeys;
    std::vector<std::string> warnings;
};

// Parses a device map given as JSON ({"transformer.h.0": "cpu", "lm_head": 0}).
Result<DeviceMap> parseDeviceMapJson(const std::string &json);

// Loads `checkpoint` into `model` (a tree of DeviceModules) and installs the offload hooks.
// Checkpoint keys without the model's base prefix ("h.0..." for "transformer.h.0...") are
// matched like Transformers' base_model_prefix. Fails on a missing parameter, a shape mismatch,
// a device-map key that names nothing in the model, or a parameter no device-map entry covers.
Result<DispatchReport> dispatchCheckpoint(Module &model, const bigmodel::Checkpoint &checkpoint,
                                          const DispatchOptions &options);

} // namespace accel::inference
