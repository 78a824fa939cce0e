// The ACCELERATE_* variables of a rank's environment, named as Accelerate's launcher exports them
// (and as `accel launch` writes them, launcher/envbuilder): one spelling for the writer and every
// reader (the runtime, the sharding plan, the native settings, the CLI, the command import).
#pragma once

#include <cstddef>
#include <initializer_list>

namespace accel::accelerateenv {

// Names that follow a prefix rule of Accelerate's launcher are joined from the prefix and their
// suffix by the compiler, so the prefix and each suffix are spelled once.
namespace detail {
template <std::size_t N>
struct Joined {
    char text[N]{};
};
constexpr std::size_t length(const char *text)
{
    std::size_t n = 0;
    while (text[n])
        ++n;
    return n;
}
template <const char *...Parts>
constexpr Joined<(length(Parts) + ... + 1)> concatenate()
{
    Joined<(length(Parts) + ... + 1)> out;
    std::size_t n = 0;
    for (const char *part : {Parts...})
        for (std::size_t i = 0; part[i]; ++i)
            out.text[n++] = part[i];
    return out;
}
template <const char *...Parts>
struct join {
    static constexpr auto value = concatenate<Parts...>();
};
// The name Parts... make, spelled by the compiler: a const char * for the whole program.
template <const char *...Parts>
inline constexpr const char *joined = join<Parts...>::value.text;
} // namespace detail

inline constexpr const char *kUseCpu = "ACCELERATE_USE_CPU";
inline constexpr const char *kMixedPrecision = "ACCELERATE_MIXED_PRECISION";
inline constexpr const char *kGradientAccumulationSteps = "ACCELERATE_GRADIENT_ACCUMULATION_STEPS";
inline constexpr const char *kGradientClipping = "ACCELERATE_GRADIENT_CLIPPING";
inline constexpr const char *kDebugMode = "ACCELERATE_DEBUG_MODE";
inline constexpr const char *kCpuAffinity = "ACCELERATE_CPU_AFFINITY";

inline constexpr const char *kUseFsdp = "ACCELERATE_USE_FSDP";
inline constexpr const char *kUseDeepSpeed = "ACCELERATE_USE_DEEPSPEED";
inline constexpr const char *kUseMegatronLm = "ACCELERATE_USE_MEGATRON_LM";
inline constexpr const char *kUseParallelismConfig = "ACCELERATE_USE_PARALLELISM_CONFIG";

inline constexpr const char *kDeepSpeedConfigFields = "ACCELERATE_CONFIG_DS_FIELDS";
// ACCELERATE_DEEPSPEED_ + the upper-cased deepspeed_config key (without a deepspeed_ of its own).
inline constexpr char kDeepSpeedPrefix[] = "ACCELERATE_DEEPSPEED_";
namespace deepspeed {
inline constexpr char kZeroStage[] = "ZERO_STAGE";
inline constexpr char kOffloadOptimizerDevice[] = "OFFLOAD_OPTIMIZER_DEVICE";
inline constexpr char kOffloadParamDevice[] = "OFFLOAD_PARAM_DEVICE";
inline constexpr char kZero3Init[] = "ZERO3_INIT";
inline constexpr char kZero3Save16BitModel[] = "ZERO3_SAVE_16BIT_MODEL";
inline constexpr char kConfigFile[] = "CONFIG_FILE";
inline constexpr char kMoeLayerClassNames[] = "MOE_LAYER_CLS_NAMES";
} // namespace deepspeed
inline constexpr const char *kDeepSpeedZeroStage = detail::joined<kDeepSpeedPrefix, deepspeed::kZeroStage>;
inline constexpr const char *kDeepSpeedOffloadOptimizerDevice =
    detail::joined<kDeepSpeedPrefix, deepspeed::kOffloadOptimizerDevice>;
inline constexpr const char *kDeepSpeedOffloadParamDevice =
    detail::joined<kDeepSpeedPrefix, deepspeed::kOffloadParamDevice>;
inline constexpr const char *kDeepSpeedZero3Init = detail::joined<kDeepSpeedPrefix, deepspeed::kZero3Init>;
inline constexpr const char *kDeepSpeedZero3Save16BitModel =
    detail::joined<kDeepSpeedPrefix, deepspeed::kZero3Save16BitModel>;
inline constexpr const char *kDeepSpeedConfigFile = detail::joined<kDeepSpeedPrefix, deepspeed::kConfigFile>;
inline constexpr const char *kDeepSpeedMoeLayerClassNames =
    detail::joined<kDeepSpeedPrefix, deepspeed::kMoeLayerClassNames>;

inline constexpr const char *kDynamoBackend = "ACCELERATE_DYNAMO_BACKEND";
inline constexpr const char *kDynamoMode = "ACCELERATE_DYNAMO_MODE";
inline constexpr const char *kDynamoUseFullgraph = "ACCELERATE_DYNAMO_USE_FULLGRAPH";
inline constexpr const char *kDynamoUseDynamic = "ACCELERATE_DYNAMO_USE_DYNAMIC";
inline constexpr const char *kDynamoUseRegionalCompilation = "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION";

// The FP8 recipe: kFp8Prefix + the upper-cased fp8_* launch argument without "fp8_" (fp8_backend:
// ACCELERATE_FP8_BACKEND), and fp8_override_linear_precision as three variables. One rule: each
// suffix is spelled once, in fp8::, and a full name is joined from the prefix by the compiler.
inline constexpr char kFp8Prefix[] = "ACCELERATE_FP8_";

namespace fp8 {
inline constexpr char kBackend[] = "BACKEND";
inline constexpr char kFormat[] = "FORMAT";
inline constexpr char kMargin[] = "MARGIN";
inline constexpr char kInterval[] = "INTERVAL";
inline constexpr char kAmaxHistoryLen[] = "AMAX_HISTORY_LEN";
inline constexpr char kAmaxHistoryLength[] = "AMAX_HISTORY_LENGTH"; // the questionnaire's spelling
inline constexpr char kAmaxComputeAlgo[] = "AMAX_COMPUTE_ALGO";
inline constexpr char kAmaxComputeAlgorithm[] = "AMAX_COMPUTE_ALGORITHM"; // the questionnaire's spelling
inline constexpr char kOptLevel[] = "OPT_LEVEL";
inline constexpr char kOptimizationLevel[] = "OPTIMIZATION_LEVEL"; // the questionnaire's spelling
inline constexpr char kUseAutocastDuringEval[] = "USE_AUTOCAST_DURING_EVAL";
inline constexpr char kEnableFsdpFloat8AllGather[] = "ENABLE_FSDP_FLOAT8_ALL_GATHER";
inline constexpr char kPadInnerDim[] = "PAD_INNER_DIM";
inline constexpr char kUseMxfp8BlockScaling[] = "USE_MXFP8_BLOCK_SCALING";
// fp8_override_linear_precision's three booleans: OVERRIDE_ + FPROP, DGRAD, WGRAD.
inline constexpr char kOverride[] = "OVERRIDE_";
inline constexpr char kFprop[] = "FPROP";
inline constexpr char kDgrad[] = "DGRAD";
inline constexpr char kWgrad[] = "WGRAD";
} // namespace fp8

inline constexpr const char *kFp8Backend = detail::joined<kFp8Prefix, fp8::kBackend>;
inline constexpr const char *kFp8Format = detail::joined<kFp8Prefix, fp8::kFormat>;
inline constexpr const char *kFp8Margin = detail::joined<kFp8Prefix, fp8::kMargin>;
inline constexpr const char *kFp8Interval = detail::joined<kFp8Prefix, fp8::kInterval>;
inline constexpr const char *kFp8AmaxHistoryLen = detail::joined<kFp8Prefix, fp8::kAmaxHistoryLen>;
inline constexpr const char *kFp8AmaxHistoryLength = detail::joined<kFp8Prefix, fp8::kAmaxHistoryLength>;
inline constexpr const char *kFp8AmaxComputeAlgo = detail::joined<kFp8Prefix, fp8::kAmaxComputeAlgo>;
inline constexpr const char *kFp8AmaxComputeAlgorithm = detail::joined<kFp8Prefix, fp8::kAmaxComputeAlgorithm>;
inline constexpr const char *kFp8OptLevel = detail::joined<kFp8Prefix, fp8::kOptLevel>;
inline constexpr const char *kFp8OptimizationLevel = detail::joined<kFp8Prefix, fp8::kOptimizationLevel>;
inline constexpr const char *kFp8UseAutocastDuringEval = detail::joined<kFp8Prefix, fp8::kUseAutocastDuringEval>;
inline constexpr const char *kFp8EnableFsdpFloat8AllGather =
    detail::joined<kFp8Prefix, fp8::kEnableFsdpFloat8AllGather>;
inline constexpr const char *kFp8PadInnerDim = detail::joined<kFp8Prefix, fp8::kPadInnerDim>;
inline constexpr const char *kFp8UseMxfp8BlockScaling = detail::joined<kFp8Prefix, fp8::kUseMxfp8BlockScaling>;
inline constexpr const char *kFp8OverridePrefix = detail::joined<kFp8Prefix, fp8::kOverride>;
inline constexpr const char *kFp8OverrideFprop = detail::joined<kFp8Prefix, fp8::kOverride, fp8::kFprop>;
inline constexpr const char *kFp8OverrideDgrad = detail::joined<kFp8Prefix, fp8::kOverride, fp8::kDgrad>;
inline constexpr const char *kFp8OverrideWgrad = detail::joined<kFp8Prefix, fp8::kOverride, fp8::kWgrad>;

} // namespace accel::accelerateenv
