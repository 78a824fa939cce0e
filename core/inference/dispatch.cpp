#include "core/inference/dispatch.h"

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/memorysize.h"
#include "core/bigmodel/modelstructure.h"
#include "core/bigmodel/offloadfolder.h"
#include "core/common/jsondocument.h"
#include "core/inference/layers.h"
#include "core/inference/offloadhook.h"
#include "core/inference/torchtensors.h"

#include <ATen/detail/CUDAHooksInterface.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace accel::inference {

namespace {

bool coversName(const std::string &prefix, const std::string &name)
{
    return prefix.empty() || name == prefix ||
           (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '.');
}

// Index of the longest device-map key covering `name`, or -1.
int longestMatch(const DeviceMap &map, const std::string &name)
{
    int best = -1;
    for (size_t i = 0; i < map.size(); ++i)
        if (coversName(map[i].first, name) && (best < 0 || map[i].first.size() > map[best].first.size()))
            best = static_cast<int>(i);
    return best;
}

void setDevices(Module &module, const std::string &name, const DeviceMap &map,
                const std::map<std::string, at::Device> &devices, const at::Device &mainDevice)
{
    if (auto *dm = dynamic_cast<DeviceModule *>(&module)) {
        const int match = longestMatch(map, name);
        const auto it = match >= 0 ? devices.find(map[match].second) : devices.end();
        dm->setExecutionDevice(it != devices.end() ? it->second : mainDevice, false);
    }
    for (auto &[local, child] : module.children())
        setDevices(*child, name.empty() ? local : name + "." + local, map, devices, mainDevice);
}

// True when `key` names a module or tensor of the planned tree under which every tensor is one the
// engine does not load: a buffer it computes itself or an alias of a tied weight (and a module
// without tensors, vacuously). Such a key places nothing.
bool placesNothing(const std::string &key, const bigmodel::ModelStructure &planned)
{
    if (!planned.module(key) && !planned.tensor(key))
        return false;
    for (const bigmodel::ModelTensor &t : planned.tensors()) {
        if (coversName(key, t.name) && !t.buffer && t.aliasOf.empty())
            return false;
    }
    return true;
}

// Tied aliases (a tied lm_head) compute with their target's weight on the target's device; a map
// that puts them elsewhere is honoured for the target only, as Accelerate warns for tied
// parameters on different devices.
std::vector<std::string> tiedDeviceWarnings(const DeviceMap &map, const bigmodel::ModelStructure &planned,
                                            const std::map<std::string, NamedParameter> &engine)
{
    std::vector<std::string> warnings;
    for (const bigmodel::ModelTensor &t : planned.tensors()) {
        if (t.aliasOf.empty() || engine.count(t.name))
            continue;
        const int alias = longestMatch(map, t.name), target = longestMatch(map, t.aliasOf);
        if (alias >= 0 && target >= 0 && map[alias].second != map[target].second)
            warnings.push_back(t.name + " is tied to " + t.aliasOf + ": the device map puts it on " +
                               map[alias].second + " and " + t.aliasOf + " on " + map[target].second +
                               "; it computes with " + t.aliasOf + " on " + map[target].second);
    }
    return warnings;
}

bool isIgnoredBuffer(const std::string &key)
{
    // Transformers' non-persistent buffers that old checkpoints still carry.
    auto endsWith = [&](const char *suffix) {
        const std::string s(suffix);
        return key.size() >= s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0;
    };
    return endsWith(".attn.bias") || endsWith(".attn.masked_bias") || endsWith("rotary_emb.inv_freq");
}

} // namespace

Result<DeviceMap> parseDeviceMapJson(const std::string &text)
{
    auto parsed = jsonutil::parseJson(text, {});
    if (!parsed)
        return makeError(ErrorCode::InvalidInput, "device map: " + parsed.error().message);
    const nlohmann::json &j = *parsed;
    if (!j.is_object())
        return makeError(ErrorCode::InvalidInput,
                         "device map: expected a JSON object of module → device; got " + jsonutil::jsonExcerpt(j));
    DeviceMap map;
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it->is_number_integer())
            map.emplace_back(it.key(), std::to_string(it->get<int64_t>()));
        else if (it->is_string())
            map.emplace_back(it.key(), it->get<std::string>());
        else
            return makeError(ErrorCode::InvalidInput, "device map: " + it.key() +
                                                          ": expected \"cpu\", \"disk\" or a GPU index; got " +
                                                          jsonutil::jsonExcerpt(*it));
    }
    return map;
}

Result<DispatchReport> dispatchCheckpoint(Module &model, const bigmodel::Checkpoint &checkpoint,
                                          const DispatchOptions &options)
{
    DispatchReport report;
    std::optional<at::ScalarType> dtype;
    if (!options.computeDType.empty()) {
        auto parsed = parseComputeDType(options.computeDType);
        if (!parsed)
            return tl::unexpected(parsed.error());
        dtype = *parsed;
    }
    DeviceMap map = options.deviceMap.empty() ? DeviceMap{{"", "cpu"}} : options.deviceMap;

    // Devices, main device (first accelerator in the map, else the CPU) and what is offloaded.
    std::map<std::string, at::Device> devices;
    at::Device mainDevice(at::kCPU);
    bool haveMain = false;
    for (const auto &[key, device] : map) {
        if (device == "disk")
            continue;
        auto parsed = options.gpusOnCpu && bigmodel::isGpuDevice(device) ? Result<at::Device>(at::Device(at::kCPU))
                                                                         : parseDevice(device);
        if (!parsed)
            return makeError(parsed.error().code,
                             "device map: " + (key.empty() ? std::string("\"\"") : key) + ": " +
                                 parsed.error().message +
                                 (bigmodel::isGpuDevice(device)
                                      ? " (a map planned for another machine runs its GPU entries on this CPU with "
                                        "gpus_on_cpu)"
                                      : ""));
        if (parsed->is_cuda() && parsed->index() >= at::detail::getCUDAHooks().getNumGPUs())
            return makeError(ErrorCode::Unsupported,
                             "device map: " + (key.empty() ? std::string("\"\"") : key) + ": GPU " + device +
                                 ": this machine has " + std::to_string(at::detail::getCUDAHooks().getNumGPUs()) +
                                 " CUDA device(s) (a map planned for another machine runs its GPU entries on this CPU "
                                 "with gpus_on_cpu)");
        devices.emplace(device, *parsed);
        if (!haveMain && device != "cpu") {
            mainDevice = *parsed;
            report.mainDevice = device;
            haveMain = true;
        }
    }
    auto isOffloaded = [&](const std::string &device) { return device == "disk" || (haveMain && device == "cpu"); };

    // Every key must name a module or a parameter.
    auto parameters = model.namedParameters();
    std::map<std::string, NamedParameter> byName;
    for (const auto &p : parameters)
        byName.emplace(p.name, p);
    for (const auto &[key, device] : map) {
        if (!key.empty() && !model.findModule(key) && !byName.count(key) &&
            !(options.plannedStructure && placesNothing(key, *options.plannedStructure)))
            return makeError(
                ErrorCode::InvalidInput, "device map: '" + key +
                                             "' names no module or parameter of the model (top-level modules: " +
                                             [&] {
                                                 std::string s;
                                                 for (auto &c : model.children())
                                                     s += (s.empty() ? "" : ", ") + c.first;
                                                 return s;
                                             }() +
                                             ")");
    }

    std::optional<bigmodel::OffloadFolder> folder;
    bool writeFolder = false;
    if (!options.offloadFolder.empty()) {
        writeFolder = !std::filesystem::exists(options.offloadFolder + "/index.json");
        auto opened = bigmodel::OffloadFolder::open(options.offloadFolder);
        if (!opened)
            return tl::unexpected(opened.error());
        folder = std::move(*opened);
    }

    std::set<std::string> loaded;
    std::map<Module *, std::shared_ptr<OffloadHook>> hooks;
    for (const bigmodel::TensorInfo *info : checkpoint.tensors()) {
        std::string name = info->name;
        if (!byName.count(name)) {
            for (const auto &child : model.children())
                if (byName.count(child.first + "." + name)) {
                    name = child.first + "." + name;
                    break;
                }
        }
        auto found = byName.find(name);
        if (found == byName.end()) {
            if (isIgnoredBuffer(info->name))
                continue;
            if (options.strict)
                return makeError(ErrorCode::InvalidInput,
                                 info->name + ": not a parameter of the model (strict loading)",
                                 checkpoint.shardOf(info->name)->path());
            report.unexpectedKeys.push_back(info->name);
            continue;
        }
        Parameter *parameter = found->second.parameter;
        if (info->shape != parameter->shape) {
            auto str = [](const std::vector<int64_t> &s) {
                std::string o = "[";
                for (size_t i = 0; i < s.size(); ++i)
                    o += (i ? ", " : "") + std::to_string(s[i]);
                return o + "]";
            };
            return makeError(ErrorCode::InvalidInput,
                             info->name + ": shape " + str(info->shape) + " does not match the model's " +
                                 str(parameter->shape) + " (is config.json the checkpoint's?)",
                             checkpoint.shardOf(info->name)->path());
        }
        const int match = longestMatch(map, name);
        if (match < 0)
            return makeError(ErrorCode::InvalidInput,
                             "device map: no entry covers " + name + " (add it or a parent module, or a \"\" entry)");
        const std::string &device = map[match].second;
        const auto *shard = checkpoint.shardOf(info->name);
        auto view = viewBytes(info->data, info->byteSize(), info->dtype, info->shape, shard->mapping(), info->name);
        if (!view)
            return makeError(view.error().code, view.error().message, shard->path());
        loaded.insert(name);

        if (!isOffloaded(device)) {
            try {
                parameter->value = placeTensor(*view, devices.at(device), parameter->keepDtype ? std::nullopt : dtype);
            } catch (const c10::Error &e) {
                return makeError(ErrorCode::Failed,
                                 name + ": cannot place on " + device + ": " + e.what_without_backtrace());
            }
            ++report.residentTensors;
            report.residentBytes += parameter->value.nbytes();
            if (parameter->value.data_ptr() == view->data_ptr())
                ++report.zeroCopyTensors;
            continue;
        }
        at::Tensor source = *view;
        if (device == "disk" && folder) {
            if (writeFolder || !folder->find(name)) {
                if (auto ok = folder->writeTensor(name, info->dtype, info->shape, info->data, info->byteSize()); !ok)
                    return tl::unexpected(ok.error());
                ++report.offloadFolderWrites;
            }
            auto stored = folder->load(name);
            if (!stored)
                return tl::unexpected(stored.error());
            auto folderView = viewBytes(stored->data, stored->size, stored->dtype, stored->shape, stored->keepAlive,
                                        folder->folder() + "/" + name + ".dat");
            if (!folderView)
                return tl::unexpected(folderView.error());
            source = *folderView;
        }
        parameter->value = at::Tensor();
        auto &hook = hooks[found->second.owner];
        if (!hook) {
            hook = std::make_shared<OffloadHook>(mainDevice, dtype);
            found->second.owner->addHook(hook);
        }
        hook->addSlot({parameter, source});
        ++report.offloadedTensors;
        report.offloadedBytes += source.nbytes();
    }
    if (folder && report.offloadFolderWrites > 0)
        if (auto ok = folder->save(); !ok)
            return tl::unexpected(ok.error());

    std::vector<std::string> missing;
    for (const auto &p : parameters)
        if (!loaded.count(p.name))
            missing.push_back(p.name);
    if (!missing.empty()) {
        std::string list;
        for (size_t i = 0; i < missing.size() && i < 5; ++i)
            list += (i ? ", " : "") + missing[i];
        if (missing.size() > 5)
            list += " and " + std::to_string(missing.size() - 5) + " more";
        return makeError(ErrorCode::InvalidInput,
                         "the checkpoint lacks " + std::to_string(missing.size()) +
                             " parameter(s) of the model: " + list,
                         checkpoint.folder());
    }
    std::map<std::string, at::Device> execution = devices;
    for (auto &[name, device] : execution)
        if (isOffloaded(name))
            device = mainDevice;
    setDevices(model, "", map, execution, mainDevice);
    report.hookedModules = hooks.size();
    if (options.plannedStructure) {
        const auto tied = tiedDeviceWarnings(map, *options.plannedStructure, byName);
        report.warnings.insert(report.warnings.end(), tied.begin(), tied.end());
    }
    if (!report.unexpectedKeys.empty())
        report.warnings.push_back(std::to_string(report.unexpectedKeys.size()) +
                                  " checkpoint tensor(s) are not used by the model, e.g. " +
                                  report.unexpectedKeys.front());
    return report;
}

} // namespace accel::inference
