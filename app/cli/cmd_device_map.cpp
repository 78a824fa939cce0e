// accel device-map MODEL: plans where each module of a model goes (GPUs, cpu, disk) with
// Accelerate's infer_auto_device_map, for this machine or for hypothetical budgets.
#include "app/cli/argparser.h"
#include "app/cli/command.h"
#include "core/bigmodel/devicemap.h"
#include "core/bigmodel/machinebudgets.h"
#include "core/bigmodel/modelloader.h"
#include "core/common/fileutil.h"
#include "core/inference/quantizationmethod.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace {

using namespace accel;

bool isIdentifier(const std::string &s)
{
    return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
           std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

nlohmann::ordered_json deviceValue(const std::string &device)
{
    if (bigmodel::isGpuDevice(device))
        return std::stoll(device);
    return device;
}

nlohmann::ordered_json toJson(const std::string &model, const std::string &dtype, const bigmodel::DeviceMapOptions &o,
                              const bigmodel::DeviceMapResult &r)
{
    nlohmann::ordered_json j;
    j["schema"] = bigmodel::DeviceMapSchema;
    j["version"] = bigmodel::DeviceMapVersion;
    j["model"] = model;
    j["strategy"] = bigmodel::strategyName(o.strategy);
    j["dtype"] = dtype.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(dtype);
    if (o.quantization && !o.quantization->method.empty()) {
        const bigmodel::QuantizedLoad &q = *o.quantization;
        j["quantization"] = {
            {"method", q.method},
            {"skip_modules", q.skipModules ? nlohmann::ordered_json(*q.skipModules) : nlohmann::ordered_json(nullptr)},
            {"keep_in_fp32_modules", q.keepInFp32Modules}};
    } else {
        j["quantization"] = nullptr;
    }
    j["no_split"] = r.noSplitClasses;
    nlohmann::ordered_json budgets = nlohmann::ordered_json::array();
    for (const auto &[device, bytes] : r.budgets)
        budgets.push_back({{"device", deviceValue(device)}, {"bytes", bytes}});
    j["budgets"] = budgets;
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (const auto &[name, device] : r.map)
        map[name] = deviceValue(device);
    j["device_map"] = map;
    nlohmann::ordered_json perDevice = nlohmann::ordered_json::array();
    for (const auto &[device, bytes] : r.perDevice)
        perDevice.push_back({{"device", deviceValue(device)}, {"bytes", bytes}});
    j["per_device"] = perDevice;
    j["total_bytes"] = r.totalSize;
    j["largest_layer"] = {{"bytes", r.largestLayer}, {"names", r.largestLayerNames}};
    j["warnings"] = r.warnings;
    return j;
}

std::string renderText(const std::string &model, const std::string &dtype, const bigmodel::DeviceMapOptions &o,
                       const bigmodel::DeviceMapResult &r)
{
    std::string noSplit;
    for (const std::string &c : r.noSplitClasses)
        noSplit += (noSplit.empty() ? "" : " ") + c;
    std::string out = "Device map for `" + model + "` (strategy " + bigmodel::strategyName(o.strategy) + ", dtype " +
                      (dtype.empty() ? std::string("as stored") : dtype) +
                      (o.quantization && !o.quantization->method.empty() ? ", quantization " + o.quantization->method
                                                                         : std::string()) +
                      ", no-split " + (noSplit.empty() ? std::string("none") : noSplit) + ")\n";
    out += "budgets:";
    for (const auto &[device, bytes] : r.budgets)
        out += " " + device + "=" + bigmodel::formatBinarySize(static_cast<uint64_t>(std::max<int64_t>(0, bytes)));
    out += "\n\n";
    size_t width = 6;
    for (const auto &[name, device] : r.map)
        width = std::max(width, name.size());
    for (const auto &[name, device] : r.map) {
        const std::string shown = name.empty() ? "(whole model)" : name;
        out += "  " + shown + std::string(width + 2 - std::min(width, shown.size()), ' ') + device + "\n";
    }
    out += "\nper device:\n";
    for (const auto &[device, bytes] : r.perDevice)
        out += "  " + device + std::string(device.size() < 6 ? 6 - device.size() : 1, ' ') +
               bigmodel::formatBinarySize(bytes) + "\n";
    out += "  total " + bigmodel::formatBinarySize(r.totalSize) + " (largest layer " +
           bigmodel::formatBinarySize(r.largestLayer) + ")\n";
    return out;
}

int runDeviceMap(int argc, char **argv)
{
    cli::ArgParser parser(
        "accel device-map",
        "Plan where each module of a model goes (GPUs, cpu, disk) with Accelerate's infer_auto_device_map, "
        "from checkpoint headers or config.json alone.");
    parser.addPositional({"MODEL", "model folder, .safetensors file, index .json, config.json, or a Hugging Face Hub "
                                   "id ORG/NAME[@REVISION] (the local cache, else the Hub: headers only)"});
    parser.addValue(
        "max_memory", "SPEC",
        "device budgets, e.g. 0=10GiB,1=10GiB,cpu=30GiB; devices as in Accelerate: integers (GPU, XPU, NPU... "
        "indices), mps, cpu, disk (GiB/MiB/KiB = powers of 2, GB/MB/KB = powers of 10, lower-case b = bits); "
        "default: this machine");
    cli::OptionSpec strategy;
    strategy.name = "strategy";
    strategy.valueName = "NAME";
    strategy.help = "auto, balanced, balanced_low_0 or sequential";
    strategy.defaultValue = "auto";
    strategy.choices = {"auto", "balanced", "balanced_low_0", "sequential"};
    parser.addOption(strategy);
    cli::OptionSpec noSplit;
    noSplit.name = "no_split";
    noSplit.valueName = "CLASS";
    noSplit.help = "module classes never split across devices (several allowed); \"none\" for no class; default: "
                   "the family's block";
    noSplit.repeatable = true;
    parser.addOption(noSplit);
    parser.addValue("dtype", "DTYPE",
                    "load dtype for sizes: float32, float16, bfloat16, fp8, int8, int4 (default: as stored)");
    parser.addOption({"quantization", "METHOD",
                      "plan the bytes the Linear layers hold quantized on load (accel generate --quantization): "
                      "int8 rows (1 byte a weight + a float32 scale per output row) or 4-bit NF4 / FP4 (half a "
                      "byte + a float32 absmax per block of 64); --dtype is then the dtype of what stays "
                      "unquantized",
                      "", 0, false, inference::quantizationMethods()});
    parser.addValue("skip_modules", "A,B",
                    "with --quantization: modules left unquantized, as BnbQuantizationConfig.skip_modules (default: "
                    "the output head and tied modules)");
    parser.addValue("keep_in_fp32_modules", "A,B",
                    "modules kept in float32 and unquantized, as BnbQuantizationConfig.keep_in_fp32_modules");
    parser.addValue("env_json", "FILE",
                    "`accel env --json` output whose GPUs (free memory) join this machine's budgets");
    parser.addFlag("offload_buffers", "count buffers of offloaded modules as offloaded too");
    parser.addFlag("fallback_allocation", "let an empty GPU take any module that fits (fallback_allocation=True)");
    parser.addFlag("no_clean", "keep the map unmerged (clean_result=False)");
    parser.addFlag("json", std::string("print a JSON object (schema ") + bigmodel::DeviceMapSchema + ")");
    if (!parser.parse(cli::expandMultiValueOption(argc, argv, "no_split", isIdentifier, false))) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return cli::ExitOk;
        }
        std::fprintf(stderr, "accel device-map: %s\n", parser.error().c_str());
        return cli::ExitBadInput;
    }
    auto fail = [](const Error &e) {
        std::fprintf(stderr, "accel device-map: %s\n", e.toString().c_str());
        return exitCodeFor(e);
    };

    bigmodel::DeviceMapOptions options;
    options.strategy = *bigmodel::parseDeviceMapStrategy(parser.valueOr("strategy", "auto"));
    if (parser.isSet("no_split")) {
        std::vector<std::string> classes = parser.values("no_split");
        if (std::find(classes.begin(), classes.end(), "none") != classes.end()) {
            if (classes.size() > 1) {
                std::string others;
                for (const std::string &c : classes)
                    others += c == "none" ? std::string() : (others.empty() ? "" : ", ") + c;
                return fail(Error{ErrorCode::InvalidInput,
                                  "--no_split: \"none\" means no class and cannot be combined with class names (got "
                                  "none and " +
                                      others + ")",
                                  {}});
            }
            classes.clear();
        }
        options.noSplitClasses = classes;
    }
    std::string dtypeName;
    if (auto d = parser.value("dtype")) {
        auto target = bigmodel::parseTargetDType(*d);
        if (!target)
            return fail(Error{ErrorCode::InvalidInput, "--dtype: " + target.error().message, {}});
        options.dtype = *target;
        dtypeName = target->name;
    }
    auto quantization = bigmodel::parseQuantizedLoad(parser.valueOr("quantization", ""), parser.value("skip_modules"),
                                                     parser.value("keep_in_fp32_modules"));
    if (!quantization)
        return fail(quantization.error());
    if (!quantization->method.empty() || !quantization->keepInFp32Modules.empty())
        options.quantization = *quantization;
    options.offloadBuffers = parser.isSet("offload_buffers");
    options.cleanResult = !parser.isSet("no_clean");
    options.fallbackAllocation = parser.isSet("fallback_allocation");
    if (parser.isSet("max_memory") && parser.isSet("env_json"))
        return fail(Error{ErrorCode::InvalidInput,
                          "--max_memory and --env_json cannot be combined: --max_memory gives every budget, "
                          "--env_json reads them from a report",
                          {}});
    if (auto spec = parser.value("max_memory")) {
        auto budgets = bigmodel::parseMaxMemory(*spec);
        if (!budgets)
            return fail(Error{ErrorCode::InvalidInput, "--max-memory: " + budgets.error().message, {}});
        options.maxMemory = *budgets;
        options.userGaveMaxMemory = true;
    } else {
        std::string envText;
        const std::string envPath = parser.valueOr("env_json", "");
        if (!envPath.empty()) {
            auto text = fileutil::readFile(envPath, bigmodel::kMaxEnvReportBytes);
            if (!text)
                return fail(text.error());
            envText = *text;
        }
        auto budgets = bigmodel::machineBudgets(envText, envPath);
        if (!budgets)
            return fail(budgets.error());
        options.maxMemory = *budgets;
        options.userGaveMaxMemory = false;
    }

    auto model = bigmodel::loadModel(*parser.firstPositional("MODEL"));
    if (!model)
        return fail(model.error());
    if (!model->config) {
        // Without a config.json of a known family the tree comes from the tensor names alone.
        if (options.noSplitClasses && !options.noSplitClasses->empty()) {
            std::string known;
            for (const std::string &f : bigmodel::supportedFamilies())
                known += (known.empty() ? "" : ", ") + f;
            return fail(Error{ErrorCode::InvalidInput,
                              "--no_split " + options.noSplitClasses->front() +
                                  ": the model has no config.json of a known family (" + known +
                                  "), so its module classes are unknown and no class can be kept whole; "
                                  "put config.json beside the checkpoint, or use --no_split none",
                              *parser.firstPositional("MODEL")});
        }
        model->structure.warnings.push_back(
            "no config.json of a known family: planned from the tensor names alone, without module classes "
            "(so no no-split block), modules that hold no tensor (dropouts, activations), buffers the "
            "checkpoint does not store (rotary inv_freq) or an output head it leaves out as tied; modules in "
            "the names' natural order, output heads last");
    }
    if (options.quantization)
        if (auto checked = bigmodel::checkQuantizedLoad(model->structure, *options.quantization); !checked)
            return fail(checked.error());
    auto result = bigmodel::inferAutoDeviceMap(model->structure, options);
    // What loading the model said comes first; every warning is on stderr and in the JSON.
    result.warnings.insert(result.warnings.begin(), model->structure.warnings.begin(), model->structure.warnings.end());
    for (const std::string &w : result.warnings)
        std::fprintf(stderr, "accel device-map: warning: %s\n", w.c_str());
    if (parser.isSet("json"))
        std::printf("%s\n", toJson(model->name, dtypeName, options, result).dump(2).c_str());
    else
        std::fputs(renderText(model->name, dtypeName, options, result).c_str(), stdout);
    return cli::ExitOk;
}

} // namespace

static accel::cli::Registrar registrar({"device-map", "plan a model's placement over GPUs, cpu and disk",
                                        &runDeviceMap});
