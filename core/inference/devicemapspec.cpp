#include "core/inference/devicemapspec.h"

#include "core/bigmodel/devicemap.h"
#include "core/bigmodel/machinebudgets.h"
#include "core/bigmodel/memorysize.h"
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace accel::inference {

namespace {

// A file given as --device_map: a JSON object of module -> device, or a plan that holds one
// under "device_map" (accel device-map --json: schema accel.device-map; the studio's export:
// accel.device-map-plan).
Result<DeviceMap> readMapFile(const std::string &path)
{
    auto text = fileutil::readFile(path);
    if (!text)
        return tl::unexpected(text.error());
    auto parsed = jsonutil::parseJson(*text, path);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const nlohmann::json &j = *parsed;
    if (j.is_object() && j.contains("schema") && j["schema"].is_string()) {
        const std::string schema = j["schema"].get<std::string>();
        if (schema != bigmodel::DeviceMapSchema && schema != bigmodel::DeviceMapPlanSchema)
            return makeError(ErrorCode::InvalidInput,
                             "schema \"" + schema +
                                 "\" holds no device map (expected the output of accel device-map --json, a "
                                 "studio plan, or a JSON object of module -> device)",
                             path);
        if (!j.contains("device_map") || !j["device_map"].is_object())
            return makeError(ErrorCode::InvalidInput, "device_map: expected an object of module -> device", path);
        auto map = parseDeviceMapJson(j["device_map"].dump());
        if (!map)
            return makeError(map.error().code, map.error().message, path);
        return map;
    }
    auto map = parseDeviceMapJson(*text);
    if (!map)
        return makeError(map.error().code, map.error().message, path);
    return map;
}

} // namespace

Result<ResolvedDeviceMap> resolveDeviceMap(const DeviceMapRequest &request, const bigmodel::ModelStructure *planned)
{
    ResolvedDeviceMap resolved;
    const std::string &spec = request.spec;
    if (spec.empty() || spec == "cpu") {
        resolved.map = {{"", "cpu"}};
        return resolved;
    }
    if (auto strategy = bigmodel::parseDeviceMapStrategy(spec)) {
        if (!planned)
            return makeError(ErrorCode::Unsupported,
                             "--device_map " + spec + ": the model's tree could not be planned (see config.json)");
        bigmodel::DeviceMapOptions options;
        options.strategy = *strategy;
        if (!request.maxMemory.empty()) {
            auto budgets = bigmodel::parseMaxMemory(request.maxMemory);
            if (!budgets)
                return makeError(budgets.error().code, "--max_memory: " + budgets.error().message);
            options.maxMemory = *budgets;
        } else {
            auto budgets = bigmodel::machineBudgets("", "");
            if (!budgets)
                return tl::unexpected(budgets.error());
            options.maxMemory = *budgets;
            options.userGaveMaxMemory = false;
        }
        if (!request.computeDType.empty()) {
            auto dtype = bigmodel::parseTargetDType(request.computeDType);
            if (!dtype)
                return makeError(dtype.error().code, "--dtype: " + dtype.error().message);
            options.dtype = *dtype;
        }
        if (request.quantization) {
            if (auto checked = bigmodel::checkQuantizedLoad(*planned, *request.quantization); !checked)
                return tl::unexpected(checked.error());
            options.quantization = request.quantization;
        }
        auto plan = bigmodel::inferAutoDeviceMap(*planned, options);
        resolved.map = std::move(plan.map);
        resolved.strategy = bigmodel::strategyName(*strategy);
        resolved.warnings = std::move(plan.warnings);
        return resolved;
    }
    const size_t first = spec.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && (spec[first] == '{' || spec[first] == '[')) { // JSON text
        auto map = parseDeviceMapJson(spec);
        if (!map)
            return tl::unexpected(map.error());
        resolved.map = std::move(*map);
        return resolved;
    }
    std::error_code error;
    if (!std::filesystem::exists(spec, error))
        return makeError(ErrorCode::InvalidInput,
                         "device map \"" + spec +
                             "\": expected cpu, auto, balanced, balanced_low_0, sequential, a JSON object of module -> "
                             "device, or a file holding one (accel device-map --json writes one)");
    auto map = readMapFile(spec);
    if (!map)
        return tl::unexpected(map.error());
    resolved.map = std::move(*map);
    return resolved;
}

} // namespace accel::inference
