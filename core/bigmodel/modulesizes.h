// Accelerate's size bookkeeping (facts 5.2, 5.4): compute_module_sizes, get_max_layer_size and
// get_balanced_memory over a ModelStructure.
#pragma once

#include "core/bigmodel/dtype.h"
#include "core/bigmodel/memorysize.h"
#include "core/bigmodel/modelstructure.h"
#include "core/bigmodel/quantizedsizes.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace accel::bigmodel {

// Bytes of one tensor when loaded for `target`: floating tensors take min(target, own) bytes per
// element, integer and bool tensors keep their own size. `forceTarget` counts every floating
// tensor at the target size (estimate-memory builds the model in float32 whatever the checkpoint).
uint64_t tensorBytes(const ModelTensor &tensor, const std::optional<TargetDType> &target, bool forceTarget = false);
// The same under a quantized load (quantizedsizes.h): quantized weights and float32-kept parameters at
// their bytes, every other tensor as tensorBytes counts it. `sizer` may be null.
uint64_t loadedTensorBytes(const ModelTensor &tensor, const std::optional<TargetDType> &target,
                           const QuantizedSizer *sizer, bool forceTarget = false);

class ModuleSizes {
public:
    ModuleSizes(const ModelStructure &structure, const std::optional<TargetDType> &target, bool forceTarget = false,
                const QuantizedLoad *quantization = nullptr);

    // Size of a module or tensor name; "" is the whole model. Aliases (tied) count 0.
    uint64_t of(const std::string &name) const;
    bool contains(const std::string &name) const { return m_sizes.count(name) > 0; }
    // Names in the order Accelerate's dict gets them (parameters in module pre-order, then buffers).
    const std::vector<std::string> &order() const { return m_order; }
    // Bytes of the buffers directly or indirectly inside a module.
    uint64_t bufferBytes(const std::string &module) const;

private:
    void add(const std::string &name, uint64_t bytes, bool buffer);
    std::unordered_map<std::string, uint64_t> m_sizes;
    std::unordered_map<std::string, uint64_t> m_buffers;
    std::vector<std::string> m_order;
};

// One entry of Accelerate's work lists: a module or a tensor, by full name.
struct WorkItem {
    std::string name;
    bool tensor = false;
};

struct MaxLayer {
    uint64_t size = 0;
    std::vector<std::string> names;
};

// get_max_layer_size: depth first over the items; a layer is a tensor, a module without children
// or a module whose class is no-split.
MaxLayer maxLayerSize(const std::vector<WorkItem> &items, const ModelStructure &structure, const ModuleSizes &sizes,
                      const std::vector<std::string> &noSplit);

// The root's work list: its own parameters, its children, its own buffers.
std::vector<WorkItem> rootWorkList(const ModelStructure &structure);
// The same list for any module (empty when there is no such module).
std::vector<WorkItem> moduleWorkList(const ModelStructure &structure, const std::string &module);

// get_balanced_memory. `userGaveBudgets` false applies the ×0.9 single-GPU reserve.
DeviceBudgets balancedBudgets(const ModelStructure &structure, const ModuleSizes &sizes, DeviceBudgets budgets,
                              const std::vector<std::string> &noSplit, bool lowZero, bool userGaveBudgets);

} // namespace accel::bigmodel
