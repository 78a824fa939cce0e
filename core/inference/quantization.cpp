#include "core/inference/quantization.h"

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/groupquant.h"
#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/quantizedsizes.h"
#include "core/common/jsondocument.h"
#include "core/inference/causallm.h"
#include "core/inference/feedforward.h"
#include "core/inference/quantizedweight.h"
#include "core/inference/torchtensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace accel::inference {

namespace {

using nlohmann::json;

template <typename Layer>
void collectLayers(Module &module, const std::string &name, std::vector<std::pair<std::string, Layer *>> &out)
{
    if (auto *layer = dynamic_cast<Layer *>(&module))
        out.emplace_back(name, layer);
    for (auto &[local, child] : module.children())
        collectLayers(*child, name.empty() ? local : name + "." + local, out);
}

template <typename Layer = Linear>
std::vector<std::pair<std::string, Layer *>> linears(CausalLM &model)
{
    std::vector<std::pair<std::string, Layer *>> out;
    collectLayers(model, "", out);
    return out;
}

const bigmodel::TensorInfo *tensorOf(const bigmodel::Checkpoint &checkpoint, const std::string &name)
{
    for (const bigmodel::TensorInfo *info : checkpoint.tensors())
        if (info->name == name)
            return info;
    return nullptr;
}

// bitsandbytes' packed quant_state: the JSON text of its non-tensor items as uint8 bytes.
Result<json> quantState(const bigmodel::TensorInfo &info)
{
    if (info.dtype != bigmodel::DType::U8 || !info.data)
        return makeError(ErrorCode::InvalidInput, info.name + ": expected the uint8 bytes of a JSON object");
    const std::string text(reinterpret_cast<const char *>(info.data), info.byteSize());
    auto parsed = jsonutil::parseJson(text, info.name);
    if (!parsed)
        return tl::unexpected(parsed.error());
    if (!parsed->is_object())
        return makeError(ErrorCode::InvalidInput, info.name + ": expected a JSON object");
    return *parsed;
}

at::Tensor floatCode(const at::Tensor &t)
{
    return t.to(at::kFloat).contiguous();
}

// GPTQ / AWQ integers unpacked by core/bigmodel's groupquant into [out, in] indices and [out, groups]
// scales and zero points; act-order inputs sorted by group.
Result<QuantizedWeight> groupWeight(const std::map<std::string, at::Tensor> &v, const std::string &method, int bits,
                                    int64_t groupSize, bigmodel::groupquant::GptqFormat format, int64_t in, int64_t out,
                                    const std::string &what)
{
    const at::Tensor qweight = v.at("qweight").contiguous(), qzeros = v.at("qzeros").contiguous();
    const at::Tensor scales = v.at("scales").to(at::kFloat).contiguous();
    const int64_t width = groupSize > 0 ? groupSize : in;
    const int64_t groups = (in + width - 1) / width;
    auto q = at::empty({in, out}, at::TensorOptions().dtype(at::kInt));
    auto z = at::empty({groups, out}, at::TensorOptions().dtype(at::kInt));
    at::Tensor gIdx;
    if (method == "gptq") {
        bigmodel::groupquant::GptqWeight w;
        w.qweight = qweight.data_ptr<int32_t>();
        w.qzeros = qzeros.data_ptr<int32_t>();
        w.scales = scales.data_ptr<float>();
        if (auto it = v.find("g_idx"); it != v.end() && it->second.defined()) {
            gIdx = it->second.to(at::kInt).contiguous();
            w.gIdx = gIdx.data_ptr<int32_t>();
        }
        w.inFeatures = in;
        w.outFeatures = out;
        w.groupSize = groupSize;
        w.bits = bits;
        w.format = format;
        if (auto ok = bigmodel::groupquant::unpackGptq(w, q.data_ptr<int32_t>(), z.data_ptr<int32_t>()); !ok)
            return makeError(ok.error().code, what + ": " + ok.error().message);
    } else {
        bigmodel::groupquant::AwqWeight w;
        w.qweight = qweight.data_ptr<int32_t>();
        w.qzeros = qzeros.data_ptr<int32_t>();
        w.scales = scales.data_ptr<float>();
        w.inFeatures = in;
        w.outFeatures = out;
        w.groupSize = groupSize;
        if (auto ok = bigmodel::groupquant::unpackAwq(w, q.data_ptr<int32_t>(), z.data_ptr<int32_t>()); !ok)
            return makeError(ok.error().code, what + ": " + ok.error().message);
    }
    at::Tensor order;
    at::Tensor indices = q.t().contiguous(); // [out, in]
    if (gIdx.defined()) {
        const auto sequential = at::arange(in, at::TensorOptions().dtype(at::kLong)).div(width, "floor");
        if (!gIdx.to(at::kLong).equal(sequential)) {
            order = std::get<1>(at::sort(gIdx.to(at::kLong), std::optional<bool>(true), /*dim=*/0));
            if (!gIdx.to(at::kLong).index_select(0, order).equal(sequential))
                return makeError(ErrorCode::Unsupported,
                                 what + ": g_idx puts an unequal number of inputs in its groups (only act-order "
                                        "permutations of equal groups are implemented)");
            indices = indices.index_select(1, order).contiguous();
        }
    }
    if (width % 16 != 0 || in % width != 0)
        return makeError(ErrorCode::Unsupported, what + ": group_size " + std::to_string(groupSize) + " over " +
                                                     std::to_string(in) +
                                                     " inputs (whole groups of a multiple of 16 are implemented)");
    return QuantizedWeight::fromGroups(indices, scales.t().contiguous(), z.to(at::kFloat).t().contiguous(), width,
                                       order, method + "-4bit");
}

// Every quantization_config key of the three formats: read on load (acted on here or through the
// tensors the checkpoint stores), refused when its value is not implemented, or noted as read only
// by the tools that quantize or by CUDA kernel choices. Other keys are noted as not read.
Result<void> checkQuantizationKeys(const std::string &method, const json &config, const std::string &path,
                                   std::vector<std::string> &warnings)
{
    static const std::map<std::string, std::set<std::string>> kActed = {
        {"bitsandbytes",
         {"quant_method", "load_in_8bit", "load_in_4bit", "_load_in_8bit", "_load_in_4bit", "llm_int8_threshold",
          "llm_int8_skip_modules", "llm_int8_has_fp16_weight", "llm_int8_enable_fp32_cpu_offload",
          "bnb_4bit_compute_dtype", "bnb_4bit_quant_type", "bnb_4bit_use_double_quant", "bnb_4bit_quant_storage"}},
        {"gptq",
         {"quant_method", "bits", "group_size", "desc_act", "sym", "checkpoint_format", "lm_head",
          "modules_in_block_to_quantize", "block_name_to_quantize"}},
        {"awq", {"quant_method", "bits", "group_size", "zero_point", "version", "modules_to_not_convert"}}};
    static const std::map<std::string, std::set<std::string>> kQuantizerOnly = {
        {"bitsandbytes", {}},
        {"gptq",
         {"damp_percent",
          "damp_auto_increment",
          "true_sequential",
          "static_groups",
          "dataset",
          "tokenizer",
          "batch_size",
          "model_seqlen",
          "module_name_preceding_first_block",
          "cache_block_outputs",
          "pad_token_id",
          "max_input_length",
          "use_cuda_fp16",
          "use_exllama",
          "exllama_config",
          "disable_exllama",
          "backend",
          "meta",
          "model_name_or_path",
          "model_file_base_name",
          "mse"}},
        {"awq", {"backend", "do_fuse", "fuse_max_seq_len", "modules_to_fuse", "exllama_config"}}};
    std::vector<std::string> quantizerOnly, unknown;
    for (const auto &[key, value] : config.items()) {
        if (kActed.at(method).count(key))
            continue;
        (kQuantizerOnly.at(method).count(key) ? quantizerOnly : unknown).push_back(key);
    }
    auto refuse = [&](const std::string &key, const std::string &valid) -> Result<void> {
        return makeError(ErrorCode::Unsupported,
                         "quantization_config." + key + " " + jsonutil::jsonExcerpt(config.at(key)) +
                             " is not implemented (" + valid + ")",
                         path);
    };
    if (method == "bitsandbytes") {
        if (config.value("llm_int8_has_fp16_weight", false))
            return refuse("llm_int8_has_fp16_weight", "false: int8 weights");
        if (config.contains("bnb_4bit_quant_storage") && config.value("load_in_4bit", false) &&
            config.value("bnb_4bit_quant_storage", std::string()) != "uint8")
            return refuse("bnb_4bit_quant_storage", "uint8");
        if (config.value("llm_int8_enable_fp32_cpu_offload", false))
            warnings.push_back("quantization_config.llm_int8_enable_fp32_cpu_offload has no effect: layers kept "
                               "unquantized or offloaded run in the compute dtype on the CPU anyway");
        const std::string computeDType = config.value("bnb_4bit_compute_dtype", std::string("float32"));
        if (config.value("load_in_4bit", false) && computeDType != "float32")
            warnings.push_back("quantization_config.bnb_4bit_compute_dtype " + computeDType +
                               ": the 4-bit products run in float32 and return in the compute dtype (--dtype)");
    } else if (method == "awq" && config.contains("zero_point") && !config.value("zero_point", true)) {
        return refuse("zero_point", "true");
    }
    auto list = [](const std::vector<std::string> &keys) {
        std::string text;
        for (const std::string &key : keys)
            text += (text.empty() ? "" : ", ") + key;
        return text;
    };
    if (!quantizerOnly.empty())
        warnings.push_back("quantization_config keys read only when quantizing or choosing CUDA kernels, without "
                           "effect on load: " +
                           list(quantizerOnly));
    if (!unknown.empty())
        warnings.push_back("quantization_config keys not known for " + method + ", not read: " + list(unknown));
    return {};
}

// The activations' dtype: the compute dtype the dispatcher cast the floating parameters to (those
// loaded in their own dtype, quantized data, aside).
std::string activationDType(CausalLM &model)
{
    for (const NamedParameter &p : model.namedParameters()) {
        const at::Tensor &v = p.parameter->value;
        if (v.defined() && v.is_floating_point() && !p.parameter->keepDtype)
            return v.scalar_type() == at::kBFloat16 ? "bfloat16" : v.scalar_type() == at::kHalf ? "float16" : "float32";
    }
    return "float32";
}

// With int8 layers resident: their decode kernel, chosen (once per process and dtype) on them.
void int8KernelAtLoad(CausalLM &model, const std::string &dtype, QuantizationReport &report)
{
    if (const auto layers = int8Layers(model); !layers.empty())
        report.int8Kernel = chooseInt8KernelAtLoad(layers, dtype);
}

} // namespace

std::vector<std::string> defaultSkipModules(CausalLM &model)
{
    std::vector<std::string> skip{"lm_head"}; // the last top-level module of every causal LM here
    if (model.config().tieWordEmbeddings)
        skip.push_back(bigmodel::embeddingModuleName(model.config().modelType));
    return skip;
}

std::vector<const QuantizedWeight *> int8Layers(CausalLM &model)
{
    std::vector<const QuantizedWeight *> layers;
    for (auto &[name, linear] : linears<LoraAdaptable>(model))
        if (const QuantizedWeight *w = linear->quantized(); w && w->format() == QuantizedWeight::Format::Int8Rows)
            layers.push_back(w);
    return layers;
}

bool moduleMatches(const std::string &fullName, const std::vector<std::string> &entries)
{
    return bigmodel::bnbModuleMatches(fullName, entries); // the planner's rule too
}

nlohmann::ordered_json quantizationJson(const QuantizationReport &report)
{
    if (report.method.empty())
        return nullptr;
    nlohmann::ordered_json out = {{"method", report.method},
                                  {"quantized_layers", report.quantizedLayers},
                                  {"skipped_layers", report.skippedLayers},
                                  {"float32_layers", report.float32Layers},
                                  {"offloaded_layers", report.offloadedLayers},
                                  {"quantized_bytes", report.quantizedBytes},
                                  {"float32_bytes", report.replacedBytes}};
    if (const auto &choice = report.int8Kernel) {
        const Int8KernelTimes &t = choice->times;
        out["int8_kernel"] = {
            {"kernel", choice->name},
            {"dtype", choice->dtype},
            {"reason", choice->reason},
            {"ours_ms", t.oursMs},
            {"libtorch_ms", t.libtorchMs < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(t.libtorchMs)},
            {"measured_bytes", t.bytes}};
    }
    return out;
}

Result<QuantizationReport> quantizeModel(CausalLM &model, const QuantizationOptions &options)
{
    QuantizationReport report;
    report.method = options.method;
    const std::vector<std::string> skip = options.skipModules ? *options.skipModules : defaultSkipModules(model);
    const std::string dtype = activationDType(model); // before keep_in_fp32_modules' casts
    // Parameters whose name holds a keep_in_fp32_modules entry are cast to float32, as Accelerate casts them.
    for (const NamedParameter &p : model.namedParameters()) {
        const bool keep = std::any_of(options.keepInFp32Modules.begin(), options.keepInFp32Modules.end(),
                                      [&](const std::string &key) { return p.name.find(key) != std::string::npos; });
        if (keep && p.parameter->value.defined() && p.parameter->value.is_floating_point())
            p.parameter->value = p.parameter->value.to(at::kFloat);
    }
    if (options.method.empty())
        return report;
    // Linear and GPT-2's Conv1D layers ([in, out], quantized transposed as transformers does).
    for (auto &[name, linear] : linears<LoraAdaptable>(model)) {
        if (moduleMatches(name, options.keepInFp32Modules)) {
            ++report.float32Layers;
            continue;
        }
        if (moduleMatches(name, skip)) {
            ++report.skippedLayers;
            continue;
        }
        if (auto *stored = dynamic_cast<Linear *>(linear); stored && stored->storedQuantized())
            return makeError(ErrorCode::InvalidInput, "quantization " + options.method +
                                                          ": the checkpoint's weights are quantized already (" + name +
                                                          ")");
        Parameter *weight = linear->baseWeight();
        if (!weight->value.defined() || !linear->hooks().empty()) {
            ++report.offloadedLayers;
            continue;
        }
        const at::Tensor rows = linear->weightIsTransposed() ? weight->value.t() : weight->value;
        QuantizedWeight quantized =
            options.method == "int8"
                ? QuantizedWeight::quantizeInt8(rows)
                : QuantizedWeight::quantizeFourBit(rows, options.method == "nf4" ? bigmodel::bnb::FourBit::NF4
                                                                                 : bigmodel::bnb::FourBit::FP4);
        report.replacedBytes += uint64_t(weight->value.numel()) * 4;
        report.quantizedBytes += quantized.bytes();
        linear->setQuantized(std::make_shared<const QuantizedWeight>(std::move(quantized)));
        weight->value = at::Tensor(); // the float weight (often a view of the mapping) is not read again
        ++report.quantizedLayers;
    }
    int8KernelAtLoad(model, dtype, report);
    if (report.offloadedLayers > 0)
        report.warnings.push_back("quantization " + options.method + ": " + std::to_string(report.offloadedLayers) +
                                  " offloaded Linear layer(s) stay unquantized (their weights are read from disk for "
                                  "each forward)");
    if (const auto fused = linears<FusedExperts>(model); !fused.empty())
        report.warnings.push_back("quantization " + options.method + ": the experts of " +
                                  std::to_string(fused.size()) +
                                  " block(s), stored fused (3-D gate_up_proj / down_proj, transformers 5's in-memory "
                                  "layout), stay unquantized; per-expert checkpoints are quantized");
    return report;
}

Result<QuantizationReport> adoptQuantizedCheckpoint(CausalLM &model, const bigmodel::Checkpoint &checkpoint,
                                                    const json &config, const std::string &path)
{
    if (!config.is_object())
        return makeError(ErrorCode::InvalidInput, "quantization_config: expected an object", path);
    const std::string method = config.value("quant_method", std::string());
    QuantizationReport report;
    int bits = 4;
    int64_t groupSize = 128;
    auto format = bigmodel::groupquant::GptqFormat::V1;
    if (method == "bitsandbytes") {
        const bool eight = config.value("load_in_8bit", false), four = config.value("load_in_4bit", false);
        if (eight == four)
            return makeError(ErrorCode::InvalidInput,
                             "quantization_config: bitsandbytes needs one of load_in_8bit and load_in_4bit", path);
        report.method = eight ? "bitsandbytes-8bit" : "bitsandbytes-4bit";
        if (eight && config.value("llm_int8_threshold", 6.0) != 0.0)
            report.warnings.push_back(
                "quantization_config.llm_int8_threshold has no effect: int8 here is weight-only, the activations "
                "stay in float (bitsandbytes' LLM.int8 quantizes them to int8 rows apart from the columns above the "
                "threshold), so there are no outlier columns to split out");
    } else if (method == "gptq" || method == "awq") {
        bits = config.value("bits", 4);
        groupSize = config.value("group_size", int64_t(128));
        if (bits != 4)
            return makeError(ErrorCode::Unsupported,
                             "quantization_config: " + method + " bits " + std::to_string(bits) +
                                 " is not implemented (4-bit is)",
                             path);
        if (method == "gptq") {
            const std::string checkpointFormat = config.value("checkpoint_format", std::string("gptq"));
            if (checkpointFormat != "gptq" && checkpointFormat != "gptq_v2")
                return makeError(ErrorCode::Unsupported,
                                 "quantization_config: checkpoint_format '" + checkpointFormat +
                                     "' is not implemented (gptq, gptq_v2)",
                                 path);
            format = checkpointFormat == "gptq" ? bigmodel::groupquant::GptqFormat::V1
                                                : bigmodel::groupquant::GptqFormat::V2;
        } else if (const std::string version = config.value("version", std::string("gemm")); version != "gemm") {
            return makeError(ErrorCode::Unsupported,
                             "quantization_config: AWQ version '" + version + "' is not implemented (gemm)", path);
        }
        report.method = method + "-4bit";
    } else {
        return makeError(
            ErrorCode::Unsupported,
            "quantization_config: quant_method '" + method + "' is not implemented (bitsandbytes, gptq, awq)", path);
    }
    if (auto keys = checkQuantizationKeys(method, config, path, report.warnings); !keys)
        return tl::unexpected(keys.error());
    if (model.config().family == ModelFamily::Gpt2)
        return makeError(ErrorCode::Unsupported,
                         "quantization_config: GPT-2's quantized Conv1D layers are not implemented", path);
    for (auto &[name, linear] : linears(model)) {
        const int64_t in = linear->inFeatures(), out = linear->outFeatures();
        const std::string what = checkpoint.folder() + ": " + name;
        auto shapeOf = [&](const std::string &suffix) -> std::optional<std::vector<int64_t>> {
            const bigmodel::TensorInfo *info = tensorOf(checkpoint, name + "." + suffix);
            return info ? std::optional<std::vector<int64_t>>(info->shape) : std::nullopt;
        };
        std::vector<std::pair<std::string, std::vector<int64_t>>> stored;
        Linear::QuantizedBuilder builder;
        if (method == "bitsandbytes" && shapeOf("SCB")) {
            stored = {{"weight", *shapeOf("weight")}, {"SCB", *shapeOf("SCB")}};
            if (auto f = shapeOf("weight_format"))
                stored.emplace_back("weight_format", *f);
            builder = [what](const std::map<std::string, at::Tensor> &v) -> Result<QuantizedWeight> {
                if (auto it = v.find("weight_format"); it != v.end() && it->second.item<int64_t>() != 0)
                    return makeError(ErrorCode::Unsupported, what + ": weight_format " +
                                                                 std::to_string(it->second.item<int64_t>()) +
                                                                 " is not implemented (0, row-major)");
                return QuantizedWeight::fromInt8(v.at("weight"), v.at("SCB"), what);
            };
        } else if (method == "bitsandbytes" && shapeOf("weight.absmax")) {
            const bigmodel::TensorInfo *stateInfo = nullptr;
            for (const char *type : {"nf4", "fp4"})
                if (!stateInfo)
                    stateInfo = tensorOf(checkpoint, name + ".weight.quant_state.bitsandbytes__" + std::string(type));
            if (!stateInfo)
                return makeError(ErrorCode::InvalidInput, what + ": no weight.quant_state.bitsandbytes__nf4 or __fp4");
            auto state = quantState(*stateInfo);
            if (!state)
                return tl::unexpected(state.error());
            const std::string type = state->value("quant_type", std::string());
            const int64_t blocksize = state->value("blocksize", int64_t(0));
            const std::vector<int64_t> shape = state->value("shape", std::vector<int64_t>{});
            if (shape != std::vector<int64_t>{out, in})
                return makeError(ErrorCode::InvalidInput, what + ": quant_state's shape is not the layer's [" +
                                                              std::to_string(out) + ", " + std::to_string(in) + "]");
            const bool nested = state->contains("nested_blocksize");
            const int64_t nestedBlocksize = state->value("nested_blocksize", int64_t(0));
            const float offset = state->value("nested_offset", 0.0f);
            stored = {{"weight", *shapeOf("weight")},
                      {"weight.absmax", *shapeOf("weight.absmax")},
                      {"weight.quant_map", *shapeOf("weight.quant_map")},
                      {stateInfo->name.substr(name.size() + 1), stateInfo->shape}};
            if (nested) {
                if (!shapeOf("weight.nested_absmax") || !shapeOf("weight.nested_quant_map"))
                    return makeError(ErrorCode::InvalidInput, what + ": nested statistics without nested_absmax");
                stored.emplace_back("weight.nested_absmax", *shapeOf("weight.nested_absmax"));
                stored.emplace_back("weight.nested_quant_map", *shapeOf("weight.nested_quant_map"));
            }
            builder = [=](const std::map<std::string, at::Tensor> &v) -> Result<QuantizedWeight> {
                at::Tensor absmax = v.at("weight.absmax");
                if (nested) {
                    const auto q = absmax.to(at::kByte).contiguous();
                    const auto code = floatCode(v.at("weight.nested_quant_map"));
                    const auto scales = floatCode(v.at("weight.nested_absmax"));
                    if (code.numel() != 256 ||
                        scales.numel() != bigmodel::bnb::blockCount(q.numel(), std::max<int64_t>(nestedBlocksize, 1)))
                        return makeError(ErrorCode::InvalidInput, what + ": nested statistics of the wrong size");
                    absmax = at::empty({q.numel()}, at::TensorOptions().dtype(at::kFloat));
                    bigmodel::bnb::dequantizeNestedAbsmax(q.data_ptr<uint8_t>(), q.numel(), code.data_ptr<float>(),
                                                          scales.data_ptr<float>(), nestedBlocksize, offset,
                                                          absmax.data_ptr<float>());
                }
                return QuantizedWeight::fromFourBit(v.at("weight"), absmax, v.at("weight.quant_map"), blocksize, out,
                                                    in, type, what);
            };
        } else if ((method == "gptq" || method == "awq") && shapeOf("qweight")) {
            for (const char *t : {"qweight", "qzeros", "scales"}) {
                if (!shapeOf(t))
                    return makeError(ErrorCode::InvalidInput, what + ": " + t + " is missing");
                stored.emplace_back(t, *shapeOf(t));
            }
            if (method == "gptq" && shapeOf("g_idx"))
                stored.emplace_back("g_idx", *shapeOf("g_idx"));
            builder = [=](const std::map<std::string, at::Tensor> &v) {
                return groupWeight(v, method, bits, groupSize, format, in, out, what);
            };
        } else {
            ++report.skippedLayers;
            continue;
        }
        linear->storeQuantized(stored, builder);
        ++report.quantizedLayers;
    }
    if (report.quantizedLayers == 0)
        return makeError(ErrorCode::InvalidInput,
                         "quantization_config " + jsonutil::jsonExcerpt(config) +
                             ": the checkpoint holds no Linear layer in that format",
                         path);
    return report;
}

Result<void> buildQuantizedLayers(CausalLM &model, QuantizationReport &report)
{
    for (auto &[name, linear] : linears(model)) {
        if (!linear->storedQuantized())
            continue;
        if (!linear->hooks().empty()) {
            ++report.offloadedLayers; // built for each forward from the tensors brought in
            continue;
        }
        if (auto built = linear->buildQuantized(); !built)
            return built;
        report.quantizedBytes += linear->quantized()->bytes();
        report.replacedBytes += uint64_t(linear->inFeatures() * linear->outFeatures()) * 4;
    }
    int8KernelAtLoad(model, activationDType(model), report);
    return {};
}

} // namespace accel::inference
