// What `--device_map` (and a serve request's "device_map") may name, turned into the map the
// dispatcher loads: "cpu"; one of Accelerate's strategies (auto, balanced, balanced_low_0,
// sequential), planned with core/bigmodel's infer_auto_device_map over the model's planned tree,
// exactly as `accel device-map` plans it; a JSON object of module -> device; or a file holding one
// (the object `accel device-map --json` prints and the studio's exported plan are read through
// their "device_map"). Torch-free.
#pragma once

#include "core/bigmodel/quantizedsizes.h"
#include "core/common/result.h"
#include "core/inference/dispatch.h"

#include <optional>
#include <string>
#include <vector>

namespace accel::bigmodel {
class ModelStructure;
}

namespace accel::inference {

struct DeviceMapRequest {
    std::string spec;         // as given; "" = everything on the CPU
    std::string maxMemory;    // budgets for a strategy ("cpu=8GiB,disk=100GiB"); "" = this machine
    std::string computeDType; // sizes the plan counts (Accelerate's dtype); "" = as stored
    // Quantize on load: the plan counts the quantized layers' bytes, as accel device-map
    // --quantization does (core/bigmodel/quantizedsizes.h).
    std::optional<bigmodel::QuantizedLoad> quantization;
};

struct ResolvedDeviceMap {
    DeviceMap map;
    std::string strategy;              // the strategy planned with, "" when the map was given
    std::vector<std::string> warnings; // the planner's
};

// `planned` is the model's tree (required for a strategy).
Result<ResolvedDeviceMap> resolveDeviceMap(const DeviceMapRequest &request, const bigmodel::ModelStructure *planned);

} // namespace accel::inference
