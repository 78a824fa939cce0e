#include "core/bigmodel/devicemap.h"

#include "core/bigmodel/modulesizes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace accel::bigmodel {

namespace {

bool contains(const std::vector<std::string> &list, const std::string &value)
{
    return std::find(list.begin(), list.end(), value) != list.end();
}

// Accelerate tests membership with `name + "." in key + "."` (a substring test).
bool inside(const std::string &name, const std::string &key)
{
    return (key + ".").find(name + ".") != std::string::npos;
}

bool startsWith(const std::string &s, const std::string &prefix)
{
    return s.compare(0, prefix.size(), prefix) == 0;
}

bool isSplittable(const ModelStructure &s, const WorkItem &item, const std::vector<std::string> &noSplit)
{
    if (item.tensor)
        return false;
    const ModuleInfo *m = s.module(item.name);
    return m && !m->children.empty() && !contains(noSplit, m->className);
}

// The module's direct parameters, then its children (Accelerate leaves its buffers out).
std::vector<WorkItem> splitItem(const ModelStructure &s, const std::string &name)
{
    std::vector<WorkItem> items;
    const ModuleInfo *m = s.module(name);
    for (const std::string &p : m->parameters)
        items.push_back({p, true});
    for (const std::string &c : m->children)
        items.push_back({c, false});
    return items;
}

// Members of tied groups that have one member inside `name` and one outside: the outside ones.
std::vector<std::string> tiedOutside(const std::string &name, const std::vector<std::vector<std::string>> &groups)
{
    std::vector<std::string> outside;
    for (const auto &group : groups) {
        const bool any = std::any_of(group.begin(), group.end(), [&](const std::string &k) { return inside(name, k); });
        const bool all = std::all_of(group.begin(), group.end(), [&](const std::string &k) { return inside(name, k); });
        if (any && !all) {
            for (const std::string &k : group) {
                if (!inside(name, k))
                    outside.push_back(k);
            }
        }
    }
    return outside;
}

struct SizeWithTies {
    int64_t size = 0;
    std::vector<std::string> modules; // the work-list entries holding the tied tensors
};

// get_module_size_with_ties: each tied tensor brings the work-list entry that holds it.
SizeWithTies sizeWithTies(const std::vector<std::string> &tied, uint64_t moduleSize, const ModuleSizes &sizes,
                          const std::vector<WorkItem> &list)
{
    SizeWithTies result{static_cast<int64_t>(moduleSize), {}};
    for (const std::string &t : tied) {
        const auto holder =
            std::find_if(list.begin(), list.end(), [&](const WorkItem &w) { return startsWith(t, w.name + "."); });
        if (holder == list.end())
            continue;
        result.modules.push_back(holder->name);
        result.size += static_cast<int64_t>(sizes.of(holder->name)) - static_cast<int64_t>(sizes.of(t));
    }
    return result;
}

// fallback_allocate: depth first through the work list (a module that does not fit is replaced
// by its direct parameters and children unless it is a leaf or no-split) for the first entry
// whose size with ties is within `limit`. On success the work list has that entry's ancestors
// split and the entry itself removed.
std::optional<WorkItem> fallbackAllocate(const ModelStructure &s, const ModuleSizes &sizes, std::vector<WorkItem> &work,
                                         int64_t limit, const std::vector<std::string> &noSplit,
                                         const std::vector<std::vector<std::string>> &tiedGroups)
{
    if (limit < 0)
        return std::nullopt;
    std::vector<WorkItem> search = work;
    std::optional<WorkItem> found;
    while (!search.empty()) {
        const WorkItem candidate = search.front();
        search.erase(search.begin());
        const auto ties =
            sizeWithTies(tiedOutside(candidate.name, tiedGroups), sizes.of(candidate.name), sizes, search);
        if (ties.size <= limit) {
            found = candidate;
            break;
        }
        if (!isSplittable(s, candidate, noSplit))
            continue;
        const auto children = splitItem(s, candidate.name);
        search.insert(search.begin(), children.begin(), children.end());
    }
    if (!found)
        return std::nullopt;
    for (size_t dot = found->name.find('.'); dot != std::string::npos; dot = found->name.find('.', dot + 1)) {
        const std::string parent = found->name.substr(0, dot);
        const auto it = std::find_if(work.begin(), work.end(), [&](const WorkItem &w) { return w.name == parent; });
        if (it == work.end() || it->tensor)
            continue;
        const size_t index = static_cast<size_t>(it - work.begin());
        const auto children = splitItem(s, parent);
        work.erase(work.begin() + static_cast<std::ptrdiff_t>(index));
        work.insert(work.begin() + static_cast<std::ptrdiff_t>(index), children.begin(), children.end());
    }
    const auto it = std::find_if(work.begin(), work.end(), [&](const WorkItem &w) { return w.name == found->name; });
    if (it == work.end())
        return std::nullopt;
    work.erase(it);
    return found;
}

std::vector<WorkItem> modulesOnly(const std::vector<WorkItem> &items)
{
    std::vector<WorkItem> result;
    for (const WorkItem &i : items) {
        if (!i.tensor)
            result.push_back(i);
    }
    return result;
}

} // namespace

Result<DeviceMapStrategy> parseDeviceMapStrategy(const std::string &name)
{
    if (name == "auto")
        return DeviceMapStrategy::Auto;
    if (name == "balanced")
        return DeviceMapStrategy::Balanced;
    if (name == "balanced_low_0")
        return DeviceMapStrategy::BalancedLow0;
    if (name == "sequential")
        return DeviceMapStrategy::Sequential;
    return makeError(ErrorCode::InvalidInput,
                     "device map strategy \"" + name + "\" is not one of auto, balanced, balanced_low_0, sequential");
}

const char *strategyName(DeviceMapStrategy strategy)
{
    switch (strategy) {
    case DeviceMapStrategy::Auto:
        return "auto";
    case DeviceMapStrategy::Balanced:
        return "balanced";
    case DeviceMapStrategy::BalancedLow0:
        return "balanced_low_0";
    case DeviceMapStrategy::Sequential:
        break;
    }
    return "sequential";
}

std::string DeviceMapResult::deviceOf(const std::string &name) const
{
    std::string best;
    size_t bestLength = 0;
    bool found = false;
    for (const auto &[key, device] : map) {
        if ((key.empty() || name == key || startsWith(name, key + ".")) && (!found || key.size() > bestLength)) {
            best = device;
            bestLength = key.size();
            found = true;
        }
    }
    return best;
}

void cleanDeviceMap(std::vector<std::pair<std::string, std::string>> &map, const std::string &module)
{
    const std::string prefix = module.empty() ? std::string() : module + ".";
    std::vector<size_t> under;
    std::set<std::string> values;
    for (size_t i = 0; i < map.size(); ++i) {
        if (startsWith(map[i].first, prefix)) {
            under.push_back(i);
            values.insert(map[i].second);
        }
    }
    if (values.size() == 1 && under.size() > 1) {
        const std::string device = *values.begin();
        const size_t position = under.front();
        for (auto it = under.rbegin(); it != under.rend(); ++it)
            map.erase(map.begin() + static_cast<std::ptrdiff_t>(*it));
        map.insert(map.begin() + static_cast<std::ptrdiff_t>(position), {module, device});
    }
    // Recurse over the direct children named by the remaining keys.
    const size_t depth = module.empty() ? 1 : static_cast<size_t>(std::count(module.begin(), module.end(), '.')) + 2;
    std::vector<std::string> children;
    for (const auto &[key, device] : map) {
        if (!startsWith(key, prefix) || key.size() <= module.size())
            continue;
        size_t cut = std::string::npos;
        size_t from = 0;
        for (size_t part = 0; part < depth; ++part) {
            cut = key.find('.', from);
            if (cut == std::string::npos)
                break;
            from = cut + 1;
        }
        const std::string child = cut == std::string::npos ? key : key.substr(0, cut);
        if (!contains(children, child))
            children.push_back(child);
    }
    for (const std::string &child : children)
        cleanDeviceMap(map, child);
}

DeviceMapResult inferAutoDeviceMap(const ModelStructure &s, const DeviceMapOptions &options)
{
    DeviceMapResult result;
    const std::vector<std::string> noSplit = options.noSplitClasses.value_or(s.noSplitClasses);
    result.noSplitClasses = noSplit;
    const QuantizedLoad *quantization = options.quantization ? &*options.quantization : nullptr;
    const ModuleSizes sizes(s, options.dtype, false, quantization);
    result.totalSize = sizes.of("");

    DeviceBudgets budgets = options.maxMemory;
    if (options.strategy != DeviceMapStrategy::Sequential)
        budgets = balancedBudgets(s, sizes, budgets, noSplit, options.strategy == DeviceMapStrategy::BalancedLow0,
                                  options.userGaveMaxMemory);
    result.budgets = budgets;

    std::vector<std::string> devices;
    std::map<std::string, int64_t> maxMemory;
    for (const auto &[device, budget] : budgets) {
        devices.push_back(device);
        maxMemory[device] = budget;
    }
    if (!contains(devices, "disk"))
        devices.push_back("disk");
    std::vector<std::string> gpus;
    for (const std::string &d : devices) {
        if (d != "cpu" && d != "disk")
            gpus.push_back(d);
    }
    std::vector<std::string> mainDevices;
    if (contains(gpus, "mps"))
        mainDevices = {"mps"};
    else if (!gpus.empty())
        mainDevices = {gpus.front(), "cpu"};
    else
        mainDevices = {"cpu"};

    const auto tiedGroups = s.tiedGroups();
    std::map<std::string, int64_t> used;
    std::map<std::string, uint64_t> bufferSizes;
    std::map<std::string, int64_t> minimumNeeded;
    std::vector<std::pair<std::string, std::string>> map;
    size_t current = 0;

    std::vector<WorkItem> work = rootWorkList(s);
    MaxLayer maxLayer = maxLayerSize(work, s, sizes, noSplit);
    result.largestLayer = maxLayer.size;
    result.largestLayerNames = maxLayer.names;

    while (!work.empty()) {
        const WorkItem item = work.front();
        work.erase(work.begin());
        const std::string &name = item.name;
        maxLayer.names.erase(
            std::remove_if(maxLayer.names.begin(), maxLayer.names.end(),
                           [&](const std::string &n) { return n == name || startsWith(n, name + "."); }),
            maxLayer.names.end());
        if (maxLayer.names.empty())
            maxLayer = maxLayerSize(modulesOnly(work), s, sizes, noSplit);
        const int64_t moduleSize = static_cast<int64_t>(sizes.of(name));

        // Tied tensors with one member inside this entry and one outside.
        const std::vector<std::string> tiedParams = tiedOutside(name, tiedGroups);

        const std::string device = devices[std::min(current, devices.size() - 1)];
        const bool unlimited = device == "disk";
        int64_t maxSize = unlimited ? 0 : maxMemory[device];
        int64_t reserved = 0;
        if (contains(mainDevices, device)) {
            maxSize -= static_cast<int64_t>(maxLayer.size);
            reserved = static_cast<int64_t>(maxLayer.size);
        }

        const SizeWithTies ties = sizeWithTies(tiedParams, sizes.of(name), sizes, work);
        const int64_t withTies = ties.size;
        const std::vector<std::string> &tiedModules = ties.modules;

        if (unlimited || used[device] + withTies <= maxSize) {
            used[device] += withTies;
            map.emplace_back(name, device);
            for (const std::string &tiedModule : tiedModules) {
                const auto it =
                    std::find_if(work.begin(), work.end(), [&](const WorkItem &w) { return w.name == tiedModule; });
                if (it != work.end())
                    work.erase(it);
                map.emplace_back(tiedModule, device);
            }
            if (!options.offloadBuffers && !item.tensor)
                bufferSizes[device] += sizes.bufferBytes(name);
            continue;
        }

        // The entry fits but its ties do not: split the first splittable tied module.
        if (!tiedParams.empty() && used[device] + moduleSize <= maxSize) {
            bool split = false;
            for (const std::string &tiedModule : tiedModules) {
                if (!isSplittable(s, {tiedModule, false}, noSplit))
                    continue;
                const auto it =
                    std::find_if(work.begin(), work.end(), [&](const WorkItem &w) { return w.name == tiedModule; });
                const size_t index = static_cast<size_t>(it - work.begin());
                std::vector<WorkItem> next = {item};
                next.insert(next.end(), work.begin(), work.begin() + static_cast<std::ptrdiff_t>(index));
                const auto children = splitItem(s, tiedModule);
                next.insert(next.end(), children.begin(), children.end());
                next.insert(next.end(), work.begin() + static_cast<std::ptrdiff_t>(index) + 1, work.end());
                work = std::move(next);
                maxLayer = maxLayerSize(modulesOnly(work), s, sizes, noSplit);
                split = true;
                break;
            }
            if (split)
                continue;
        }

        // The entry itself does not fit: split it when it can be split.
        if (used[device] + moduleSize >= maxSize && isSplittable(s, item, noSplit)) {
            auto children = splitItem(s, name);
            work.insert(work.begin(), children.begin(), children.end());
            maxLayer = maxLayerSize(modulesOnly(work), s, sizes, noSplit);
            continue;
        }

        if (used[device] == 0 && options.fallbackAllocation && !unlimited) {
            // Any entry that fits beside the reserve goes first; the current one is retried after it.
            const int64_t limit = maxMemory[device] - std::max<int64_t>(static_cast<int64_t>(maxLayer.size), withTies);
            if (auto found = fallbackAllocate(s, sizes, work, limit - used[device], noSplit, tiedGroups)) {
                work.insert(work.begin(), item);
                work.insert(work.begin(), *found);
                continue;
            }
        }

        if (used[device] == 0)
            minimumNeeded[device] = withTies + reserved;
        used[device] += reserved;
        ++current;
        work.insert(work.begin(), item);
    }

    // Offloaded buffers stay on the execution device: warn when they could not fit on any GPU.
    const uint64_t offloadedBuffers = bufferSizes["cpu"] + bufferSizes["disk"];
    if (offloadedBuffers > 0 && !options.offloadBuffers && !gpus.empty()) {
        bool fits = false;
        for (const std::string &gpu : gpus) {
            if (maxMemory.count(gpu) && maxMemory[gpu] >= static_cast<int64_t>(offloadedBuffers) + used[gpu])
                fits = true;
        }
        if (!fits)
            result.warnings.push_back("the buffers of the offloaded modules (" + formatBinarySize(offloadedBuffers) +
                                      ") do not fit on any GPU; consider offload_buffers");
    }
    for (const auto &[device, needed] : minimumNeeded) {
        result.warnings.push_back("no module could be placed on device " + device + " (budget " +
                                  formatBinarySize(static_cast<uint64_t>(std::max<int64_t>(0, maxMemory[device]))) +
                                  ", needs at least " + formatBinarySize(static_cast<uint64_t>(needed)) +
                                  " including the largest-layer reserve)");
    }

    if (options.cleanResult)
        cleanDeviceMap(map);
    result.map = std::move(map);

    // Bytes per device from the final map (each tensor once).
    std::map<std::string, uint64_t> placed;
    std::optional<QuantizedSizer> sizer;
    if (quantization)
        sizer.emplace(s, *quantization);
    for (const ModelTensor &t : s.tensors()) {
        if (!t.aliasOf.empty())
            continue;
        const std::string d = result.deviceOf(t.name);
        placed[d] += loadedTensorBytes(t, options.dtype, sizer ? &*sizer : nullptr);
    }
    for (const std::string &d : devices) {
        if (placed.count(d))
            result.perDevice.emplace_back(d, placed[d]);
    }
    return result;
}

} // namespace accel::bigmodel
