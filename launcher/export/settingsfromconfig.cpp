#include "launcher/export/settingsfromconfig.h"

#include "core/config/configio.h"
#include "launcher/envbuilder.h"
#include "launcher/launchmerge.h"

#include <nlohmann/json.hpp>

#include <set>

namespace accel::launcher::exporting {

namespace {

ArgValue argFromJson(const nlohmann::json &value)
{
    ArgValue arg;
    arg.origin = Origin::Config;
    if (value.is_boolean()) {
        arg.text = value.get<bool>() ? "true" : "false";
        arg.isBool = true;
    } else if (value.is_number_integer()) {
        arg.text = std::to_string(value.get<long long>());
    } else if (value.is_number()) {
        arg.text = value.dump();
    } else if (value.is_string()) {
        arg.text = value.get<std::string>();
    } else if (value.is_array()) {
        for (const auto &item : value) {
            const ArgValue itemArg = argFromJson(item);
            arg.list.push_back(itemArg.text);
            arg.text += (arg.text.empty() ? "" : ",") + itemArg.text;
        }
    }
    return arg;
}

} // namespace

Result<LaunchSettings> settingsFromConfig(const config::ClusterConfig &config, const ProgramSpec &program)
{
    ConfigView view;
    view.path = config.source.file.empty() ? "<config>" : config.source.file;
    try {
        const auto tree = nlohmann::json::parse(config::serializeConfig(config, config::ConfigFormat::Json));
        for (const auto &[key, value] : tree.items()) {
            if (value.is_object()) {
                ArgMap &block = view.blocks[key];
                for (const auto &[member, memberValue] : value.items()) {
                    if (!memberValue.is_null())
                        block[member] = argFromJson(memberValue);
                }
            } else if (!value.is_null()) {
                view.top[key] = argFromJson(value);
            }
        }
    } catch (const nlohmann::json::exception &e) {
        return makeError(ErrorCode::Internal, std::string("config serialised to invalid JSON: ") + e.what(), view.path);
    }
    LaunchRequest request;
    request.program = program;
    request.flags["config_file"] = view.path;
    HostFacts host; // the exported commands must not depend on this machine
    host.physicalCores = 1;
    host.acceleratorCount = 0;
    host.torchVersion = "";
    return mergeLaunchSettings(request, view, host);
}

EnvMap nodeExports(const LaunchSettings &settings)
{
    static const std::set<std::string> perRank = {"RANK",
                                                  "LOCAL_RANK",
                                                  "WORLD_SIZE",
                                                  "LOCAL_WORLD_SIZE",
                                                  "GROUP_RANK",
                                                  "GROUP_WORLD_SIZE",
                                                  "ROLE_NAME",
                                                  "ROLE_RANK",
                                                  "ROLE_WORLD_SIZE",
                                                  "MASTER_ADDR",
                                                  "MASTER_PORT",
                                                  "TORCHELASTIC_RESTART_COUNT",
                                                  "TORCHELASTIC_MAX_RESTARTS",
                                                  "TORCHELASTIC_RUN_ID",
                                                  "TORCHELASTIC_USE_AGENT_STORE",
                                                  "TORCHELASTIC_ERROR_FILE",
                                                  "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                  "NCCL_ASYNC_ERROR_HANDLING",
                                                  "ACCEL_RUN_DIR",
                                                  "ACCEL_METRICS_FILE",
                                                  "PYTHONPATH",
                                                  "PYTHONUNBUFFERED"};
    LaunchSettings copy = settings;
    copy.runDirectory.clear();
    EnvMap env = buildRankEnvironment(copy, EnvMap{}, RankPlacement{});
    EnvMap result;
    for (const auto &[key, value] : environmentDifference(EnvMap{}, env)) {
        if (!perRank.count(key))
            result[key] = value;
    }
    return result;
}

} // namespace accel::launcher::exporting
