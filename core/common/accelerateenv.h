// The ACCELERATE_* variables of a rank's environment, named as Accelerate's launcher exports them
// (and as `accel launch` writes them, launcher/envbuilder): one spelling for the writer and every
// reader (the runtime, the sharding plan, the native settings, the CLI, the command import).
#pragma once

namespace accel::accelerateenv {

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
inline constexpr const char *kDeepSpeedZeroStage = "ACCELERATE_DEEPSPEED_ZERO_STAGE";
inline constexpr const char *kDeepSpeedOffloadOptimizerDevice = "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE";
inline constexpr const char *kDeepSpeedOffloadParamDevice = "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE";
inline constexpr const char *kDeepSpeedZero3Init = "ACCELERATE_DEEPSPEED_ZERO3_INIT";
inline constexpr const char *kDeepSpeedZero3Save16BitModel = "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL";
inline constexpr const char *kDeepSpeedConfigFile = "ACCELERATE_DEEPSPEED_CONFIG_FILE";
inline constexpr const char *kDeepSpeedMoeLayerClassNames = "ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES";

inline constexpr const char *kDynamoBackend = "ACCELERATE_DYNAMO_BACKEND";
inline constexpr const char *kDynamoMode = "ACCELERATE_DYNAMO_MODE";
inline constexpr const char *kDynamoUseFullgraph = "ACCELERATE_DYNAMO_USE_FULLGRAPH";
inline constexpr const char *kDynamoUseDynamic = "ACCELERATE_DYNAMO_USE_DYNAMIC";
inline constexpr const char *kDynamoUseRegionalCompilation = "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION";

// The FP8 recipe: ACCELERATE_ + the upper-cased fp8_* launch argument (ACCELERATE_FP8_BACKEND,
// ACCELERATE_FP8_OPT_LEVEL, ...), and fp8_override_linear_precision as three variables.
inline constexpr const char *kFp8Prefix = "ACCELERATE_FP8_";
inline constexpr const char *kFp8Backend = "ACCELERATE_FP8_BACKEND";
inline constexpr const char *kFp8OptLevel = "ACCELERATE_FP8_OPT_LEVEL";
inline constexpr const char *kFp8EnableFsdpFloat8AllGather = "ACCELERATE_FP8_ENABLE_FSDP_FLOAT8_ALL_GATHER";
inline constexpr const char *kFp8OverridePrefix = "ACCELERATE_FP8_OVERRIDE_";

} // namespace accel::accelerateenv
