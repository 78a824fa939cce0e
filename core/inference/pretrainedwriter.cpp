#include "core/inference/pretrainedwriter.h"

#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/inference/lora.h"
#include "core/inference/torchtensors.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace accel::inference {

namespace fs = std::filesystem;

const std::vector<std::string> &copiedModelFiles()
{
    static const std::vector<std::string> files{"generation_config.json",
                                                "tokenizer.json",
                                                "tokenizer_config.json",
                                                "special_tokens_map.json",
                                                "added_tokens.json",
                                                "vocab.json",
                                                "merges.txt",
                                                "tokenizer.model",
                                                "chat_template.jinja",
                                                "chat_template.json"};
    return files;
}

Result<PretrainedWrite> writePretrained(CausalLM &model, const std::string &sourceDir, const std::string &outDir,
                                        std::optional<at::ScalarType> dtype, uint64_t maxShardSize)
{
    std::error_code ec;
    fs::create_directories(outDir, ec);
    if (ec)
        return makeError(ErrorCode::Io, "cannot create the folder: " + ec.message(), outDir);
    PretrainedWrite written;
    std::vector<at::Tensor> keep;
    std::vector<bigmodel::TensorToWrite> tensors;
    std::optional<at::ScalarType> stored = dtype;
    for (const auto &p : model.namedParameters()) {
        if (isLoraParameter(p.name))
            continue;
        if (!p.parameter->value.defined())
            return makeError(ErrorCode::Internal, p.name + ": not resident; cannot be written");
        at::Tensor value = p.parameter->value.detach();
        const auto type = dtype && value.is_floating_point() ? *dtype : value.scalar_type();
        value = value.to(at::kCPU, type).contiguous();
        auto code = dtypeFor(type);
        if (!code)
            return makeError(code.error().code, p.name + ": " + code.error().message);
        if (!stored && value.is_floating_point())
            stored = type;
        keep.push_back(value);
        tensors.push_back({p.name, *code, value.sizes().vec(), value.data_ptr(), uint64_t(value.nbytes())});
        written.weightBytes += uint64_t(value.nbytes());
    }
    auto shards = bigmodel::writeShardedSafetensors(outDir, tensors, maxShardSize);
    if (!shards)
        return tl::unexpected(shards.error());
    written.files = shards->files;
    if (!shards->indexFile.empty())
        written.files.push_back(shards->indexFile);
    keep.clear();

    // config.json: the source's, with the stored dtype.
    const std::string configPath = sourceDir + "/config.json";
    // Through the input guard (the model's own limit, 64 levels: the copy is written back with a
    // recursive dump()), keeping the file's key order.
    jsonutil::JsonLimits limits;
    limits.maxBytes = bigmodel::kMaxModelConfigBytes;
    auto text = fileutil::readFile(configPath, limits.maxBytes);
    if (!text)
        return tl::unexpected(text.error());
    auto parsed = jsonutil::parseOrderedJson(*text, configPath, limits);
    if (!parsed)
        return tl::unexpected(parsed.error());
    if (!parsed->is_object())
        return makeError(ErrorCode::InvalidInput, "expected a JSON object at the top", configPath);
    nlohmann::ordered_json config = std::move(*parsed);
    if (stored) {
        auto code = dtypeFor(*stored);
        if (code) {
            written.dtype = bigmodel::torchName(*code);
            config["dtype"] = written.dtype;
            if (config.contains("torch_dtype"))
                config["torch_dtype"] = written.dtype;
        }
    }
    if (auto ok = fileutil::writeFileAtomic(outDir + "/config.json", config.dump(2) + "\n"); !ok)
        return tl::unexpected(ok.error());
    written.files.push_back("config.json");
    for (const std::string &name : copiedModelFiles()) {
        const fs::path from = fs::path(sourceDir) / name;
        if (!fs::is_regular_file(from, ec))
            continue;
        if (fs::equivalent(from, fs::path(outDir) / name, ec))
            continue;
        fs::copy_file(from, fs::path(outDir) / name, fs::copy_options::overwrite_existing, ec);
        if (ec)
            return makeError(ErrorCode::Io, "cannot copy " + from.string() + ": " + ec.message(), outDir);
        written.files.push_back(name);
    }
    return written;
}

} // namespace accel::inference
