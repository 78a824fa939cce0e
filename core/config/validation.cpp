// Cross-field rules of Accelerate's launcher and questionnaire, and warnings for the keys its
// launcher silently ignores.
#include "core/config/validation.h"

#include "core/common/accelerateenv.h"
#include "core/common/fsdpvalues.h"
#include "core/common/text.h"
#include "core/config/configschema.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <system_error>
#include <tuple>

namespace accel::config {

namespace {

class Checker {
public:
    explicit Checker(const ClusterConfig &config) : c(config) {}

    Diagnostics run()
    {
        if (c.isSageMaker()) {
            sageMaker();
            return m_out;
        }
        topLevel();
        quirksOfTopLevelKeys();
        fp8();
        fsdp();
        deepSpeed();
        megatron();
        parallelism();
        mpirunAndIpex();
        dynamo();
        return m_out;
    }

private:
    const ClusterConfig &c;
    Diagnostics m_out;

    void add(Severity severity, const std::string &path, std::string message)
    {
        m_out.push_back(Diagnostic{severity, c.source.file, c.source.lineOf(path), path, std::move(message)});
    }
    void error(const std::string &path, std::string message) { add(Severity::Error, path, std::move(message)); }
    void warning(const std::string &path, std::string message) { add(Severity::Warning, path, std::move(message)); }

    std::int64_t machines() const { return c.numMachines.value_or(1); }
    std::int64_t processes() const { return c.numProcesses.value_or(-1); }
    std::int64_t fsdpVersion() const { return c.fsdp.version.value_or(1); }

    void topLevel()
    {
        const std::string type = toString(c.distributedType);
        if (c.machineRank)
            if (auto problem = rules::machineRank(*c.machineRank, machines()))
                error("machine_rank", *problem);
        if (auto problem = rules::mainProcessIp(c.mainProcessIp.has_value(), machines()))
            error("main_process_ip", *problem);
        if (processes() == 0)
            error("num_processes", "expected -1 (given at launch) or an integer >= 1; got 0");
        if (processes() == -1)
            warning("num_processes", "-1 means the number of processes must be given at launch (--num_processes)");
        if (auto problem = rules::numProcesses(processes(), machines()))
            error("num_processes", *problem);
        if (processes() > 0 && processes() < machines())
            error("num_processes", "must be at least num_machines (" + std::to_string(machines()) + "); got " +
                                       std::to_string(processes()));
        if (isMultiAcceleratorType(c.distributedType) && machines() == 1 && processes() == 1)
            error("num_processes",
                  type +
                      " with one machine needs more than one process; use distributed_type NO to train on one device");
        if (c.distributedType == DistributedType::No && processes() > 1)
            error("num_processes", "distributed_type NO runs a single process; got " + std::to_string(processes()) +
                                       " (choose MULTI_GPU, MULTI_CPU, FSDP or DEEPSPEED to run several)");
        if (c.gpuIds && *c.gpuIds != "all") {
            bool valid = !c.gpuIds->empty();
            size_t count = 1;
            std::string part;
            for (char ch : *c.gpuIds + ",") {
                if (ch == ',') {
                    valid = valid && !part.empty();
                    part.clear();
                    continue;
                }
                if (!std::isdigit(static_cast<unsigned char>(ch)) && ch != ' ')
                    valid = false;
                if (ch != ' ')
                    part += ch;
            }
            for (char ch : *c.gpuIds)
                count += ch == ',';
            if (!valid)
                error("gpu_ids",
                      "expected all or a comma-separated list of device numbers such as 0,1,3; got " + *c.gpuIds);
            else if (processes() > 0 && static_cast<std::int64_t>(count) < processes() / machines())
                warning("gpu_ids", "lists " + std::to_string(count) + " device(s) for " +
                                       std::to_string(processes() / machines()) + " processes per machine");
        }
        if (c.useCpu.value_or(false) && isMultiAcceleratorType(c.distributedType))
            warning("use_cpu", "true forces CPU training, so " + type + " runs without accelerators");
        if (c.distributedType == DistributedType::MultiCpu && processes() > 1 && c.mpirun.isEmpty() && machines() == 1)
            // Accelerate's launch_command sends MULTI_CPU to its simple launcher, which runs the
            // script once (commands/launch.py, utils/launch.py prepare_simple_launcher_cmd_env).
            warning("distributed_type",
                    "MULTI_CPU without mpirun_config.mpirun_hostfile: accelerate launch starts 1 process on this "
                    "machine (its simple launcher; the other " +
                        std::to_string(processes() - 1) +
                        " ranks are left to mpirun or SLURM); accel launch starts all " + std::to_string(processes()));
        if (c.tpuUseCluster.value_or(false)) {
            if (!c.tpuName)
                error("tpu_name", "required when tpu_use_cluster is true");
            if (!c.tpuZone)
                error("tpu_zone", "required when tpu_use_cluster is true");
        }
        if (c.commands && c.commandFile)
            warning("commands", "both commands and command_file are set; accelerate tpu-config runs only command_file");
        if (c.distributedType != DistributedType::Xla) {
            for (const char *key : {"tpu_name", "tpu_zone", "command_file"})
                if (c.source.lineOf(key) > 0)
                    warning(key, "only used with distributed_type XLA");
        }
    }

    void quirksOfTopLevelKeys()
    {
        if (c.rdzvBackend && *c.rdzvBackend != "static" && machines() > 1)
            warning(
                "rdzv_backend",
                "accelerate launch ignores this key (its --rdzv_backend default static wins); pass --rdzv_backend " +
                    *c.rdzvBackend + " at launch");
        if (c.sameNetwork.value_or(false) && machines() > 1)
            warning("same_network", "accelerate launch ignores this key (its --same_network default false wins); pass "
                                    "--same_network at launch");
        if (c.enableCpuAffinity.value_or(false))
            warning("enable_cpu_affinity",
                    "accelerate launch ignores this key (its --enable_cpu_affinity default false wins); "
                    "pass --enable_cpu_affinity at launch");
        if (c.downcastBf16) {
            bool on = false;
            if (auto b = std::get_if<bool>(&*c.downcastBf16))
                on = *b;
            else
                on =
                    std::get<std::string>(*c.downcastBf16) != "no" && std::get<std::string>(*c.downcastBf16) != "false";
            if (on)
                warning("downcast_bf16", "accelerate launch ignores this key (its --downcast_bf16 default false wins); "
                                         "pass --downcast_bf16 at launch");
        }
    }

    void fp8()
    {
        const Fp8Config &f = c.fp8;
        if (f.isEmpty())
            return;
        if (c.mixedPrecision != MixedPrecision::Fp8) {
            error("fp8_config", std::string("is only used with mixed_precision fp8; mixed_precision is ") +
                                    (c.mixedPrecision ? toString(*c.mixedPrecision) : "not set"));
            return;
        }
        const std::string backend = text::upper(f.backend.value_or(""));
        auto onlyFor = [&](const std::string &key, bool present, const char *owner) {
            if (present && !backend.empty() && backend != owner)
                warning("fp8_config." + key,
                        "is a " + std::string(owner) + " setting; ignored with backend " + backend);
        };
        onlyFor("use_autocast_during_eval", f.useAutocastDuringEval.has_value(), "TE");
        onlyFor("margin", f.margin.has_value(), "TE");
        onlyFor("interval", f.interval.has_value(), "TE");
        onlyFor("fp8_format", f.fp8Format.has_value(), "TE");
        onlyFor("override_linear_precision", f.overrideLinearPrecision.has_value(), "TE");
        onlyFor("optimization_level", f.optimizationLevel.has_value(), "MSAMP");
        onlyFor("amax_history_len", f.amaxHistoryLen.has_value(), "TE");
        onlyFor("amax_compute_algo", f.amaxComputeAlgo.has_value(), "TE");
        onlyFor("opt_level", f.optLevel.has_value(), "MSAMP");
        onlyFor("enable_fsdp_float8_all_gather", f.enableFsdpFloat8AllGather.has_value(), "AO");
        onlyFor("pad_inner_dim", f.padInnerDim.has_value(), "AO");
        if (f.amaxHistoryLength)
            warning("fp8_config.amax_history_length",
                    std::string("never reaches the FP8 recipe (exported as ") + accelerateenv::kFp8AmaxHistoryLength +
                        ", the recipe reads ..._" + accelerateenv::fp8::kAmaxHistoryLen +
                        "); write amax_history_len instead");
        if (f.amaxComputeAlgorithm)
            warning("fp8_config.amax_compute_algorithm",
                    std::string("never reaches the FP8 recipe (exported as ") +
                        accelerateenv::kFp8AmaxComputeAlgorithm + ", the recipe reads ..._" +
                        accelerateenv::fp8::kAmaxComputeAlgo + "); write amax_compute_algo instead");
        if (f.optimizationLevel)
            warning("fp8_config.optimization_level", std::string("never reaches the MS-AMP recipe (exported as ") +
                                                         accelerateenv::kFp8OptimizationLevel +
                                                         ", the recipe reads ..._" + accelerateenv::fp8::kOptLevel +
                                                         "); write opt_level instead");
        if (f.fp8Format == std::string("E5M2"))
            warning("fp8_config.fp8_format", "TransformerEngine refuses pure E5M2 training; use HYBRID or E4M3");
        if (backend == "AO" && c.distributedType == DistributedType::Fsdp &&
            c.fsdp.cpuRamEfficientLoading.value_or(true))
            error("fsdp_config.fsdp_cpu_ram_efficient_loading",
                  "the AO (torchao) FP8 backend refuses FSDP with CPU-RAM-efficient loading; set it to false");
        if (backend == "MSAMP" && c.distributedType == DistributedType::Fsdp)
            error("fp8_config.backend", "MSAMP does not work with FSDP; use TE or AO");
    }

    void fsdp()
    {
        const FsdpConfig &f = c.fsdp;
        if (f.isEmpty())
            return;
        if (c.distributedType != DistributedType::Fsdp) {
            warning("fsdp_config", std::string("is ignored unless distributed_type is FSDP (it is ") +
                                       toString(c.distributedType) + ")");
            return;
        }
        if (fsdpVersion() == 2) {
            if (f.reshardAfterForward && std::holds_alternative<std::string>(*f.reshardAfterForward))
                error("fsdp_config.fsdp_reshard_after_forward",
                      "expected true or false with fsdp_version 2; got " +
                          std::get<std::string>(*f.reshardAfterForward) +
                          " (run 'accel config to-fsdp2' to convert an FSDP1 config)");
            if (f.shardingStrategy)
                error("fsdp_config.fsdp_sharding_strategy",
                      "is an FSDP1 key; with fsdp_version 2 use fsdp_reshard_after_forward "
                      "(run 'accel config to-fsdp2')");
            const std::vector<std::string> &fsdp2Types = schema::fsdp2StateDictTypes();
            if (f.stateDictType &&
                std::find(fsdp2Types.begin(), fsdp2Types.end(), *f.stateDictType) == fsdp2Types.end() &&
                std::count(schema::fsdpStateDictTypes().begin(), schema::fsdpStateDictTypes().end(), *f.stateDictType))
                error("fsdp_config.fsdp_state_dict_type", "expected one of " + schema::joined(fsdp2Types) +
                                                              " with fsdp_version 2; got " + *f.stateDictType);
            if (f.forwardPrefetch.value_or(false))
                error("fsdp_config.fsdp_forward_prefetch", "is not implemented for fsdp_version 2; remove it");
            if (f.backwardPrefetch)
                warning("fsdp_config.fsdp_backward_prefetch", "is ignored with fsdp_version 2");
            if (f.useOrigParams)
                warning("fsdp_config.fsdp_use_orig_params", "is obsolete with fsdp_version 2 and ignored");
            if (f.syncModuleStates)
                warning("fsdp_config.fsdp_sync_module_states", "is obsolete with fsdp_version 2 and ignored");
        } else {
            const std::string *stored =
                f.reshardAfterForward ? std::get_if<std::string>(&*f.reshardAfterForward) : nullptr;
            if (stored && !f.shardingStrategy && *stored != fsdp::kFullShard)
                warning("fsdp_config.fsdp_reshard_after_forward",
                        "FSDP1 reads FSDP_SHARDING_STRATEGY first, which accelerate launch always exports (" +
                            std::string(fsdp::kFullShard) + " by default), so " + *stored +
                            " here has no effect; also set fsdp_sharding_strategy: " + *stored);
            if (stored && f.shardingStrategy && *stored != *f.shardingStrategy)
                warning("fsdp_config.fsdp_reshard_after_forward",
                        "disagrees with fsdp_sharding_strategy (" + *f.shardingStrategy + "), which wins");
            if (f.syncModuleStates == false && f.cpuRamEfficientLoading.value_or(true))
                warning("fsdp_config.fsdp_sync_module_states",
                        "is forced to true because fsdp_cpu_ram_efficient_loading is on");
        }
        const std::string policy = f.autoWrapPolicy.value_or("");
        if (f.minNumParams && policy != fsdp::kSizeBasedWrap)
            warning("fsdp_config.fsdp_min_num_params",
                    std::string("is only used with fsdp_auto_wrap_policy ") + fsdp::kSizeBasedWrap);
        if (f.transformerLayerClsToWrap && policy != fsdp::kTransformerBasedWrap)
            warning("fsdp_config.fsdp_transformer_layer_cls_to_wrap",
                    std::string("is only used with fsdp_auto_wrap_policy ") + fsdp::kTransformerBasedWrap);
    }

    void deepSpeed()
    {
        const DeepSpeedConfig &d = c.deepspeed;
        if (d.isEmpty())
            return;
        if (c.distributedType != DistributedType::DeepSpeed) {
            warning("deepspeed_config", std::string("is ignored unless distributed_type is DEEPSPEED (it is ") +
                                            toString(c.distributedType) + ")");
            return;
        }
        if (d.deepspeedConfigFile) {
            const std::string guard =
                "is set in the accelerate config while deepspeed_config_file is used; the training process "
                "refuses to start (" +
                std::string(accelerateenv::kDeepSpeedConfigFields) + "): put it in the DeepSpeed file instead";
            const std::pair<const char *, bool> inlineKeys[] = {
                {"gradient_accumulation_steps", d.gradientAccumulationSteps.has_value()},
                {"gradient_clipping", d.gradientClipping.has_value()},
                {"zero_stage", d.zeroStage.has_value()},
                {"offload_optimizer_device", d.offloadOptimizerDevice.has_value()},
                {"offload_param_device", d.offloadParamDevice.has_value()},
                {"offload_optimizer_nvme_path", d.offloadOptimizerNvmePath.has_value()},
                {"offload_param_nvme_path", d.offloadParamNvmePath.has_value()},
                {"zero3_save_16bit_model", d.zero3Save16bitModel.has_value()},
            };
            for (const auto &[key, present] : inlineKeys)
                if (present)
                    error(std::string("deepspeed_config.") + key, guard);
            if (c.mixedPrecision)
                error("mixed_precision", guard);
            std::error_code ec;
            if (!std::filesystem::exists(*d.deepspeedConfigFile, ec))
                warning("deepspeed_config.deepspeed_config_file",
                        "does not exist on this machine: " + *d.deepspeedConfigFile);
            return;
        }
        const std::int64_t stage = d.zeroStage.value_or(2);
        if (d.offloadParamDevice && *d.offloadParamDevice != "none" && stage < 3)
            warning("deepspeed_config.offload_param_device",
                    "parameter offload needs zero_stage 3; zero_stage is " + std::to_string(stage));
        if (d.zero3Save16bitModel && stage != 3)
            warning("deepspeed_config.zero3_save_16bit_model", "only applies to zero_stage 3");
        for (const auto &[device, path, key] :
             {std::tuple{d.offloadOptimizerDevice, d.offloadOptimizerNvmePath, "offload_optimizer_nvme_path"},
              std::tuple{d.offloadParamDevice, d.offloadParamNvmePath, "offload_param_nvme_path"}}) {
            if (path)
                warning(std::string("deepspeed_config.") + key,
                        "accelerate launch never exports NVMe paths; the DeepSpeed plugin uses "
                        "its default (none): put the path in a DeepSpeed JSON file");
            else if (device == std::string("nvme"))
                warning(std::string("deepspeed_config.") + key, "missing although the offload device is nvme");
        }
        if (machines() > 1 && d.multinodeLauncher.value_or("pdsh") != "standard" && !d.hostfile)
            warning("deepspeed_config.deepspeed_hostfile", "not set: the DeepSpeed runner looks for /job/hostfile");
    }

    void megatron()
    {
        const MegatronLmConfig &m = c.megatronLm;
        if (m.isEmpty())
            return;
        if (c.distributedType != DistributedType::MegatronLm) {
            warning("megatron_lm_config", std::string("is ignored unless distributed_type is MEGATRON_LM (it is ") +
                                              toString(c.distributedType) + ")");
            return;
        }
        const std::int64_t model = m.tpDegree.value_or(1) * m.ppDegree.value_or(1);
        if (processes() > 0 && processes() % model != 0)
            error("megatron_lm_config.megatron_lm_tp_degree",
                  "megatron_lm_tp_degree x megatron_lm_pp_degree (" + std::to_string(model) +
                      ") must divide num_processes (" + std::to_string(processes()) + ")");
        if (m.numMicroBatches && m.ppDegree.value_or(1) == 1 && *m.numMicroBatches > 1)
            warning("megatron_lm_config.megatron_lm_num_micro_batches", "only matters with megatron_lm_pp_degree > 1");
        for (const auto &[key, value] : m.extras) {
            if (auto b = std::get_if<bool>(&value); b && !*b)
                warning("megatron_lm_config." + key,
                        "false is exported as the text False, which Accelerate's Megatron-LM plugin reads as "
                        "true (any non-empty text is true); remove the key instead");
        }
    }

    void parallelism()
    {
        const ParallelismConfig &p = c.parallelism;
        if (p.isEmpty())
            return;
        if (auto problem = rules::parallelismConfig(c.distributedType == DistributedType::Fsdp, fsdpVersion())) {
            error("parallelism_config", *problem);
            return;
        }
        const std::int64_t product =
            p.dpReplicateSize.value_or(1) * p.dpShardSize.value_or(1) * p.tpSize.value_or(1) * p.cpSize.value_or(1);
        if (p.dpShardSize.value_or(1) > 0 && processes() > 0 && product != processes())
            error("parallelism_config", "dp_replicate x dp_shard x tp x cp sizes (" + std::to_string(product) +
                                            ") must equal num_processes (" + std::to_string(processes()) + ")");
        if (p.cpCommStrategy && p.cpSize.value_or(1) <= 1)
            warning("parallelism_config.parallelism_config_cp_comm_strategy",
                    "only matters with parallelism_config_cp_size > 1");
    }

    void mpirunAndIpex()
    {
        if (c.mpirun.mpirunHostfile) {
            if (c.distributedType != DistributedType::MultiCpu)
                warning("mpirun_config.mpirun_hostfile", "is only used with distributed_type MULTI_CPU");
            if (!c.mpirun.mpirunHostfile->empty() && c.mpirun.mpirunHostfile->front() != '/')
                warning("mpirun_config.mpirun_hostfile", "should be an absolute path; got " + *c.mpirun.mpirunHostfile);
        }
        if (c.mpirun.mpirunCcl)
            warning("mpirun_config.mpirun_ccl",
                    "legacy key (Accelerate <= 1.12): kept but unused; Accelerate >= 1.13 ignores it");
        if (!c.ipex.isEmpty())
            warning(
                "ipex_config",
                "legacy block (Accelerate <= 1.12): kept but unused; Accelerate >= 1.13 refuses files containing it");
    }

    void dynamo()
    {
        const DynamoConfig &d = c.dynamo;
        if (d.isEmpty())
            return;
        const std::string backend = d.backend.value_or("NO");
        bool off = true;
        for (char ch : backend)
            off = off && (ch == 'N' || ch == 'n' || ch == 'O' || ch == 'o');
        off = off && backend.size() == 2;
        if (off && (d.mode || d.useFullgraph || d.useDynamic || d.useRegionalCompilation))
            warning("dynamo_config", "dynamo settings have no effect while dynamo_backend is NO");
        if (c.distributedType == DistributedType::DeepSpeed && !off)
            warning("dynamo_config.dynamo_backend",
                    "DeepSpeed launches do not pass dynamo settings to the training processes");
    }

    void sageMaker()
    {
        const SageMakerConfig &s = c.sagemaker;
        if (s.ec2InstanceType && s.ec2InstanceType->rfind("ml.", 0) != 0)
            warning("ec2_instance_type",
                    "SageMaker instance types start with ml. (e.g. ml.p3.2xlarge); got " + *s.ec2InstanceType);
        if (c.distributedType != DistributedType::No && machines() < 1)
            error("num_machines", "expected an integer >= 1");
    }
};

} // namespace

namespace rules {

std::optional<std::string> machineRank(std::int64_t rank, std::int64_t machines)
{
    if (rank < machines)
        return std::nullopt;
    return "expected 0.." + std::to_string(machines - 1) + " (num_machines is " + std::to_string(machines) + "); got " +
           std::to_string(rank);
}

std::optional<std::string> mainProcessIp(bool given, std::int64_t machines)
{
    if (given || machines <= 1)
        return std::nullopt;
    return "required when num_machines is " + std::to_string(machines) +
           ": the address of the machine with machine_rank 0";
}

std::optional<std::string> numProcesses(std::int64_t processes, std::int64_t machines)
{
    if (processes <= 0 || machines <= 0 || processes % machines == 0)
        return std::nullopt;
    return "is the total over all machines and must be divisible by num_machines (" + std::to_string(machines) +
           "); got " + std::to_string(processes);
}

std::optional<std::string> parallelismConfig(bool fsdp, std::int64_t fsdpVersion)
{
    if (fsdp && fsdpVersion == 2)
        return std::nullopt;
    return std::string("needs distributed_type FSDP with fsdp_config.fsdp_version 2");
}

} // namespace rules

Diagnostics validate(const ClusterConfig &config)
{
    Diagnostics diagnostics = Checker(config).run();
    // In file order; problems without a line (missing keys) last.
    std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const Diagnostic &a, const Diagnostic &b) {
        const int la = a.line > 0 ? a.line : INT_MAX;
        const int lb = b.line > 0 ? b.line : INT_MAX;
        return la < lb;
    });
    return diagnostics;
}

} // namespace accel::config
