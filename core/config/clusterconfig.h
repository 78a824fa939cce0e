// The typed model of an Accelerate cluster config file (default_config.yaml): every key that
// Accelerate 1.x reads or writes, top level and nested blocks, for LOCAL_MACHINE and SageMaker.
// Values keep the types Accelerate writes (so a file comes back byte-identical after load + save).
// std::nullopt means "absent / null": such keys are not written. After parseConfig() every
// top-level field that Accelerate's dataclass defaults is set (see configio.h).
#pragma once

#include "core/common/mixedprecision.h"
#include "core/config/configblocks.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace accel::config {

enum class ComputeEnvironment { LocalMachine, AmazonSageMaker };

// LOCAL_MACHINE types, then SageMaker's DATA_PARALLEL / MODEL_PARALLEL.
enum class DistributedType {
    No,
    MultiCpu,
    MultiGpu,
    MultiNpu,
    MultiMlu,
    MultiSdaa,
    MultiMusa,
    MultiXpu,
    MultiHpu,
    MultiNeuron,
    DeepSpeed,
    Fsdp,
    Xla,
    MegatronLm,
    DataParallel,
    ModelParallel,
};

// Its text forms are schema::mixedPrecisionNames(), in this order.
using accel::MixedPrecision; // core/common/mixedprecision.h

// Text as written in the file ("LOCAL_MACHINE", "MULTI_GPU", "fp16") and back.
const char *toString(ComputeEnvironment value);
const char *toString(DistributedType value);
const char *toString(MixedPrecision value);
std::optional<ComputeEnvironment> computeEnvironmentFromString(const std::string &text);
std::optional<DistributedType> distributedTypeFromString(const std::string &text);
std::optional<MixedPrecision> mixedPrecisionFromString(const std::string &text);

// MULTI_GPU, MULTI_NPU, ... MULTI_NEURON: the types `accelerate launch` runs with its multi-GPU launcher.
bool isMultiAcceleratorType(DistributedType type);

// Where each key was found ("fsdp_config.fsdp_version" -> 1-based line), for diagnostics.
struct SourceInfo {
    std::string file;
    std::map<std::string, int> lines;
    int lineOf(const std::string &keyPath) const; // 0 when unknown
};

struct ClusterConfig {
    ComputeEnvironment computeEnvironment = ComputeEnvironment::LocalMachine;
    DistributedType distributedType = DistributedType::No;
    std::optional<MixedPrecision> mixedPrecision;
    std::optional<bool> useCpu;
    std::optional<bool> debug;
    std::optional<bool> enableCpuAffinity;

    // LOCAL_MACHINE (num_machines and gpu_ids are shared with SageMaker).
    std::optional<std::int64_t> numProcesses; // -1 = must be given at launch
    std::optional<std::int64_t> machineRank;
    std::optional<std::int64_t> numMachines;
    std::optional<std::string> gpuIds; // "all" or "0,1,3"
    std::optional<std::string> mainProcessIp;
    std::optional<std::int64_t> mainProcessPort;
    std::optional<std::string> rdzvBackend; // static | c10d | etcd | etcd-v2
    std::optional<bool> sameNetwork;
    std::optional<std::string> mainTrainingFunction;
    std::optional<BoolOrString> downcastBf16;
    std::optional<std::string> tpuName;
    std::optional<std::string> tpuZone;
    std::optional<bool> tpuUseCluster;
    std::optional<bool> tpuUseSudo;
    std::optional<std::string> commandFile;
    std::optional<std::vector<std::string>> commands;
    std::optional<std::vector<std::string>> tpuVm;
    std::optional<std::vector<std::string>> tpuEnv;

    DynamoConfig dynamo;
    FsdpConfig fsdp;
    DeepSpeedConfig deepspeed;
    MegatronLmConfig megatronLm;
    Fp8Config fp8;
    MpirunConfig mpirun;
    IpexConfig ipex;
    ParallelismConfig parallelism;
    SageMakerConfig sagemaker;

    // Keys of nested blocks written with a null value (block -> keys): Accelerate keeps such keys
    // (only top-level nulls are dropped), so they are saved back as null while the field is unset.
    std::map<std::string, std::vector<std::string>> nullKeys;

    SourceInfo source; // filled by parseConfig(); ignored when saving

    bool isSageMaker() const { return computeEnvironment == ComputeEnvironment::AmazonSageMaker; }
};

// Fills the defaults Accelerate's config dataclasses give absent keys (num_processes -1, or 1 for
// NO; machine_rank 0; num_machines 1; rdzv_backend static; same_network false; main_training_function
// main; downcast_bf16 false; use_cpu/debug/enable_cpu_affinity/tpu_use_* false; SageMaker region,
// base_job_name, versions). parseConfig() calls it; the questionnaire's builder too.
void applyDefaults(ClusterConfig &config);

} // namespace accel::config
