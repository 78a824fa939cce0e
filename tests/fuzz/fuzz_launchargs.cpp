// Fuzz target: `accel launch` arguments (one per line of the input): parsed with the CLI's parser
// and flag table, merged the way `accel launch` merges them (no config file, a fixed host), and
// turned into rank 0's environment and command. Every outcome is an answer or an error, never a
// crash; an error always says what was wrong.
#include "app/cli/argparser.h"
#include "launcher/envbuilder.h"
#include "launcher/launchflags.h"
#include "launcher/launchmerge.h"

#include <cstdint>
#include <cstdlib>

using namespace accel;
using namespace accel::launcher;

namespace {

// The flag table registered the way `accel launch` registers it (app/cli/cmd_launch.cpp).
cli::ArgParser makeParser()
{
    cli::ArgParser parser("accel launch", "fuzz");
    for (const LaunchFlag &flag : launchFlags()) {
        cli::OptionSpec spec;
        spec.name = flag.name;
        spec.shortName = flag.shortName;
        spec.repeatable = flag.repeatable;
        spec.choices = flag.choices;
        if (flag.kind != LaunchFlag::Kind::Switch)
            spec.valueName = flag.valueName;
        parser.addOption(std::move(spec));
    }
    parser.addPositional({"script", "script and its arguments", true, true});
    return parser;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    std::vector<std::string> args{"launch"};
    std::string current;
    for (size_t i = 0; i < size && args.size() < 256; ++i) {
        if (data[i] == '\n') {
            args.push_back(current);
            current.clear();
        } else {
            current.push_back(static_cast<char>(data[i]));
        }
    }
    args.push_back(current);
    cli::ArgParser parser = makeParser();
    if (!parser.parse(args)) {
        if (!parser.helpRequested() && parser.error().empty())
            std::abort();
        return 0;
    }
    LaunchRequest request;
    for (const LaunchFlag &flag : launchFlags()) {
        if (parser.isSet(flag.name))
            request.flags[flag.name] = flag.kind == LaunchFlag::Kind::Switch ? "true" : parser.valueOr(flag.name, "");
    }
    const std::vector<std::string> script = parser.positional("script");
    request.program.target = script.empty() ? "train.py" : script.front();
    if (!script.empty())
        request.program.args.assign(script.begin() + 1, script.end());
    request.environment = {{"PATH", "/usr/bin"}};
    request.workingDirectory = "/tmp";
    (void)configFileToLoad(request, "/nonexistent/default_config.yaml", false);
    HostFacts host;
    host.physicalCores = 4;
    auto settings = mergeLaunchSettings(request, std::nullopt, host);
    if (!settings) {
        if (settings.error().message.empty())
            std::abort();
        return 0;
    }
    (void)buildRankCommand(*settings, request.environment);
    (void)buildRankEnvironment(*settings, request.environment, RankPlacement{});
    return 0;
}
