// accel config default | show | validate | update | to-fsdp2: reading and writing config files.
#include "app/cli/argparser.h"
#include "app/cli/command.h"

#include "core/common/fileutil.h"
#include "core/config/configio.h"
#include "core/config/configschema.h"
#include "core/config/fsdp2conversion.h"
#include "core/config/validation.h"
#include "core/hardware/hardwaredetector.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace accel::cli {

namespace {

using namespace accel::config;

bool exists(const std::string &path)
{
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

int fail(const char *command, const Error &error)
{
    std::fprintf(stderr, "accel %s: %s\n", command, error.toString().c_str());
    return exitCodeFor(error);
}

int badInput(const char *command, const std::string &message)
{
    std::fprintf(stderr, "accel %s: %s\n", command, message.c_str());
    return ExitBadInput;
}

// Parses; on --help prints help and sets `exitCode` to 0, on errors prints and sets 2.
bool parseArgs(ArgParser &parser, const char *command, int argc, char **argv, int &exitCode)
{
    if (parser.parse(argc, argv, 1))
        return true;
    if (parser.helpRequested()) {
        std::fputs(parser.helpText().c_str(), stdout);
        exitCode = ExitOk;
    } else {
        exitCode = badInput(command, parser.error());
    }
    return false;
}

// The file named by the FILE positional or --config_file, else the default config.
std::string fileArgument(const ArgParser &parser)
{
    if (auto file = parser.firstPositional("file"))
        return *file;
    return parser.valueOr("config_file", defaultConfigPath());
}

void addFileArguments(ArgParser &parser)
{
    parser.addPositional(
        {"file", "the config file (default: --config_file or Accelerate's default config)", true, false});
    parser.addValue("config_file", "PATH", "the config file (Accelerate's spelling)");
}

void printDiagnostics(const Diagnostics &diagnostics)
{
    for (const Diagnostic &d : diagnostics)
        std::fprintf(stderr, "%s%s\n", d.severity == Severity::Error ? "error: " : "", d.toString().c_str());
}

nlohmann::ordered_json diagnosticsJson(const Diagnostics &diagnostics)
{
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Diagnostic &d : diagnostics) {
        nlohmann::ordered_json item;
        item["severity"] = d.severity == Severity::Error ? "error" : "warning";
        item["file"] = d.file;
        item["line"] = d.line;
        item["key"] = d.key;
        item["message"] = d.message;
        item["text"] = d.toString();
        list.push_back(item);
    }
    return list;
}

} // namespace

int runConfigDefault(int argc, char **argv)
{
    ArgParser parser("accel config default",
                     "Write a minimal config for this machine, like `accelerate config default`: "
                     "all of its GPUs (MULTI_GPU when there are several) or the CPU. "
                     "An existing file is never overwritten. The file holds JSON text, as Accelerate writes it.");
    parser.addOption(
        {"mixed_precision", "MODE", "mixed precision of the config", "no", 0, false, schema::mixedPrecisionNames()});
    parser.addValue("config_file", "PATH", "where to write", defaultConfigPath());
    int code = 0;
    if (!parseArgs(parser, "config default", argc, argv, code))
        return code;
    const std::string path = parser.valueOr("config_file", defaultConfigPath());
    if (exists(path)) {
        std::fprintf(
            stderr,
            "accel config default: %s already exists; remove it first or pass --config_file to write elsewhere\n",
            path.c_str());
        return ExitFailure;
    }
    ClusterConfig config;
    config.mixedPrecision = mixedPrecisionFromString(parser.valueOr("mixed_precision", "no"));
    const int gpus = hardware::driverGpuCount();
    if (gpus > 0) {
        config.numProcesses = gpus;
        config.useCpu = false;
        config.distributedType = gpus > 1 ? DistributedType::MultiGpu : DistributedType::No;
    } else {
        config.numProcesses = 1;
        config.useCpu = true;
        config.distributedType = DistributedType::No;
    }
    config.debug = false;
    config.enableCpuAffinity = false;
    applyDefaults(config);
    const std::string text = serializeConfig(config, ConfigFormat::Json);
    // JSON text whatever the extension, as `accelerate config default` writes it.
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!folder.empty())
        std::filesystem::create_directories(folder, ec);
    if (ec)
        return fail("config default",
                    Error{ErrorCode::Io, "cannot create folder " + folder.string() + ": " + ec.message(), path});
    if (auto written = fileutil::writeFileAtomic(path, text); !written)
        return fail("config default", written.error());
    std::printf("accel config default: configuration saved at %s\n", path.c_str());
    return ExitOk;
}

int runConfigShow(int argc, char **argv)
{
    ArgParser parser("accel config show",
                     "Print a config file the way Accelerate would write it back (legacy keys fixed, "
                     "defaults filled). Warnings go to stderr.");
    addFileArguments(parser);
    parser.addFlag("json", "print a JSON object (schema accel.config) instead of YAML");
    int code = 0;
    if (!parseArgs(parser, "config show", argc, argv, code))
        return code;
    const std::string path = fileArgument(parser);
    Diagnostics diagnostics;
    auto config = loadConfigFile(path, &diagnostics);
    if (!config) {
        printDiagnostics(diagnostics);
        return fail("config show", config.error());
    }
    printDiagnostics(diagnostics);
    if (parser.isSet("json")) {
        nlohmann::ordered_json out;
        out["schema"] = "accel.config";
        out["version"] = 1;
        out["file"] = path;
        out["format"] = formatForPath(path) == ConfigFormat::Json ? "json" : "yaml";
        out["config"] = nlohmann::ordered_json::parse(serializeConfig(*config, ConfigFormat::Json));
        out["diagnostics"] = diagnosticsJson(diagnostics);
        std::printf("%s\n", out.dump(2).c_str());
    } else {
        std::fputs(serializeConfig(*config, ConfigFormat::Yaml).c_str(), stdout);
    }
    return ExitOk;
}

int runConfigValidate(int argc, char **argv)
{
    ArgParser parser("accel config validate",
                     "Check a config file as Accelerate's loader and launcher would: unknown keys, types, "
                     "allowed values, cross-field rules (errors, exit 2) and keys that have no effect "
                     "(warnings, exit 0). Messages go to stderr.");
    addFileArguments(parser);
    parser.addFlag("json", "print a JSON report (schema accel.config.validation) on stdout");
    int code = 0;
    if (!parseArgs(parser, "config validate", argc, argv, code))
        return code;
    const std::string path = fileArgument(parser);
    Diagnostics diagnostics;
    auto config = loadConfigFile(path, &diagnostics);
    if (!config && config.error().code != ErrorCode::InvalidInput)
        return fail("config validate", config.error());
    if (config) {
        const Diagnostics more = validate(*config);
        diagnostics.insert(diagnostics.end(), more.begin(), more.end());
    }
    size_t errors = 0, warnings = 0;
    for (const Diagnostic &d : diagnostics)
        (d.severity == Severity::Error ? errors : warnings)++;
    printDiagnostics(diagnostics);
    const bool valid = errors == 0 && config.has_value();
    if (parser.isSet("json")) {
        nlohmann::ordered_json out;
        out["schema"] = "accel.config.validation";
        out["version"] = 1;
        out["file"] = path;
        out["valid"] = valid;
        out["errors"] = errors;
        out["warnings"] = warnings;
        out["diagnostics"] = diagnosticsJson(diagnostics);
        std::printf("%s\n", out.dump(2).c_str());
    } else if (valid) {
        std::printf("%s: valid (%zu warning%s)\n", path.c_str(), warnings, warnings == 1 ? "" : "s");
    } else {
        std::fprintf(stderr, "accel config validate: %s: %zu error%s, %zu warning%s\n", path.c_str(), errors,
                     errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
    }
    return valid ? ExitOk : ExitBadInput;
}

int runConfigUpdate(int argc, char **argv)
{
    ArgParser parser("accel config update",
                     "Load a config file (fixing legacy keys, filling the defaults Accelerate fills) and write "
                     "it back in place, like `accelerate config update`.");
    addFileArguments(parser);
    int code = 0;
    if (!parseArgs(parser, "config update", argc, argv, code))
        return code;
    const std::string path = fileArgument(parser);
    Diagnostics diagnostics;
    auto config = loadConfigFile(path, &diagnostics);
    printDiagnostics(diagnostics);
    if (!config)
        return fail("config update", config.error());
    if (auto saved = saveConfigFile(*config, path); !saved)
        return fail("config update", saved.error());
    std::printf("accel config update: updated %s\n", path.c_str());
    return ExitOk;
}

namespace {

// `command`: "config to-fsdp2", or "to-fsdp2" for the top-level spelling Accelerate has.
int convertConfigToFsdp2(const char *command, int argc, char **argv)
{
    ArgParser parser("accel " + std::string(command),
                     "Convert a config's FSDP1 block to FSDP2 (like `accelerate to-fsdp2`): sharding strategy "
                     "-> fsdp_reshard_after_forward, FSDP1-only keys dropped, fsdp_version 2.");
    addFileArguments(parser);
    parser.addValue("output_file", "PATH", "write the converted config here (must not exist)");
    parser.addFlag("overwrite", "replace the input file");
    int code = 0;
    if (!parseArgs(parser, command, argc, argv, code))
        return code;
    const bool overwrite = parser.isSet("overwrite");
    const auto output = parser.value("output_file");
    if (overwrite == output.has_value())
        return badInput(command, "pass exactly one of --output_file PATH and --overwrite");
    const std::string path = fileArgument(parser);
    if (output && exists(*output))
        return badInput(command,
                        "--output_file " + *output + " already exists; choose another path or use --overwrite");
    Diagnostics diagnostics;
    auto config = loadConfigFile(path, &diagnostics);
    printDiagnostics(diagnostics);
    if (!config)
        return fail(command, config.error());
    const Fsdp2Conversion conversion = convertToFsdp2(*config);
    for (const std::string &note : conversion.notes)
        std::fprintf(stderr, "%s: %s\n", path.c_str(), note.c_str());
    if (!conversion.changed)
        return ExitOk;
    const std::string target = overwrite ? path : *output;
    if (auto saved = saveConfigFile(conversion.config, target); !saved)
        return fail(command, saved.error());
    std::printf("accel %s: wrote %s\n", command, target.c_str());
    return ExitOk;
}

} // namespace

int runConfigToFsdp2(int argc, char **argv)
{
    return convertConfigToFsdp2("config to-fsdp2", argc, argv);
}

// `accelerate to-fsdp2`: the same conversion as a top-level command.
int runToFsdp2(int argc, char **argv)
{
    return convertConfigToFsdp2("to-fsdp2", argc, argv);
}

static Registrar registrar({"to-fsdp2", "convert an FSDP1 config to FSDP2 (accel config to-fsdp2)", &runToFsdp2});

} // namespace accel::cli
