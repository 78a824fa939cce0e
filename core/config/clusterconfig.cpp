#include "core/config/clusterconfig.h"

#include "core/common/text.h"
#include "core/config/configschema.h"

#include <array>
#include <utility>

namespace accel::config {

namespace {

const std::array<std::pair<DistributedType, const char *>, 16> &distributedTypeNames()
{
    static const std::array<std::pair<DistributedType, const char *>, 16> names{{
        {DistributedType::No, "NO"},
        {DistributedType::MultiCpu, "MULTI_CPU"},
        {DistributedType::MultiGpu, "MULTI_GPU"},
        {DistributedType::MultiNpu, "MULTI_NPU"},
        {DistributedType::MultiMlu, "MULTI_MLU"},
        {DistributedType::MultiSdaa, "MULTI_SDAA"},
        {DistributedType::MultiMusa, "MULTI_MUSA"},
        {DistributedType::MultiXpu, "MULTI_XPU"},
        {DistributedType::MultiHpu, "MULTI_HPU"},
        {DistributedType::MultiNeuron, "MULTI_NEURON"},
        {DistributedType::DeepSpeed, "DEEPSPEED"},
        {DistributedType::Fsdp, "FSDP"},
        {DistributedType::Xla, "XLA"},
        {DistributedType::MegatronLm, "MEGATRON_LM"},
        {DistributedType::DataParallel, "DATA_PARALLEL"},
        {DistributedType::ModelParallel, "MODEL_PARALLEL"},
    }};
    return names;
}

} // namespace

const char *toString(ComputeEnvironment value)
{
    return value == ComputeEnvironment::AmazonSageMaker ? "AMAZON_SAGEMAKER" : "LOCAL_MACHINE";
}

const char *toString(DistributedType value)
{
    for (const auto &[type, name] : distributedTypeNames())
        if (type == value)
            return name;
    return "NO";
}

const char *toString(MixedPrecision value)
{
    return mixedPrecisionName(value);
}

std::optional<ComputeEnvironment> computeEnvironmentFromString(const std::string &text)
{
    for (ComputeEnvironment value : {ComputeEnvironment::LocalMachine, ComputeEnvironment::AmazonSageMaker})
        if (text == toString(value))
            return value;
    return std::nullopt;
}

std::optional<DistributedType> distributedTypeFromString(const std::string &text)
{
    for (const auto &[type, name] : distributedTypeNames())
        if (text == name)
            return type;
    return std::nullopt;
}

std::optional<MixedPrecision> mixedPrecisionFromString(const std::string &text)
{
    return mixedPrecisionFromName(text);
}

bool isMultiAcceleratorType(DistributedType type)
{
    switch (type) {
    case DistributedType::MultiGpu:
    case DistributedType::MultiNpu:
    case DistributedType::MultiMlu:
    case DistributedType::MultiSdaa:
    case DistributedType::MultiMusa:
    case DistributedType::MultiXpu:
    case DistributedType::MultiHpu:
    case DistributedType::MultiNeuron:
        return true;
    default:
        return false;
    }
}

bool DynamoConfig::isEmpty() const
{
    return !backend && !mode && !useFullgraph && !useDynamic && !useRegionalCompilation;
}

bool FsdpConfig::isEmpty() const
{
    return !version && !reshardAfterForward && !shardingStrategy && !offloadParams && !autoWrapPolicy &&
           !transformerLayerClsToWrap && !minNumParams && !backwardPrefetch && !stateDictType && !forwardPrefetch &&
           !useOrigParams && !cpuRamEfficientLoading && !syncModuleStates && !activationCheckpointing &&
           !ignoredModules;
}

bool DeepSpeedConfig::isEmpty() const
{
    return !deepspeedConfigFile && !zeroStage && !offloadOptimizerDevice && !offloadParamDevice &&
           !offloadOptimizerNvmePath && !offloadParamNvmePath && !gradientAccumulationSteps && !gradientClipping &&
           !zero3Save16bitModel && !zero3InitFlag && !moeLayerClsNames && !multinodeLauncher && !hostfile &&
           !exclusionFilter && !inclusionFilter;
}

bool MegatronLmConfig::isEmpty() const
{
    return !tpDegree && !sequenceParallelism && !ppDegree && !numMicroBatches && !recomputeActivations &&
           !useDistributedOptimizer && !gradientClipping && extras.empty();
}

const std::vector<std::string> &megatronLmExtraKeys()
{
    static const std::vector<std::string> keys{
        "megatron_lm_attention_backend",
        "megatron_lm_attention_dropout",
        "megatron_lm_attention_softmax_in_fp32",
        "megatron_lm_calculate_per_token_loss",
        "megatron_lm_context_parallel_size",
        "megatron_lm_decoder_last_pipeline_num_layers",
        "megatron_lm_eod_mask_loss",
        "megatron_lm_expert_model_parallel_size",
        "megatron_lm_expert_tensor_parallel_size",
        "megatron_lm_hidden_dropout",
        "megatron_lm_no_load_optim",
        "megatron_lm_no_save_optim",
        "megatron_lm_optimizer_cpu_offload",
        "megatron_lm_overlap_cpu_optimizer_d2h_h2d",
        "megatron_lm_recompute_granularity",
        "megatron_lm_recompute_method",
        "megatron_lm_recompute_num_layers",
        "megatron_lm_use_custom_fsdp",
        "megatron_lm_use_precision_aware_optimizer",
        "megatron_lm_use_rotary_position_embeddings",
    };
    return keys;
}

bool Fp8Config::isEmpty() const
{
    return !backend && !useAutocastDuringEval && !margin && !interval && !fp8Format && !amaxHistoryLen &&
           !amaxComputeAlgo && !optLevel && !amaxHistoryLength && !amaxComputeAlgorithm && !overrideLinearPrecision &&
           !optimizationLevel && !enableFsdpFloat8AllGather && !padInnerDim;
}

std::vector<bool> parsePrecisionOverride(const std::string &text)
{
    using accel::text::trim;
    std::string inner = trim(text);
    if (inner.size() >= 2 &&
        ((inner.front() == '(' && inner.back() == ')') || (inner.front() == '[' && inner.back() == ']')))
        inner = inner.substr(1, inner.size() - 2);
    std::vector<bool> values;
    size_t start = 0;
    while (start <= inner.size()) {
        const size_t comma = inner.find(',', start);
        const std::string item = accel::text::lower(
            trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (item == "true")
            values.push_back(true);
        else if (item == "false")
            values.push_back(false);
        else
            return {};
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return values.size() == 3 ? values : std::vector<bool>{};
}

bool MpirunConfig::isEmpty() const
{
    return !mpirunHostfile && !mpirunCcl;
}

bool IpexConfig::isEmpty() const
{
    return !ipex && !useXpu;
}

bool ParallelismConfig::isEmpty() const
{
    return !dpReplicateSize && !dpShardSize && !tpSize && !cpSize && !cpCommStrategy && !cpBackend && !spSize &&
           !spBackend && !spSeqLength && !spSeqLengthIsVariable && !spAttnImplementation;
}

int SourceInfo::lineOf(const std::string &keyPath) const
{
    auto it = lines.find(keyPath);
    return it == lines.end() ? 0 : it->second;
}

void applyDefaults(ClusterConfig &c)
{
    if (!c.useCpu)
        c.useCpu = false;
    if (!c.debug)
        c.debug = false;
    if (!c.enableCpuAffinity)
        c.enableCpuAffinity = false;
    if (c.isSageMaker()) {
        SageMakerConfig &s = c.sagemaker;
        if (!s.region)
            s.region = "us-east-1";
        if (!c.numMachines)
            c.numMachines = 1;
        if (!c.gpuIds)
            c.gpuIds = "all";
        if (!s.baseJobName)
            s.baseJobName = "accelerate-sagemaker-1";
        if (!s.pytorchVersion)
            s.pytorchVersion = "1.10.2";
        if (!s.transformersVersion)
            s.transformersVersion = "4.17.0";
        if (!s.pyVersion)
            s.pyVersion = "py38";
        return;
    }
    if (!c.numProcesses)
        c.numProcesses = c.distributedType == DistributedType::No ? 1 : -1;
    if (!c.machineRank)
        c.machineRank = 0;
    if (!c.numMachines)
        c.numMachines = 1;
    if (!c.rdzvBackend)
        c.rdzvBackend = "static";
    if (!c.sameNetwork)
        c.sameNetwork = false;
    if (!c.mainTrainingFunction)
        c.mainTrainingFunction = "main";
    if (!c.downcastBf16)
        c.downcastBf16 = BoolOrString(false);
    if (!c.tpuUseCluster)
        c.tpuUseCluster = false;
    if (!c.tpuUseSudo)
        c.tpuUseSudo = false;
}

} // namespace accel::config
