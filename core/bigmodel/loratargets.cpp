#include "core/bigmodel/loratargets.h"

#include <algorithm>
#include <set>

namespace accel::bigmodel {

namespace {

std::string localName(const std::string &name)
{
    const auto dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

bool adaptable(const ModuleInfo &module)
{
    return module.className == "Linear" || module.className == "Conv1D";
}

} // namespace

bool loraEntryMatches(const std::string &name, const std::string &entry)
{
    const std::string suffix = "." + entry;
    return name == entry ||
           (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

bool loraAllLinearTakes(const std::string &name)
{
    return localName(name) != "lm_head";
}

Result<LoraCount> countLoraParameters(const ModelStructure &structure, const std::vector<std::string> &targets,
                                      int64_t rank)
{
    std::set<std::string> names;
    for (const ModuleInfo &module : structure.modules()) {
        if (adaptable(module))
            names.insert(localName(module.name));
    }
    std::string list;
    for (const std::string &name : names)
        list += (list.empty() ? "" : ", ") + name;
    if (targets.empty())
        return makeError(ErrorCode::InvalidInput, "lora.target_modules: missing (a list of layer names, e.g. [q_proj, "
                                                  "v_proj]; this model's adaptable layers: " +
                                                      list + "; or all-linear)");
    const bool allLinear = targets.size() == 1 && targets.front() == kLoraAllLinear;
    std::vector<bool> taken(structure.modules().size(), false);
    for (const std::string &entry : targets) {
        if (entry.empty())
            return makeError(ErrorCode::InvalidInput, "lora.target_modules: an entry is empty");
        bool matched = false;
        for (size_t i = 0; i < structure.modules().size(); ++i) {
            const ModuleInfo &module = structure.modules()[i];
            if (module.name.empty())
                continue;
            const bool matches =
                allLinear ? adaptable(module) && loraAllLinearTakes(module.name) : loraEntryMatches(module.name, entry);
            if (!matches)
                continue;
            if (!adaptable(module))
                return makeError(ErrorCode::InvalidInput,
                                 "lora.target_modules: " + entry + " matches " + module.name + ", a " +
                                     module.className + ", which LoRA cannot adapt (adaptable layers: " + list + ")");
            matched = true;
            taken[i] = true;
        }
        if (!matched)
            return makeError(ErrorCode::InvalidInput, "lora.target_modules: " + entry +
                                                          " matches no layer of the model (adaptable layers: " + list +
                                                          ")");
    }
    LoraCount count;
    for (size_t i = 0; i < taken.size(); ++i) {
        if (!taken[i])
            continue;
        const ModuleInfo &module = structure.modules()[i];
        const ModelTensor *weight = structure.tensor(module.name + ".weight");
        if (!weight || weight->shape.size() != 2)
            continue;
        count.layers.push_back(module.name);
        count.parameters += uint64_t(rank) * uint64_t(weight->shape[0] + weight->shape[1]);
    }
    return count;
}

} // namespace accel::bigmodel
