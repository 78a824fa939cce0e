// The structure of a model without its weights: the tree of modules (dotted names, registration
// order, class names) and the tensors each one owns directly, with dtypes and shapes. Tied weights
// are aliases of the tensor they share storage with and are counted once, like PyTorch's
// named_parameters(). Built from checkpoint headers or computed from config.json alone
// (modelfamilies.h).
#pragma once

#include "core/bigmodel/dtype.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace accel::bigmodel {

struct ModelTensor {
    std::string name; // full dotted name: "model.layers.0.mlp.up_proj.weight"
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t elements = 0;
    bool buffer = false; // a buffer (rotary frequencies...), not a parameter
    std::string aliasOf; // tied: shares storage with this tensor and is not counted again
};

struct ModuleInfo {
    std::string name; // "" is the root
    std::string className;
    std::vector<std::string> children;   // full names, registration order
    std::vector<std::string> parameters; // direct parameters (aliases included), full names
    std::vector<std::string> buffers;    // direct buffers, full names
};

class ModelStructure {
public:
    ModelStructure();

    // Registers a module (and its missing parents) in order; sets the class name when given.
    void addModule(const std::string &name, const std::string &className = {});
    // Registers a module under its existing parent just before the sibling `before` (appended when
    // `before` is not one of the parent's children). Does nothing when the module exists or its
    // parent does not.
    void insertModule(const std::string &name, const std::string &className, const std::string &before);
    // Registers a tensor under its module (the name up to the last dot).
    void addTensor(ModelTensor tensor);
    // Makes `alias` share storage with `target` (both must be tensors); used for tied weights.
    void tie(const std::string &alias, const std::string &target);

    const ModuleInfo *module(const std::string &name) const;
    const ModelTensor *tensor(const std::string &name) const;
    ModelTensor *mutableTensor(const std::string &name);
    const std::vector<ModelTensor> &tensors() const { return m_tensors; } // registration order
    const std::vector<ModuleInfo> &modules() const { return m_modules; }  // registration order

    // Groups of names sharing storage, each sorted, like Accelerate's find_tied_parameters().
    std::vector<std::vector<std::string>> tiedGroups() const;

    uint64_t parameterCount() const; // parameters only, each storage once
    uint64_t storageBytes() const;   // parameters and buffers in their own dtypes, each storage once

    std::string family;                      // "llama", "gpt2"... empty when unknown
    std::string architecture;                // "LlamaForCausalLM"
    std::vector<std::string> noSplitClasses; // the family's _no_split_modules
    std::vector<std::string> warnings;

private:
    std::vector<ModelTensor> m_tensors;
    std::unordered_map<std::string, size_t> m_tensorIndex;
    std::vector<ModuleInfo> m_modules;
    std::unordered_map<std::string, size_t> m_moduleIndex;
};

// The module part of a tensor name ("a.b.weight" → "a.b") and the last component ("weight").
std::string parentName(const std::string &name);
// Compares dotted names with numeric components as numbers ("layers.2" < "layers.10").
bool naturalLess(const std::string &a, const std::string &b);

} // namespace accel::bigmodel
