#include "core/bigmodel/modelstructure.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace accel::bigmodel {

std::string parentName(const std::string &name)
{
    const size_t dot = name.rfind('.');
    return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

bool naturalLess(const std::string &a, const std::string &b)
{
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const bool da = std::isdigit(static_cast<unsigned char>(a[i]));
        const bool db = std::isdigit(static_cast<unsigned char>(b[j]));
        if (da && db) {
            size_t ei = i, ej = j;
            while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei])))
                ++ei;
            while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej])))
                ++ej;
            const std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
            if (na.size() != nb.size())
                return na.size() < nb.size();
            if (na != nb)
                return na < nb;
            i = ei;
            j = ej;
            continue;
        }
        if (a[i] != b[j])
            return a[i] < b[j];
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j;
}

ModelStructure::ModelStructure()
{
    m_modules.push_back(ModuleInfo{});
    m_moduleIndex.emplace("", 0);
}

void ModelStructure::addModule(const std::string &name, const std::string &className)
{
    auto it = m_moduleIndex.find(name);
    if (it != m_moduleIndex.end()) {
        if (!className.empty())
            m_modules[it->second].className = className;
        return;
    }
    const std::string parent = parentName(name);
    addModule(parent);
    m_modules[m_moduleIndex.at(parent)].children.push_back(name);
    ModuleInfo info;
    info.name = name;
    info.className = className;
    m_moduleIndex.emplace(name, m_modules.size());
    m_modules.push_back(std::move(info));
}

void ModelStructure::insertModule(const std::string &name, const std::string &className, const std::string &before)
{
    const auto parent = m_moduleIndex.find(parentName(name));
    if (name.empty() || m_moduleIndex.count(name) || parent == m_moduleIndex.end())
        return;
    std::vector<std::string> &siblings = m_modules[parent->second].children;
    siblings.insert(std::find(siblings.begin(), siblings.end(), before), name);
    ModuleInfo info;
    info.name = name;
    info.className = className;
    m_moduleIndex.emplace(name, m_modules.size());
    m_modules.push_back(std::move(info));
}

void ModelStructure::addTensor(ModelTensor tensor)
{
    tensor.elements = 1;
    for (int64_t d : tensor.shape)
        tensor.elements *= static_cast<uint64_t>(d);
    const std::string parent = parentName(tensor.name);
    addModule(parent);
    ModuleInfo &owner = m_modules[m_moduleIndex.at(parent)];
    if (m_tensorIndex.count(tensor.name)) {
        m_tensors[m_tensorIndex.at(tensor.name)] = std::move(tensor);
        return;
    }
    (tensor.buffer ? owner.buffers : owner.parameters).push_back(tensor.name);
    m_tensorIndex.emplace(tensor.name, m_tensors.size());
    m_tensors.push_back(std::move(tensor));
}

void ModelStructure::tie(const std::string &alias, const std::string &target)
{
    ModelTensor *a = mutableTensor(alias);
    const ModelTensor *t = tensor(target);
    if (!a || !t || alias == target)
        return;
    a->aliasOf = t->aliasOf.empty() ? target : t->aliasOf;
    a->dtype = t->dtype;
    a->shape = t->shape;
    a->elements = t->elements;
}

const ModuleInfo *ModelStructure::module(const std::string &name) const
{
    const auto it = m_moduleIndex.find(name);
    return it == m_moduleIndex.end() ? nullptr : &m_modules[it->second];
}

const ModelTensor *ModelStructure::tensor(const std::string &name) const
{
    const auto it = m_tensorIndex.find(name);
    return it == m_tensorIndex.end() ? nullptr : &m_tensors[it->second];
}

ModelTensor *ModelStructure::mutableTensor(const std::string &name)
{
    const auto it = m_tensorIndex.find(name);
    return it == m_tensorIndex.end() ? nullptr : &m_tensors[it->second];
}

std::vector<std::vector<std::string>> ModelStructure::tiedGroups() const
{
    std::map<std::string, std::vector<std::string>> groups;
    for (const ModelTensor &t : m_tensors) {
        if (!t.aliasOf.empty())
            groups[t.aliasOf].push_back(t.name);
    }
    std::vector<std::vector<std::string>> result;
    for (auto &[target, aliases] : groups) {
        aliases.push_back(target);
        std::sort(aliases.begin(), aliases.end());
        result.push_back(aliases);
    }
    return result;
}

uint64_t ModelStructure::parameterCount() const
{
    uint64_t total = 0;
    for (const ModelTensor &t : m_tensors) {
        if (!t.buffer && t.aliasOf.empty())
            total += t.elements;
    }
    return total;
}

uint64_t ModelStructure::storageBytes() const
{
    uint64_t total = 0;
    for (const ModelTensor &t : m_tensors) {
        if (t.aliasOf.empty())
            total += (t.elements * static_cast<uint64_t>(dtypeBits(t.dtype)) + 7) / 8;
    }
    return total;
}

} // namespace accel::bigmodel
