#include "core/worker/nativesettings.h"

#include "core/common/accelerateenv.h"
#include "core/common/text.h"
#include "core/config/nativedeepspeed.h"
#include "core/config/nativekeys.h"

#include <algorithm>
#include <map>

namespace accel::worker {

namespace native = config::native;

namespace {

using text::lower;

struct Variables {
    const VariableLookup &lookup;

    std::string get(const std::string &name) const
    {
        const char *value = lookup(name.c_str());
        return text::trim(value ? value : "");
    }
    bool truthy(const std::string &name) const
    {
        const std::string v = lower(get(name));
        return v == "1" || v == "true" || v == "yes" || v == "on";
    }
    // "name=value" as the messages name an exported setting: its config key first.
    std::string named(const std::string &variable) const
    {
        const native::Key *key = native::findVariable(variable);
        return key ? native::keyName(*key, variable, get(variable)) : variable + "=" + get(variable);
    }
};

std::string joined(const std::vector<std::string> &parts, const char *separator)
{
    std::string text;
    for (const std::string &part : parts)
        text += (text.empty() ? "" : separator) + part;
    return text;
}

// distributed_type MEGATRON_LM: one refusal naming every megatron_lm_ setting exported with it.
Error megatronRefusal(const Variables &vars)
{
    const native::Key *use = native::findVariable(accelerateenv::kUseMegatronLm);
    std::vector<std::string> set;
    bool pipeline = false;
    for (const native::Section &section : native::sections()) {
        for (const native::Key &key : section.keys) {
            const std::string variable = key.variables;
            if (variable.rfind("MEGATRON_LM_", 0) != 0 || vars.get(variable).empty())
                continue;
            const std::string config = key.config;
            set.push_back(config.substr(config.find(".megatron_lm_") + 13) + "=" + vars.get(variable));
            pipeline = pipeline || (variable == "MEGATRON_LM_PP_DEGREE" && std::atoi(vars.get(variable).c_str()) > 1);
        }
    }
    std::string message = std::string(accelerateenv::kUseMegatronLm) + "=" + vars.get(accelerateenv::kUseMegatronLm) +
                          (set.empty() ? "" : " with megatron_lm_config " + joined(set, ", ")) + ": " + use->meaning;
    if (pipeline)
        message +=
            " (megatron_lm_pp_degree=" + vars.get("MEGATRON_LM_PP_DEGREE") + " asks for pipeline parallel training)";
    return Error{ErrorCode::Unsupported, message, {}};
}

// Every Refused / Meaningless variable the table leaves to this check: refusals, and notes
// grouped by their reason.
void applyTable(const Variables &vars, std::vector<std::string> &refusals, std::vector<std::string> &notes)
{
    const bool parallelism = vars.truthy(accelerateenv::kUseParallelismConfig);
    std::vector<std::pair<std::string, std::vector<std::string>>> noted; // reason -> keys, in table order
    for (const native::Section &section : native::sections()) {
        for (const native::Key &key : section.keys) {
            if (key.by != native::Actor::Startup ||
                (key.verdict != native::Verdict::Refused && key.verdict != native::Verdict::Meaningless))
                continue;
            const std::string variables = key.variables;
            size_t start = 0;
            while (start < variables.size()) {
                const size_t end = std::min(variables.find(' ', start), variables.size());
                const std::string variable = variables.substr(start, end - start);
                start = end + 1;
                const std::string value = vars.get(variable);
                // Accelerate reads the PARALLELISM_CONFIG_* sizes only with ACCELERATE_USE_PARALLELISM_CONFIG.
                if (variable.empty() || native::isInert(key, value) ||
                    (!parallelism && variable.rfind("PARALLELISM_CONFIG_", 0) == 0))
                    continue;
                const std::string name = native::keyName(key, variable, value);
                if (key.verdict == native::Verdict::Refused) {
                    refusals.push_back(name + ": " + key.meaning);
                    continue;
                }
                auto it =
                    std::find_if(noted.begin(), noted.end(), [&](const auto &n) { return n.first == key.meaning; });
                if (it == noted.end())
                    noted.push_back({key.meaning, {name}});
                else
                    it->second.push_back(name);
            }
        }
    }
    for (const auto &[reason, names] : noted)
        notes.push_back(joined(names, ", ") + ": " + reason);
}

auto refuseSizes(const std::string &message)
{
    return makeError(ErrorCode::Unsupported, message);
}

Result<int> sizeOf(const Variables &vars, const std::string &variable)
{
    const std::string value = vars.get(variable);
    if (value.empty() || lower(value) == "none")
        return 1;
    char *end = nullptr;
    const long size = std::strtol(value.c_str(), &end, 10);
    if (*end != '\0' || size < 1 || size > (1 << 20))
        return makeError(ErrorCode::InvalidInput,
                         vars.named(variable) + ": expected a whole number of ranks, 1 or more");
    return int(size);
}

// parallelism_config on the device mesh (dp_replicate x dp_shard x cp x tp): FSDP2 over dp_shard
// (averaged over dp_replicate too: HSDP) or DDP over the data-parallel ranks, times cp_size x
// tp_size; anything else refused naming the sizes (sp above 1 is refused by the table).
Result<void> checkParallelism(const Variables &vars, const RankPlace &place)
{
    if (!vars.truthy(accelerateenv::kUseParallelismConfig))
        return {};
    const std::string replicateName = "PARALLELISM_CONFIG_DP_REPLICATE_SIZE",
                      shardName = "PARALLELISM_CONFIG_DP_SHARD_SIZE", tpName = "PARALLELISM_CONFIG_TP_SIZE",
                      cpName = "PARALLELISM_CONFIG_CP_SIZE";
    auto replicate = sizeOf(vars, replicateName);
    if (!replicate)
        return tl::unexpected(replicate.error());
    auto shard = sizeOf(vars, shardName);
    if (!shard)
        return tl::unexpected(shard.error());
    auto tp = sizeOf(vars, tpName);
    if (!tp)
        return tl::unexpected(tp.error());
    auto cp = sizeOf(vars, cpName);
    if (!cp)
        return tl::unexpected(cp.error());
    const int inner = *tp * *cp; // the ranks of one data-parallel replica
    const bool fsdp2 = vars.truthy(accelerateenv::kUseFsdp) && vars.get("FSDP_VERSION") == "2";
    // The data-parallel ranks: the world without the cp and tp dimensions.
    const int world = place.worldSize % inner == 0 ? place.worldSize / inner : place.worldSize;
    const std::string sizes = vars.named(replicateName) + " x " + vars.named(shardName) +
                              (*cp > 1 ? " x " + vars.named(cpName) : "") + (*tp > 1 ? " x " + vars.named(tpName) : "");
    const std::string ranks = std::to_string(place.worldSize) + " process(es) (WORLD_SIZE)";
    if (inner > 1 && place.worldSize % inner != 0)
        return refuseSizes(sizes + (*cp > 1 ? ": cp_size x tp_size" : ": tp_size") + " does not divide the " + ranks +
                           "; the sizes must multiply to the number of processes");
    auto refuse = refuseSizes;
    if (*replicate > 1 && *shard > 1 && !fsdp2)
        return refuse(sizes + ": sharding over dp_shard inside each dp_replicate replica (HSDP) needs "
                              "distributed_type FSDP with fsdp_version: 2; without it set dp_shard_size: 1 (DDP "
                              "over dp_replicate)");
    const int total = *replicate * *shard;
    if (total == 1 && (inner == 1 || world == 1)) {
        if (fsdp2 && world > 1)
            return refuse(sizes + " under FSDP2 on " + ranks +
                          ": no dimension to shard over (Accelerate refuses it too); set dp_shard_size: " +
                          std::to_string(world));
        return {};
    }
    if (total != world)
        return refuse(sizes + " = " + std::to_string(total * inner) + " rank(s), but the job has " + ranks +
                      "; the sizes must multiply to the number of processes");
    if (*shard == world && !fsdp2)
        return refuse(vars.named(shardName) + ": sharding over dp_shard needs distributed_type FSDP with "
                                              "fsdp_version: 2; without it set dp_shard_size: 1 (DDP)");
    if (*replicate == world && fsdp2)
        return refuse(vars.named(replicateName) +
                      " under FSDP2: no dimension to shard over (Accelerate refuses it "
                      "too); set dp_shard_size: " +
                      std::to_string(world) + " and dp_replicate_size: 1");
    return {};
}

} // namespace

Result<NativeSettings> checkNativeSettings(const VariableLookup &lookup, const RankPlace &place,
                                           const std::string &jobPrecision)
{
    const Variables vars{lookup};
    if (vars.truthy(accelerateenv::kUseMegatronLm))
        return tl::unexpected(megatronRefusal(vars));
    NativeSettings settings;
    std::vector<std::string> refusals;
    applyTable(vars, refusals, settings.notes);
    if (!refusals.empty())
        return makeError(ErrorCode::Unsupported, joined(refusals, "; "));
    if (auto parallelism = checkParallelism(vars, place); !parallelism)
        return tl::unexpected(parallelism.error());
    settings.cpuAffinity = vars.truthy(accelerateenv::kCpuAffinity);

    const std::string file = vars.get(accelerateenv::kDeepSpeedConfigFile);
    if (vars.truthy(accelerateenv::kUseDeepSpeed) && !file.empty()) {
        std::string requested = lower(jobPrecision.empty() ? vars.get(accelerateenv::kMixedPrecision) : jobPrecision);
        if (requested.empty())
            requested = "no";
        auto check = native::checkDeepSpeedFile(file, requested);
        if (!check)
            return tl::unexpected(check.error());
        if (check->mixedPrecision != requested)
            settings.mixedPrecision = check->mixedPrecision;
        settings.notes.insert(settings.notes.end(), check->notes.begin(), check->notes.end());
    }
    return settings;
}

} // namespace accel::worker
