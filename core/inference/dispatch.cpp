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

namespace {

std::string keyText(const std::string &key)
{
    return key.empty() ? std::string("\"\"") : key;
}

std::string shapeText(const std::vector<int64_t> &shape)
{
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

// The map's devices: the main device is the first accelerator in the map, else the CPU; disk, and
// the CPU beside an accelerator, are offloaded (brought to the main device for each forward).
struct Placement {
    std::map<std::string, at::Device> devices; // every device of the map but disk
    at::Device main{at::kCPU};
    std::string mainName = "cpu";
    bool haveMain = false;
    bool isOffloaded(const std::string &device) const { return device == "disk" || (haveMain && device == "cpu"); }
};

Result<Placement> resolveDevices(const DeviceMap &map, const DispatchOptions &options)
{
    const std::string otherMachine =
        " (a map planned for another machine runs its GPU entries on this CPU with gpus_on_cpu)";
    Placement placement;
    for (const auto &[key, device] : map) {
        if (device == "disk")
            continue;
        auto parsed = options.gpusOnCpu && bigmodel::isGpuDevice(device) ? Result<at::Device>(at::Device(at::kCPU))
                                                                         : parseDevice(device);
        if (!parsed)
            return makeError(parsed.error().code, "device map: " + keyText(key) + ": " + parsed.error().message +
                                                      (bigmodel::isGpuDevice(device) ? otherMachine : ""));
        const int gpus = at::detail::getCUDAHooks().getNumGPUs();
        if (parsed->is_cuda() && parsed->index() >= gpus)
            return makeError(ErrorCode::Unsupported, "device map: " + keyText(key) + ": GPU " + device +
                                                         ": this machine has " + std::to_string(gpus) +
                                                         " CUDA device(s)" + otherMachine);
        placement.devices.emplace(device, *parsed);
        if (!placement.haveMain && device != "cpu") {
            placement.main = *parsed;
            placement.mainName = device;
            placement.haveMain = true;
        }
    }
    return placement;
}

// Every key must name a module or a parameter (or, with the planner's structure, something that
// holds no weight the model loads).
Result<void> checkMapKeys(Module &model, const DeviceMap &map, const std::map<std::string, NamedParameter> &byName,
                          const DispatchOptions &options)
{
    for (const auto &[key, device] : map) {
        if (key.empty() || model.findModule(key) || byName.count(key) ||
            (options.plannedStructure && placesNothing(key, *options.plannedStructure)))
            continue;
        std::string topLevel;
        for (auto &c : model.children())
            topLevel += (topLevel.empty() ? "" : ", ") + c.first;
        return makeError(ErrorCode::InvalidInput,
                         "device map: '" + key +
                             "' names no module or parameter of the model (top-level modules: " + topLevel + ")");
    }
    return {};
}

// Places each checkpoint tensor on its device, or leaves it to an offload hook.
class TensorPlacer {
public:
    TensorPlacer(Module &model, const bigmodel::Checkpoint &checkpoint, const DispatchOptions &options,
                 const DeviceMap &map, const Placement &placement, std::optional<at::ScalarType> dtype,
                 DispatchReport &report)
        : m_checkpoint(checkpoint), m_options(options), m_map(map), m_placement(placement), m_dtype(dtype),
          m_report(report), m_model(model), m_parameters(model.namedParameters())
    {
        for (const auto &p : m_parameters)
            m_byName.emplace(p.name, p);
    }

    const std::map<std::string, NamedParameter> &byName() const { return m_byName; }
    size_t hookedModules() const { return m_hooks.size(); }

    // Opens the offload folder: written when its index.json is missing, read otherwise.
    Result<void> openFolder()
    {
        if (m_options.offloadFolder.empty())
            return {};
        m_writeFolder = !std::filesystem::exists(m_options.offloadFolder + "/index.json");
        auto opened = bigmodel::OffloadFolder::open(m_options.offloadFolder);
        if (!opened)
            return tl::unexpected(opened.error());
        m_folder = std::move(*opened);
        return {};
    }

    Result<void> place(const bigmodel::TensorInfo &info)
    {
        const std::string name = modelName(info.name);
        auto found = m_byName.find(name);
        if (found == m_byName.end()) {
            if (isIgnoredBuffer(info.name))
                return {};
            if (m_options.strict)
                return makeError(ErrorCode::InvalidInput, info.name + ": not a parameter of the model (strict loading)",
                                 m_checkpoint.shardOf(info.name)->path());
            m_report.unexpectedKeys.push_back(info.name);
            return {};
        }
        Parameter *parameter = found->second.parameter;
        if (info.shape != parameter->shape)
            return makeError(ErrorCode::InvalidInput,
                             info.name + ": shape " + shapeText(info.shape) + " does not match the model's " +
                                 shapeText(parameter->shape) + " (is config.json the checkpoint's?)",
                             m_checkpoint.shardOf(info.name)->path());
        const int match = longestMatch(m_map, name);
        if (match < 0)
            return makeError(ErrorCode::InvalidInput,
                             "device map: no entry covers " + name + " (add it or a parent module, or a \"\" entry)");
        const std::string &device = m_map[match].second;
        const auto *shard = m_checkpoint.shardOf(info.name);
        auto view = viewBytes(info.data, info.byteSize(), info.dtype, info.shape, shard->mapping(), info.name);
        if (!view)
            return makeError(view.error().code, view.error().message, shard->path());
        m_loaded.insert(name);
        if (!m_placement.isOffloaded(device)) {
            auto placed = placeResident(name, device, *parameter, *view);
            // A weight left in the file's mapping is read at every forward: its pages are mapped in
            // now, at the load, not by faults during the first prompt.
            if (placed && parameter->value.data_ptr() == view->data_ptr() && shard->mapping())
                shard->mapping()->populate(info.data, info.byteSize());
            return placed;
        }
        return offload(name, device, info, found->second, *view);
    }

    // Fails naming the model's parameters that no checkpoint tensor filled.
    Result<void> checkEverythingLoaded() const
    {
        std::vector<std::string> missing;
        for (const auto &p : m_parameters) // in the model's order
            if (!m_loaded.count(p.name))
                missing.push_back(p.name);
        if (missing.empty())
            return {};
        std::string list;
        for (size_t i = 0; i < missing.size() && i < 5; ++i)
            list += (i ? ", " : "") + missing[i];
        if (missing.size() > 5)
            list += " and " + std::to_string(missing.size() - 5) + " more";
        return makeError(ErrorCode::InvalidInput,
                         "the checkpoint lacks " + std::to_string(missing.size()) +
                             " parameter(s) of the model: " + list,
                         m_checkpoint.folder());
    }

    Result<void> saveFolder()
    {
        if (m_folder && m_report.offloadFolderWrites > 0)
            return m_folder->save();
        return {};
    }

private:
    // Checkpoint keys without the model's base prefix ("h.0..." for "transformer.h.0...") match as
    // transformers' base_model_prefix matches them.
    std::string modelName(const std::string &key) const
    {
        if (m_byName.count(key))
            return key;
        for (const auto &child : m_model.children())
            if (m_byName.count(child.first + "." + key))
                return child.first + "." + key;
        return key;
    }

    Result<void> placeResident(const std::string &name, const std::string &device, Parameter &parameter,
                               const at::Tensor &view)
    {
        try {
            parameter.value =
                placeTensor(view, m_placement.devices.at(device), parameter.keepDtype ? std::nullopt : m_dtype);
        } catch (const c10::Error &e) {
            return makeError(ErrorCode::Failed,
                             name + ": cannot place on " + device + ": " + e.what_without_backtrace());
        }
        ++m_report.residentTensors;
        m_report.residentBytes += parameter.value.nbytes();
        if (parameter.value.data_ptr() == view.data_ptr())
            ++m_report.zeroCopyTensors;
        return {};
    }

    // Disk weights come from the offload folder when there is one (written there first if needed),
    // else from the checkpoint's own mapping; the owner's hook brings them in for each forward.
    Result<void> offload(const std::string &name, const std::string &device, const bigmodel::TensorInfo &info,
                         const NamedParameter &target, const at::Tensor &view)
    {
        at::Tensor source = view;
        if (device == "disk" && m_folder) {
            if (m_writeFolder || !m_folder->find(name)) {
                if (auto ok = m_folder->writeTensor(name, info.dtype, info.shape, info.data, info.byteSize()); !ok)
                    return tl::unexpected(ok.error());
                ++m_report.offloadFolderWrites;
            }
            auto stored = m_folder->load(name);
            if (!stored)
                return tl::unexpected(stored.error());
            auto folderView = viewBytes(stored->data, stored->size, stored->dtype, stored->shape, stored->keepAlive,
                                        m_folder->folder() + "/" + name + ".dat");
            if (!folderView)
                return tl::unexpected(folderView.error());
            source = *folderView;
        }
        target.parameter->value = at::Tensor();
        auto &hook = m_hooks[target.owner];
        if (!hook) {
            hook = std::make_shared<OffloadHook>(m_placement.main, m_dtype);
            target.owner->addHook(hook);
        }
        hook->addSlot({target.parameter, source});
        ++m_report.offloadedTensors;
        m_report.offloadedBytes += source.nbytes();
        return {};
    }

    const bigmodel::Checkpoint &m_checkpoint;
    const DispatchOptions &m_options;
    const DeviceMap &m_map;
    const Placement &m_placement;
    const std::optional<at::ScalarType> m_dtype;
    DispatchReport &m_report;
    Module &m_model;
    const std::vector<NamedParameter> m_parameters;
    std::map<std::string, NamedParameter> m_byName;
    std::set<std::string> m_loaded;
    std::map<Module *, std::shared_ptr<OffloadHook>> m_hooks;
    std::optional<bigmodel::OffloadFolder> m_folder;
    bool m_writeFolder = false;
};

} // namespace

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
    const DeviceMap map = options.deviceMap.empty() ? DeviceMap{{"", "cpu"}} : options.deviceMap;
    auto placement = resolveDevices(map, options);
    if (!placement)
        return tl::unexpected(placement.error());
    report.mainDevice = placement->mainName;

    TensorPlacer placer(model, checkpoint, options, map, *placement, dtype, report);
    if (auto ok = checkMapKeys(model, map, placer.byName(), options); !ok)
        return tl::unexpected(ok.error());
    if (auto ok = placer.openFolder(); !ok)
        return tl::unexpected(ok.error());
    for (const bigmodel::TensorInfo *info : checkpoint.tensors())
        if (auto ok = placer.place(*info); !ok)
            return tl::unexpected(ok.error());
    if (auto ok = placer.saveFolder(); !ok)
        return tl::unexpected(ok.error());
    if (auto ok = placer.checkEverythingLoaded(); !ok)
        return tl::unexpected(ok.error());

    std::map<std::string, at::Device> execution = placement->devices;
    for (auto &[name, device] : execution)
        if (placement->isOffloaded(name))
            device = placement->main;
    setDevices(model, "", map, execution, placement->main);
    report.hookedModules = placer.hookedModules();
    if (options.plannedStructure) {
        const auto tied = tiedDeviceWarnings(map, *options.plannedStructure, placer.byName());
        report.warnings.insert(report.warnings.end(), tied.begin(), tied.end());
    }
    if (!report.unexpectedKeys.empty())
        report.warnings.push_back(std::to_string(report.unexpectedKeys.size()) +
                                  " checkpoint tensor(s) are not used by the model, e.g. " +
                                  report.unexpectedKeys.front());
    return report;
}

} // namespace accel::inference
