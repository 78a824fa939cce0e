// accel estimate-memory MODEL: Accelerate's memory table (largest layer, total size, training with
// Adam per dtype) for a model folder, a checkpoint or a config.json alone, plus inference memory
// (weights, KV cache, activations) for a batch and context; with --config_file, the per-rank bytes
// of training under the config's strategy (DDP, FSDP, DeepSpeed ZeRO) on its device mesh (tp splits
// the model's tensors as the runtime does); with --run, under the settings a run was launched with.
#include "app/cli/argparser.h"
#include "app/cli/command.h"
#include "app/cli/estimatesharding.h"
#include "app/cli/recipememory.h"
#include "core/bigmodel/memoryestimate.h"
#include "core/inference/quantizationmethod.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace {

using namespace accel;

bool parseCount(const std::optional<std::string> &text, int64_t *value)
{
    if (!text)
        return true;
    char *end = nullptr;
    const long long v = std::strtoll(text->c_str(), &end, 10);
    if (!end || *end != '\0' || text->empty() || v < 1)
        return false;
    *value = v;
    return true;
}

nlohmann::ordered_json toJson(const bigmodel::MemoryEstimate &e, const std::vector<std::string> &warnings)
{
    nlohmann::ordered_json j;
    j["schema"] = "accel.memory-estimate";
    j["version"] = 1;
    j["model"] = e.model;
    j["parameters"] = e.parameters;
    j["float32_total_bytes"] = e.float32Total;
    j["base_module"] = e.baseModule;
    j["float32_full_model_bytes"] = e.float32FullModel;
    j["largest_layer"] = {{"float32_bytes", e.float32Largest}, {"names", e.largestLayerNames}};
    j["batch"] = e.batch;
    j["context"] = e.context > 0 ? nlohmann::ordered_json(e.context) : nlohmann::ordered_json(nullptr);
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    auto bytes = [](const std::optional<double> &v) {
        return v ? nlohmann::ordered_json(static_cast<uint64_t>(*v + 0.5)) : nlohmann::ordered_json(nullptr);
    };
    for (const auto &r : e.rows) {
        nlohmann::ordered_json row;
        row["dtype"] = r.dtype;
        row["largest_layer_bytes"] = static_cast<uint64_t>(r.largestLayer + 0.5);
        row["total_bytes"] = static_cast<uint64_t>(r.totalSize + 0.5);
        row["training_adam_bytes"] = bytes(r.trainingAdam);
        row["weights_bytes"] = static_cast<uint64_t>(r.weights + 0.5);
        row["kv_cache_bytes"] = bytes(r.kvCache);
        row["activation_bytes"] = bytes(r.activations);
        rows.push_back(row);
    }
    j["rows"] = rows;
    j["warnings"] = warnings; // also on stderr
    return j;
}

// MODEL is a gpt, mlp or causal_lm job file: its trained model's parameters and the per-rank
// training bytes (float32, the recipe's own optimizer; a LoRA run's frozen base held beside) under
// the config, or on one process without one.
int estimateJob(const std::string &jobFile, const std::optional<std::string> &config,
                const std::optional<std::string> &run, int64_t processes, bool json)
{
    auto model = cli::recipeModel(jobFile);
    if (!model) {
        std::fprintf(stderr, "accel estimate-memory: %s\n", model.error().toString().c_str());
        return exitCodeFor(model.error());
    }
    // Trained in float32 (LoRA: the adapters); a LoRA run's base is held without being trained.
    cli::FrozenParameters frozen;
    frozen.count = model->parameters - model->trainable;
    frozen.storedBytes = model->frozenStoredBytes;
    // What splits over the mesh's tp dimension (the causal_lm model's tensors, LoRA's adapters).
    cli::MeshModel mesh;
    mesh.recipe = model->recipe;
    mesh.jobFile = jobFile;
    mesh.model = model->loaded.get();
    mesh.loraRank = model->loraRank;
    mesh.loraLayers = model->loraLayers;
    mesh.vocabParallel = model->vocabParallel;
    mesh.sequenceParallel = model->sequenceParallel;
    auto perRank = run ? cli::estimateShardingForRun(*run, model->trainable, {"float32"}, model->optimizer,
                                                     model->optimizerStates, model->mixedPrecision, frozen, mesh)
                       : cli::estimateSharding(config.value_or(std::string()),
                                               processes > 0 ? std::optional<int>(int(processes)) : std::nullopt,
                                               model->trainable, {"float32"}, model->optimizer, model->optimizerStates,
                                               model->mixedPrecision, frozen, mesh);
    if (!perRank) {
        std::fprintf(stderr, "accel estimate-memory: %s\n", perRank.error().toString().c_str());
        return exitCodeFor(perRank.error());
    }
    if (json) {
        nlohmann::ordered_json j;
        j["schema"] = "accel.memory-estimate";
        j["version"] = 1;
        j["model"] = jobFile;
        j["recipe"] = model->recipe;
        j["shape"] = model->shape;
        j["parameters"] = model->parameters;
        j["trainable_parameters"] = model->trainable;
        if (model->recipe == "causal_lm") {
            j["family"] = model->family;
            j["lora"] = model->loraRank > 0
                            ? nlohmann::ordered_json{{"r", model->loraRank}, {"layers", model->loraLayers}}
                            : nlohmann::ordered_json(nullptr);
        }
        j["per_rank_training"] = cli::toJson(*perRank);
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s: recipe %s (%s), %llu parameters, %llu trained with %s\n", jobFile.c_str(),
                    model->recipe.c_str(), model->shape.c_str(), static_cast<unsigned long long>(model->parameters),
                    static_cast<unsigned long long>(model->trainable), model->optimizer.c_str());
        std::fputs(cli::renderShardingEstimate(*perRank).c_str(), stdout);
    }
    return cli::ExitOk;
}

int runEstimateMemory(int argc, char **argv)
{
    cli::ArgParser parser("accel estimate-memory",
                          "Estimate the memory a model needs to load, train with Adam, and run inference, per dtype, "
                          "from checkpoint headers or config.json alone (no weights are read).");
    parser.addPositional({"MODEL",
                          "model folder, .safetensors file, index .json, config.json, a Hugging Face Hub id "
                          "ORG/NAME[@REVISION] (the local cache, else the Hub: headers only), or a gpt, mlp or "
                          "causal_lm job file (.yaml: its model and optimizer, float32; LoRA: only the "
                          "adapters train)"});
    cli::OptionSpec dtypes;
    dtypes.name = "dtypes";
    dtypes.valueName = "DTYPE";
    dtypes.help = "dtypes to show (several allowed): float32 float16 bfloat16 fp8 int8 int4";
    dtypes.defaultValue = "float32 float16 int8 int4";
    dtypes.repeatable = true;
    dtypes.choices = {"float32", "float16", "bfloat16", "fp8", "int8", "int4"};
    parser.addOption(dtypes);
    cli::OptionSpec library;
    library.name = "library_name";
    library.valueName = "NAME";
    library.help =
        "accepted for compatibility with accelerate estimate-memory; only transformers-style models are known";
    library.choices = {"transformers", "timm"};
    parser.addOption(library);
    parser.addFlag("trust_remote_code", "accepted for compatibility; no code is ever run");
    parser.addValue("batch", "B", "batch size for the inference figures", "1");
    parser.addValue("context", "T", "tokens of context for the KV cache and activations", "min(max positions, 4096)");
    parser.addValue("config_file", "CONFIG",
                    "also show per-rank training bytes under this Accelerate config's strategy (DDP, FSDP, ZeRO)");
    parser.addValue("num_processes", "N", "with --config_file: processes in total instead of the config's");
    parser.addValue("run", "RUN_DIR",
                    "instead of --config_file: per-rank bytes under the settings a run's ranks were started with "
                    "(its run.json: the process counts and the environment accel launch gave rank 0)");
    parser.addOption({"quantization", "METHOD",
                      "one more row: the bytes the model holds with its Linear layers quantized on load (accel "
                      "generate --quantization; int8: 1 byte a weight + a float32 scale per output row, nf4 / fp4: "
                      "half a byte + a float32 absmax per block of 64), the rest and the KV cache in float32",
                      "", 0, false, inference::quantizationMethods()});
    parser.addValue("skip_modules", "A,B",
                    "with --quantization: modules left unquantized, as BnbQuantizationConfig.skip_modules (default: "
                    "the output head and tied modules)");
    parser.addValue("keep_in_fp32_modules", "A,B",
                    "with --quantization: modules kept in float32, as BnbQuantizationConfig.keep_in_fp32_modules");
    parser.addFlag("json", "print a JSON object (schema accel.memory-estimate) instead of tables");
    const auto args = cli::expandMultiValueOption(
        argc, argv, "dtypes",
        [&](const std::string &x) {
            return std::find(dtypes.choices.begin(), dtypes.choices.end(), x) != dtypes.choices.end();
        },
        true);
    if (!parser.parse(args)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return cli::ExitOk;
        }
        std::fprintf(stderr, "accel estimate-memory: %s\n", parser.error().c_str());
        return cli::ExitBadInput;
    }
    int64_t batch = 1;
    int64_t context = 0;
    int64_t processes = 0;
    if (!parseCount(parser.value("batch"), &batch) || !parseCount(parser.value("context"), &context) ||
        !parseCount(parser.value("num_processes"), &processes) || processes > (1 << 20)) {
        std::fprintf(stderr, "accel estimate-memory: --batch, --context and --num_processes take a positive integer\n");
        return cli::ExitBadInput;
    }
    if (parser.isSet("num_processes") && !parser.isSet("config_file")) {
        std::fprintf(stderr, "accel estimate-memory: --num_processes needs --config_file\n");
        return cli::ExitBadInput;
    }
    if (parser.isSet("run") && (parser.isSet("config_file") || parser.isSet("num_processes"))) {
        std::fprintf(stderr, "accel estimate-memory: --run takes the run's own settings; leave out --config_file "
                             "and --num_processes\n");
        return cli::ExitBadInput;
    }
    if (cli::isJobFile(*parser.firstPositional("MODEL")) &&
        (parser.isSet("quantization") || parser.isSet("skip_modules") || parser.isSet("keep_in_fp32_modules"))) {
        std::fprintf(stderr, "accel estimate-memory: --quantization, --skip_modules and --keep_in_fp32_modules "
                             "size a model's inference; a job file's figures are its training\n");
        return cli::ExitBadInput;
    }
    if (cli::isJobFile(*parser.firstPositional("MODEL")))
        return estimateJob(*parser.firstPositional("MODEL"), parser.value("config_file"), parser.value("run"),
                           processes, parser.isSet("json"));
    std::vector<std::string> list = parser.values("dtypes");
    if (list.empty())
        list = {"float32", "float16", "int8", "int4"};
    auto model = bigmodel::loadModel(*parser.firstPositional("MODEL"));
    if (!model) {
        std::fprintf(stderr, "accel estimate-memory: %s\n", model.error().toString().c_str());
        return exitCodeFor(model.error());
    }
    auto quantization = bigmodel::parseQuantizedLoad(parser.valueOr("quantization", ""), parser.value("skip_modules"),
                                                     parser.value("keep_in_fp32_modules"));
    if (quantization && quantization->method.empty() && !quantization->keepInFp32Modules.empty())
        quantization = makeError(ErrorCode::InvalidInput,
                                 "keep_in_fp32_modules: only with --quantization int8, nf4 or fp4 (the rows without "
                                 "it are Accelerate's, per dtype)");
    if (!quantization) {
        std::fprintf(stderr, "accel estimate-memory: %s\n", quantization.error().toString().c_str());
        return exitCodeFor(quantization.error());
    }
    auto estimate = bigmodel::estimateMemory(
        *model, list, batch, parser.isSet("context") ? std::optional<int64_t>(context) : std::nullopt, &*quantization);
    if (!estimate) {
        std::fprintf(stderr, "accel estimate-memory: %s\n", estimate.error().toString().c_str());
        return exitCodeFor(estimate.error());
    }
    std::optional<cli::ShardingEstimate> perRank;
    if (parser.isSet("config_file") || parser.isSet("run")) {
        cli::MeshModel mesh; // a script's model: its tensors split as the runtime splits a causal_lm model's
        mesh.model = &*model;
        auto sharding =
            parser.isSet("run")
                ? cli::estimateShardingForRun(*parser.value("run"), estimate->parameters, list, "Adam", 2, {}, {}, mesh)
                : cli::estimateSharding(*parser.value("config_file"),
                                        processes > 0 ? std::optional<int>(int(processes)) : std::nullopt,
                                        estimate->parameters, list, "Adam", 2, {}, {}, mesh);
        if (!sharding) {
            std::fprintf(stderr, "accel estimate-memory: %s\n", sharding.error().toString().c_str());
            return exitCodeFor(sharding.error());
        }
        perRank = std::move(*sharding);
    }
    for (const std::string &w : model->structure.warnings)
        std::fprintf(stderr, "accel estimate-memory: warning: %s\n", w.c_str());
    if (parser.isSet("json")) {
        nlohmann::ordered_json j = toJson(*estimate, model->structure.warnings);
        if (perRank)
            j["per_rank_training"] = cli::toJson(*perRank);
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::fputs(bigmodel::renderEstimate(*estimate).c_str(), stdout);
        if (perRank)
            std::fputs(cli::renderShardingEstimate(*perRank).c_str(), stdout);
    }
    return cli::ExitOk;
}

} // namespace

static accel::cli::Registrar registrar({"estimate-memory", "estimate a model's memory per dtype (load, train, infer)",
                                        &runEstimateMemory});
