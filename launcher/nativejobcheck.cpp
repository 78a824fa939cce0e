#include "launcher/nativejobcheck.h"

#include "core/config/nativekeys.h"

#include <set>

namespace accel::launcher {

namespace native = config::native;

namespace {

// The note or refusal of one config key the launcher keeps to itself.
Result<void> checkKey(const std::string &dotted, const ArgValue &value, const std::string &path,
                      std::vector<std::string> &notes)
{
    const native::Key *key = native::findConfigKey(dotted);
    if (!key || key->by != native::Actor::Launcher || native::isInert(*key, value.text))
        return {};
    if (key->verdict == native::Verdict::Meaningless)
        notes.push_back("config " + dotted + ": " + value.text + " has no effect on a job: " + key->meaning);
    else if (key->verdict == native::Verdict::Refused)
        return makeError(ErrorCode::Unsupported, dotted + ": " + value.text + ": " + key->meaning, path);
    return {};
}

} // namespace

Result<void> checkNativeJobConfig(const ConfigView &config, LaunchSettings &settings)
{
    static const std::set<std::string> otherAccelerators{"MULTI_NPU", "MULTI_MLU", "MULTI_SDAA",   "MULTI_MUSA",
                                                         "MULTI_XPU", "MULTI_HPU", "MULTI_NEURON", "XLA"};
    if (otherAccelerators.count(settings.distributedType))
        return makeError(ErrorCode::Unsupported,
                         "distributed_type: " + settings.distributedType +
                             ": a job runs on accel-worker, whose runtime trains on CPUs and CUDA GPUs; use "
                             "MULTI_CPU, MULTI_GPU, FSDP or DEEPSPEED",
                         config.path);
    // --cpu picks accelerate launch's simple launcher, which exports none of these blocks: the job
    // would train as plain DDP while the config asks for more.
    const auto type = config.top.find("distributed_type");
    const std::string asked = type == config.top.end() ? std::string() : type->second.text;
    const bool parallelism =
        config.blocks.count("parallelism_config") && !config.blocks.at("parallelism_config").empty();
    if (settings.launcher == LauncherKind::Simple &&
        (asked == "FSDP" || asked == "DEEPSPEED" || asked == "MEGATRON_LM" || parallelism))
        return makeError(ErrorCode::Unsupported,
                         "distributed_type: " + asked + (parallelism ? " with parallelism_config" : "") +
                             " together with --cpu: accelerate launch's --cpu starts its simple launcher, which "
                             "exports none of these settings, so the job would train as plain DDP; drop --cpu "
                             "(use_cpu: true in the config keeps the ranks on the CPU)",
                         config.path);
    for (const auto &[name, value] : config.top) {
        if (auto ok = checkKey(name, value, config.path, settings.notes); !ok)
            return ok;
    }
    for (const auto &[block, values] : config.blocks) {
        for (const auto &[name, value] : values) {
            if (auto ok = checkKey(block + "." + name, value, config.path, settings.notes); !ok)
                return ok;
        }
    }
    return {};
}

} // namespace accel::launcher
