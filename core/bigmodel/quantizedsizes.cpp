#include "core/bigmodel/quantizedsizes.h"

#include "core/bigmodel/bnbformats.h"
#include "core/inference/quantizationmethod.h" // torch-free: the list of methods, read here too

#include <algorithm>

namespace accel::bigmodel {

namespace {

std::string localName(const std::string &name)
{
    const auto dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

bool quantizable(const ModuleInfo &module)
{
    return module.className == "Linear" || module.className == "Conv1D";
}

} // namespace

bool bnbModuleMatches(const std::string &fullName, const std::vector<std::string> &entries)
{
    const std::string local = localName(fullName);
    for (const std::string &key : entries) {
        if (key == local || key == fullName)
            return true;
        if (fullName.find(key + ".") != std::string::npos)
            return true;
    }
    return false;
}

std::vector<std::string> defaultSkipModules(const ModelStructure &structure)
{
    // get_keys_to_not_convert: the tied tensors' names without ".weight" / ".bias", then the last
    // top-level module when it is not one of them.
    std::vector<std::string> skip;
    auto add = [&](const std::string &name) {
        if (std::find(skip.begin(), skip.end(), name) == skip.end())
            skip.push_back(name);
    };
    for (const auto &group : structure.tiedGroups())
        for (const std::string &tensor : group)
            add(parentName(tensor));
    if (const ModuleInfo *root = structure.module(""); root && !root->children.empty())
        add(root->children.back());
    return skip;
}

std::vector<std::string> splitModuleList(const std::string &text)
{
    std::vector<std::string> names;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t comma = std::min(text.find(',', begin), text.size());
        if (comma > begin)
            names.push_back(text.substr(begin, comma - begin));
        begin = comma + 1;
    }
    return names;
}

Result<QuantizedLoad> parseQuantizedLoad(const std::string &method, const std::optional<std::string> &skipModules,
                                         const std::optional<std::string> &keepInFp32Modules)
{
    QuantizedLoad load;
    auto parsed = inference::parseQuantizationMethod(method);
    if (!parsed)
        return tl::unexpected(parsed.error());
    load.method = *parsed;
    if (skipModules)
        load.skipModules = splitModuleList(*skipModules);
    if (keepInFp32Modules)
        load.keepInFp32Modules = splitModuleList(*keepInFp32Modules);
    if (load.method.empty() && load.skipModules)
        return makeError(ErrorCode::InvalidInput,
                         "skip_modules: only with quantization int8, nf4 or fp4 (it names modules left unquantized)");
    return load;
}

uint64_t quantizedWeightBytes(const std::string &method, uint64_t elements, uint64_t outFeatures)
{
    if (method == "int8")
        return elements + 4 * outFeatures; // CB int8 [out, in], SCB float32 [out]
    const auto n = static_cast<int64_t>(elements);
    return static_cast<uint64_t>(bnb::packedBytes(n) + 4 * bnb::blockCount(n, bnb::kDefaultBlocksize)) +
           4 * 16; // indices, absmax float32 per block, the code
}

Result<void> checkQuantizedLoad(const ModelStructure &structure, const QuantizedLoad &load)
{
    if (load.method.empty())
        return {};
    if (auto method = inference::parseQuantizationMethod(load.method); !method)
        return tl::unexpected(method.error());
    const bool classes = std::any_of(structure.modules().begin(), structure.modules().end(),
                                     [](const ModuleInfo &m) { return quantizable(m); });
    if (!classes)
        return makeError(ErrorCode::InvalidInput,
                         "quantization " + load.method +
                             ": the model's module classes are unknown (no config.json of a known family), so "
                             "its Linear layers cannot be told from other modules; put config.json beside the "
                             "checkpoint");
    return {};
}

QuantizedSizer::QuantizedSizer(const ModelStructure &structure, const QuantizedLoad &load)
    : m_structure(structure), m_load(load), m_skip(load.skipModules ? *load.skipModules : defaultSkipModules(structure))
{
    if (m_load.method.empty())
        return;
    for (const ModuleInfo &module : structure.modules()) {
        if (!quantizable(module) || bnbModuleMatches(module.name, m_load.keepInFp32Modules) ||
            bnbModuleMatches(module.name, m_skip))
            continue;
        const ModelTensor *weight = structure.tensor(module.name.empty() ? "weight" : module.name + ".weight");
        if (weight && weight->aliasOf.empty() && weight->shape.size() == 2)
            m_quantized.push_back(module.name);
    }
    std::sort(m_quantized.begin(), m_quantized.end());
}

std::optional<uint64_t> QuantizedSizer::bytesOf(const ModelTensor &tensor) const
{
    if (!tensor.aliasOf.empty())
        return std::nullopt;
    // keep_in_fp32_modules: every floating parameter whose name holds an entry is cast to float32.
    const bool floating = dtypeIsFloating(tensor.dtype);
    if (floating && !tensor.buffer &&
        std::any_of(m_load.keepInFp32Modules.begin(), m_load.keepInFp32Modules.end(),
                    [&](const std::string &key) { return tensor.name.find(key) != std::string::npos; }))
        return tensor.elements * 4;
    if (m_quantized.empty() || localName(tensor.name) != "weight" || tensor.shape.size() != 2)
        return std::nullopt;
    const std::string module = parentName(tensor.name);
    if (!std::binary_search(m_quantized.begin(), m_quantized.end(), module))
        return std::nullopt;
    const ModuleInfo *info = m_structure.module(module);
    const int64_t out = info && info->className == "Conv1D" ? tensor.shape[1] : tensor.shape[0];
    return quantizedWeightBytes(m_load.method, tensor.elements, static_cast<uint64_t>(out));
}

} // namespace accel::bigmodel
