// accel env: what `accelerate env` prints (versions, platform, RAM, GPU type, the config in use),
// plus Accel Studio's host report (CPU, NUMA, memory, disks, network, GPUs, topology), as text
// or as versioned JSON (docs/env-json.md); --recommend proposes a config for the host.
#include "app/cli/argparser.h"
#include "app/cli/command.h"

#include "core/common/fileutil.h"
#include "core/common/huggingfacehome.h"
#include "core/common/programs.h"
#include "core/hardware/envtext.h"
#include "core/hardware/hardwaredetector.h"
#include "core/hardware/recommender.h"
#include "core/hardware/reportjson.h"

#ifdef ACCEL_ENV_WITH_CONFIG
#include "core/config/configio.h"
#endif

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

namespace accel::cli {

namespace {

using hardware::ConfigSection;

std::string defaultConfigFile()
{
    return accel::accelerateDefaultConfigPath();
}

bool isFile(const std::string &path)
{
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool endsWith(const std::string &text, const std::string &suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Reads the config for the report. Returns an error only for a passed file that is unusable.
Result<ConfigSection> readConfigSection(const std::optional<std::string> &passed)
{
    ConfigSection section;
    section.passed = passed.has_value();
    section.path = passed ? *passed : defaultConfigFile();
    if (!isFile(section.path)) {
        if (section.passed)
            return makeError(ErrorCode::NotFound, "file not found", "--config_file " + section.path);
        return section;
    }
    section.found = true;
    const bool json = endsWith(section.path, ".json");
    std::string text;
#ifdef ACCEL_ENV_WITH_CONFIG
    // The config as Accelerate would hold it after loading: fix-ups applied, nulls dropped.
    auto loaded = config::loadConfigFile(section.path);
    if (!loaded) {
        if (section.passed)
            return makeError(loaded.error().code, loaded.error().message, loaded.error().context);
        section.error = loaded.error().toString();
        return section;
    }
    text = config::serializeConfig(*loaded, json ? config::ConfigFormat::Json : config::ConfigFormat::Yaml);
#else
    auto raw = fileutil::readFile(section.path);
    if (!raw)
        return makeError(raw.error().code, raw.error().message, raw.error().context);
    text = *raw;
#endif
    auto entries = hardware::configEntriesFromText(text, json, section.path);
    if (!entries) {
        if (section.passed)
            return makeError(entries.error().code, entries.error().message, entries.error().context);
        section.error = entries.error().toString();
        return section;
    }
    section.entries = std::move(*entries);
    return section;
}

// The recommended config's text: through accel::config's serializer when it is built (so the
// file is exactly what `accel config` would write), else the hardware library's own emitter.
std::string recommendationYaml(const hardware::RecommendedConfig &recommendation)
{
    const std::string plain = hardware::recommendedConfigYaml(recommendation, false);
#ifdef ACCEL_ENV_WITH_CONFIG
    auto parsed = config::parseConfig(plain, config::ConfigFormat::Yaml, "recommended config");
    if (parsed)
        return hardware::recommendationComments(recommendation) +
               config::serializeConfig(*parsed, config::ConfigFormat::Yaml);
    std::fprintf(stderr, "accel env: warning: accel::config rejects the recommendation (%s); writing it directly\n",
                 parsed.error().toString().c_str());
#endif
    return hardware::recommendationComments(recommendation) + plain;
}

int fail(const Error &error)
{
    std::fprintf(stderr, "accel env: %s\n", error.toString().c_str());
    return exitCodeFor(error) == 2 ? ExitBadInput : ExitFailure;
}

} // namespace

int runEnv(int argc, char **argv)
{
    ArgParser parser("accel env", "Print this host's environment (versions, config, CPU, memory, network, GPUs) "
                                  "for bug reports, and recommend a config for it.");
    parser.addValue("config_file", "PATH", "Accelerate config file to show instead of the default one");
    parser.addFlag("json", "Print the report as JSON (schema " +
                               schemaAndVersion(hardware::EnvSchema, hardware::EnvSchemaVersion) +
                               "; see docs/env-json.md)");
    parser.addFlag("recommend", "Print a recommended config for this host (YAML with reasons; JSON with --json)");
    parser.addValue("from_json", "FILE",
                    "Use a report written by `accel env --json` (e.g. on another host) "
                    "instead of probing this one ('-' reads stdin)");
    parser.addOption({"disk",
                      "PATH",
                      "Report free space for PATH (repeatable; default: the current folder and "
                      "the Hugging Face cache)",
                      "",
                      0,
                      true,
                      {}});
    parser.addValue("python", "PROGRAM", "Python interpreter to ask for torch/accelerate/numpy versions",
                    defaultPython);
    parser.addFlag("no_python", "Do not run Python");
    parser.addFlag("no_gpu", "Do not load NVML");
    parser.addFlag("no_worker", "Do not start accel-worker to report the embedded runtime (it loads libtorch: ~1 s)");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel env: %s\n", parser.error().c_str());
        return ExitBadInput;
    }

    hardware::HardwareReport report;
    if (const auto from = parser.value("from_json")) {
        std::string text;
        if (*from == "-") {
            char buffer[65536];
            size_t n = 0;
            while ((n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0)
                text.append(buffer, n);
        } else {
            auto content = fileutil::readFile(*from);
            if (!content)
                return fail(content.error());
            text = std::move(*content);
        }
        auto parsed = hardware::reportFromJson(text);
        if (!parsed) {
            Error error = parsed.error();
            error.context = "--from_json " + *from + (error.context.empty() ? "" : ": " + error.context);
            return fail(error);
        }
        report = std::move(*parsed);
        if (parser.isSet("config_file")) {
            auto config = readConfigSection(parser.value("config_file"));
            if (!config)
                return fail(config.error());
            report.config = std::move(*config);
        }
    } else {
        auto config = readConfigSection(parser.value("config_file"));
        if (!config)
            return fail(config.error());
        hardware::DetectOptions options;
        options.diskPaths = parser.values("disk");
        options.python = parser.valueOr("python", defaultPython);
        options.probePython = !parser.isSet("no_python");
        options.probeGpus = !parser.isSet("no_gpu");
        options.probeWorker = !parser.isSet("no_worker");
        report = hardware::detectHardware(options);
        report.config = std::move(*config);
    }

    const bool json = parser.isSet("json");
    if (parser.isSet("recommend")) {
        const hardware::RecommendedConfig recommendation = hardware::recommendConfig(report);
        const std::string text =
            json ? hardware::recommendationToJson(recommendation) : recommendationYaml(recommendation);
        std::fputs(text.c_str(), stdout);
        return ExitOk;
    }
    const std::string text = json ? hardware::reportToJson(report) : hardware::formatEnvText(report);
    std::fputs(text.c_str(), stdout);
    return ExitOk;
}

static Registrar registrar({"env", "Print this host's environment for bug reports; recommend a config", &runEnv});

} // namespace accel::cli
