#include "core/bigmodel/modulesizes.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace accel::bigmodel {

uint64_t tensorBytes(const ModelTensor &tensor, const std::optional<TargetDType> &target, bool forceTarget)
{
    if (!tensor.aliasOf.empty())
        return 0;
    const double own = dtypeBits(tensor.dtype) / 8.0;
    double perElement = own;
    if (target && dtypeIsFloating(tensor.dtype))
        perElement = forceTarget ? target->bytesPerElement : std::min(own, target->bytesPerElement);
    return static_cast<uint64_t>(std::ceil(static_cast<double>(tensor.elements) * perElement));
}

uint64_t loadedTensorBytes(const ModelTensor &tensor, const std::optional<TargetDType> &target,
                           const QuantizedSizer *sizer, bool forceTarget)
{
    if (sizer)
        if (const std::optional<uint64_t> bytes = sizer->bytesOf(tensor))
            return *bytes;
    return tensorBytes(tensor, target, forceTarget);
}

ModuleSizes::ModuleSizes(const ModelStructure &structure, const std::optional<TargetDType> &target, bool forceTarget,
                         const QuantizedLoad *quantization)
{
    std::optional<QuantizedSizer> sizer;
    if (quantization && (!quantization->method.empty() || !quantization->keepInFp32Modules.empty()))
        sizer.emplace(structure, *quantization);
    // Parameters in module pre-order (named_parameters), then buffers (named_buffers).
    std::vector<const ModuleInfo *> preorder;
    std::vector<const ModuleInfo *> stack = {structure.module("")};
    while (!stack.empty()) {
        const ModuleInfo *m = stack.back();
        stack.pop_back();
        preorder.push_back(m);
        for (auto it = m->children.rbegin(); it != m->children.rend(); ++it)
            stack.push_back(structure.module(*it));
    }
    for (int pass = 0; pass < 2; ++pass) {
        for (const ModuleInfo *m : preorder) {
            for (const std::string &name : pass == 0 ? m->parameters : m->buffers) {
                const ModelTensor *t = structure.tensor(name);
                if (t && t->aliasOf.empty())
                    add(name, loadedTensorBytes(*t, target, sizer ? &*sizer : nullptr, forceTarget), pass == 1);
            }
        }
    }
    if (!m_sizes.count("")) {
        m_sizes[""] = 0;
        m_order.insert(m_order.begin(), "");
    }
}

void ModuleSizes::add(const std::string &name, uint64_t bytes, bool buffer)
{
    auto bump = [&](const std::string &prefix) {
        auto [it, inserted] = m_sizes.emplace(prefix, 0);
        if (inserted)
            m_order.push_back(prefix);
        it->second += bytes;
        if (buffer)
            m_buffers[prefix] += bytes;
    };
    bump("");
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
        bump(name.substr(0, dot));
    bump(name);
}

uint64_t ModuleSizes::of(const std::string &name) const
{
    const auto it = m_sizes.find(name);
    return it == m_sizes.end() ? 0 : it->second;
}

uint64_t ModuleSizes::bufferBytes(const std::string &module) const
{
    const auto it = m_buffers.find(module);
    return it == m_buffers.end() ? 0 : it->second;
}

MaxLayer maxLayerSize(const std::vector<WorkItem> &items, const ModelStructure &structure, const ModuleSizes &sizes,
                      const std::vector<std::string> &noSplit)
{
    MaxLayer result;
    std::vector<WorkItem> stack(items.rbegin(), items.rend());
    while (!stack.empty()) {
        const WorkItem item = std::move(stack.back());
        stack.pop_back();
        const ModuleInfo *m = item.tensor ? nullptr : structure.module(item.name);
        const bool leaf =
            !m || m->children.empty() || std::find(noSplit.begin(), noSplit.end(), m->className) != noSplit.end();
        if (leaf) {
            const uint64_t size = sizes.of(item.name);
            if (size > result.size) {
                result.size = size;
                result.names = {item.name};
            } else if (size == result.size) {
                result.names.push_back(item.name);
            }
            continue;
        }
        for (auto it = m->children.rbegin(); it != m->children.rend(); ++it)
            stack.push_back({*it, false});
    }
    return result;
}

std::vector<WorkItem> rootWorkList(const ModelStructure &structure)
{
    return moduleWorkList(structure, "");
}

std::vector<WorkItem> moduleWorkList(const ModelStructure &structure, const std::string &module)
{
    const ModuleInfo *root = structure.module(module);
    if (!root)
        return {};
    std::vector<WorkItem> items;
    for (const std::string &p : root->parameters)
        items.push_back({p, true});
    for (const std::string &c : root->children)
        items.push_back({c, false});
    for (const std::string &b : root->buffers)
        items.push_back({b, true});
    return items;
}

DeviceBudgets balancedBudgets(const ModelStructure &structure, const ModuleSizes &sizes, DeviceBudgets budgets,
                              const std::vector<std::string> &noSplit, bool lowZero, bool userGaveBudgets)
{
    std::vector<size_t> gpus;
    for (size_t i = 0; i < budgets.size(); ++i) {
        if (isGpuDevice(budgets[i].first) && budgets[i].second > 0)
            gpus.push_back(i);
    }
    const size_t count = gpus.size();
    if (count == 0)
        return budgets;
    if (count == 1) {
        lowZero = false;
        if (!userGaveBudgets) {
            for (auto &[device, budget] : budgets) {
                if (isGpuDevice(device)) {
                    budget = static_cast<int64_t>(std::floor(static_cast<double>(budget) * 0.9));
                    break;
                }
            }
        }
    }
    const uint64_t total = sizes.of("");
    if (lowZero && count == 1)
        lowZero = false;
    int64_t perGpu = static_cast<int64_t>(total / (lowZero ? count - 1 : count));

    // The first module of each no-split class, in the size dict's order.
    std::unordered_map<std::string, uint64_t> firstOfClass;
    uint64_t buffer = 0;
    if (!noSplit.empty()) {
        for (const std::string &name : sizes.order()) {
            if (name.empty())
                continue;
            const ModuleInfo *m = structure.module(name);
            if (!m)
                continue;
            if (std::find(noSplit.begin(), noSplit.end(), m->className) != noSplit.end() &&
                !firstOfClass.count(m->className))
                firstOfClass[m->className] = sizes.of(name);
            if (firstOfClass.size() == std::unordered_set<std::string>(noSplit.begin(), noSplit.end()).size())
                break;
        }
        for (const auto &[cls, size] : firstOfClass)
            buffer = std::max(buffer, size);
    }
    // Mean size of the final modules: modules in the size dict none of whose sub-modules are in it.
    std::unordered_set<std::string> parents;
    std::vector<std::string> modules;
    for (const std::string &name : sizes.order()) {
        if (structure.module(name)) {
            modules.push_back(name);
            if (!name.empty())
                parents.insert(parentName(name));
        }
    }
    uint64_t leafSum = 0, leafCount = 0;
    for (const std::string &name : modules) {
        if (!name.empty() && !parents.count(name)) {
            leafSum += sizes.of(name);
            ++leafCount;
        }
    }
    const uint64_t meanLeaves = leafSum / std::max<uint64_t>(leafCount, 1);
    perGpu += static_cast<int64_t>(1.25 * static_cast<double>(std::max(buffer, meanLeaves)));

    // Every GPU but the last gets min(per_gpu, budget); with low_zero GPU 0 keeps its budget first.
    for (size_t k = 0; k + 1 < count; ++k) {
        auto &budget = budgets[gpus[k]].second;
        if (!(lowZero && k == 0))
            budget = std::min(perGpu, budget);
    }
    if (lowZero) {
        int64_t others = 0;
        for (size_t k = 1; k < count; ++k)
            others += budgets[gpus[k]].second;
        const int64_t minZero = std::max<int64_t>(0, static_cast<int64_t>(total) - others);
        budgets[gpus[0]].second = std::min(minZero, budgets[gpus[0]].second);
    }
    return budgets;
}

} // namespace accel::bigmodel
