// Accelerate's infer_auto_device_map (facts 5.5) over a ModelStructure, with the "auto",
// "balanced", "balanced_low_0" and "sequential" strategies, no-split classes, tied weights, the
// largest-layer reserve on the main devices, CPU then disk offload and clean_device_map merging.
#pragma once

#include "core/bigmodel/dtype.h"
#include "core/bigmodel/memorysize.h"
#include "core/bigmodel/modelstructure.h"
#include "core/bigmodel/quantizedsizes.h"
#include "core/common/result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace accel::bigmodel {

// A device map as `accel device-map --json` writes it, and the studio's plan file; accel infer /
// generate --device_map FILE read both.
inline constexpr const char *DeviceMapSchema = "accel.device-map";
inline constexpr const char *DeviceMapPlanSchema = "accel.device-map-plan";
inline constexpr int DeviceMapVersion = 1; // both schemas

enum class DeviceMapStrategy { Auto, Balanced, BalancedLow0, Sequential };

Result<DeviceMapStrategy> parseDeviceMapStrategy(const std::string &name);
const char *strategyName(DeviceMapStrategy strategy);

struct DeviceMapOptions {
    DeviceBudgets maxMemory;       // ordered budgets (memorysize.h); "disk" is appended when missing
    bool userGaveMaxMemory = true; // false when budgets come from this machine (×0.9 single-GPU reserve)
    DeviceMapStrategy strategy = DeviceMapStrategy::Auto;
    std::optional<std::vector<std::string>> noSplitClasses; // default: the model family's
    std::optional<TargetDType> dtype;
    // Quantized on load: modules are planned at the bytes they hold quantized (quantizedsizes.h);
    // `dtype` is then the compute dtype of what stays unquantized.
    std::optional<QuantizedLoad> quantization;
    bool offloadBuffers = false;
    bool cleanResult = true;
    bool fallbackAllocation = false;
};

struct DeviceMapResult {
    // module or tensor name → device ("0", "1"..., "mps", "cpu", "disk"), in placement order.
    std::vector<std::pair<std::string, std::string>> map;
    DeviceBudgets budgets;                                   // the budgets the algorithm used (after balancing)
    std::vector<std::pair<std::string, uint64_t>> perDevice; // bytes placed on each device, in device order
    uint64_t totalSize = 0;
    uint64_t largestLayer = 0;
    std::vector<std::string> largestLayerNames;
    std::vector<std::string> noSplitClasses;
    std::vector<std::string> warnings;

    std::string deviceOf(const std::string &name) const; // longest matching prefix, "" when none
};

DeviceMapResult inferAutoDeviceMap(const ModelStructure &structure, const DeviceMapOptions &options);

// clean_device_map: merges keys whose every sub-key shares a device into their parent (recursive).
// The merged key takes the place of its first sub-key.
void cleanDeviceMap(std::vector<std::pair<std::string, std::string>> &map, const std::string &module = {});

} // namespace accel::bigmodel
