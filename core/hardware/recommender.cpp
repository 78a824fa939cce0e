#include "core/hardware/recommender.h"

#include "core/hardware/nvidiasmi.h"

#include "core/common/cputopology.h"
#include "core/common/mixedprecision.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

namespace accel::hardware {

namespace {

std::vector<int> versionParts(const std::string &text)
{
    std::vector<int> parts;
    std::istringstream stream(text);
    std::string part;
    while (std::getline(stream, part, '.'))
        parts.push_back(std::atoi(part.c_str()));
    return parts;
}

std::string capabilityText(int capability)
{
    return std::to_string(capability / 10) + "." + std::to_string(capability % 10);
}

void addReason(RecommendedConfig &config, const std::string &key, const std::string &text)
{
    config.reasons.push_back({key, text});
}

using MP = MixedPrecision;

// What the hardware can run (best last) and the precision recommended, by their mixed_precision names.
void setPrecisions(RecommendedConfig &config, std::initializer_list<MP> supported, MP recommended)
{
    config.supportedPrecisions.clear();
    for (MP precision : supported)
        config.supportedPrecisions.push_back(mixedPrecisionName(precision));
    config.mixedPrecision = mixedPrecisionName(recommended);
}

void recommendForGpus(const HardwareReport &report, RecommendedConfig &config)
{
    const auto &gpus = report.gpu.gpus;
    const int count = static_cast<int>(gpus.size());
    std::set<std::string> models;
    int minCapability = 1000;
    bool capabilityKnown = true;
    for (const auto &gpu : gpus) {
        models.insert(gpu.name);
        if (!gpu.hasComputeCapability())
            capabilityKnown = false;
        else
            minCapability = std::min(minCapability, gpu.computeCapability());
    }
    const std::string gpuWord = count == 1 ? "1 GPU" : std::to_string(count) + " GPUs";
    const std::string modelText = models.size() == 1 ? " (" + *models.begin() + ")" : "";

    config.useCpu = false;
    config.gpuIds = "all";
    config.numProcesses = count;
    if (count > 1) {
        config.distributedType = "MULTI_GPU";
        std::string linkText;
        const auto &topology = report.gpu.topology;
        if (!topology.empty()) {
            const std::string link = topology.link("GPU0", "GPU1");
            if (isNvLink(link))
                linkText = "; GPU0 and GPU1 are connected by NVLink (" + link + ")";
            else if (!link.empty())
                linkText = "; GPU0 and GPU1 talk over PCIe (" + link + ")";
        }
        addReason(config, "distributed_type",
                  gpuWord + modelText + " on this host: data parallel over all of them, one process per GPU" +
                      linkText);
    } else {
        config.distributedType = "NO";
        addReason(config, "distributed_type", "1 GPU" + modelText + " on this host: no distribution needed");
    }
    addReason(config, "num_processes", "one process per GPU: " + std::to_string(count));
    addReason(config, "gpu_ids", "use every visible GPU");
    if (models.size() > 1)
        config.warnings.push_back("GPU models differ (" + std::to_string(models.size()) +
                                  " kinds): the slowest GPU sets the pace and precision follows the oldest one");

    const std::string pool = count == 1 ? "the GPU has" : "every GPU has";
    if (!capabilityKnown) {
        setPrecisions(config, {MP::No, MP::Fp16}, MP::Fp16);
        addReason(config, "mixed_precision",
                  "compute capability unknown: fp16 works on every CUDA GPU Accelerate supports; check for bf16 (needs "
                  "8.0+)");
    } else if (minCapability >= 80) {
        setPrecisions(config, {MP::No, MP::Fp16, MP::Bf16}, MP::Bf16);
        if (minCapability >= 89)
            config.supportedPrecisions.push_back(mixedPrecisionName(MP::Fp8));
        addReason(config, "mixed_precision",
                  pool + " compute capability " + capabilityText(minCapability) +
                      " (>= 8.0): bf16 runs natively and needs no loss scaling" +
                      (minCapability >= 89 ? "; fp8 is also possible (>= 8.9) with a TE/torchao backend" : ""));
    } else if (minCapability >= 60) {
        setPrecisions(config, {MP::No, MP::Fp16}, MP::Fp16);
        addReason(config, "mixed_precision",
                  "compute capability " + capabilityText(minCapability) +
                      " has no bf16 (needs 8.0) nor fp8 (needs 8.9): fp16 with loss scaling");
    } else {
        setPrecisions(config, {MP::No}, MP::No);
        addReason(config, "mixed_precision",
                  "compute capability " + capabilityText(minCapability) + " has no fast half precision: full fp32");
    }

    // Accelerate's launcher check: RTX 40 cards on drivers before 550.40.07 hang in NCCL peer-to-peer.
    bool rtx40 = false;
    for (const auto &gpu : gpus)
        rtx40 = rtx40 || gpu.name.find("RTX 40") != std::string::npos;
    if (count > 1 && rtx40 && driverLacksRtx40P2pFix(report.gpu.driverVersion)) {
        config.environment.push_back({"NCCL_P2P_DISABLE", "1"});
        config.environment.push_back({"NCCL_IB_DISABLE", "1"});
        const std::string driver =
            report.gpu.driverVersion.empty() ? "an unknown driver" : "driver " + report.gpu.driverVersion;
        addReason(config, "NCCL_P2P_DISABLE",
                  "RTX 40 series GPUs without peer-to-peer support on " + driver +
                      " (fixed in 550.40.07): NCCL must not use P2P or InfiniBand, as `accelerate launch` also sets");
    }

    const int cores = std::max(1, report.cpu.physicalCores);
    config.threadsPerProcess = threadsPerRank(cores, count);
    addReason(config, "OMP_NUM_THREADS",
              std::to_string(cores) + " physical cores / " + std::to_string(count) + " processes");

    if (report.worker.available && !report.worker.cuda)
        config.warnings.push_back(
            "accel-worker's libtorch " + report.worker.torchVersion +
            " has no CUDA: the embedded runtime will train on CPU (Python scripts are unaffected)");
}

void recommendForCpu(const HardwareReport &report, RecommendedConfig &config)
{
    const int sockets = std::max(1, report.cpu.sockets);
    const int nodes = static_cast<int>(report.numaNodes.size());
    config.useCpu = true;
    config.gpuIds.clear();
    const std::string noGpu = "no NVIDIA GPU found";
    if (sockets > 1) {
        config.distributedType = "MULTI_CPU";
        config.numProcesses = sockets;
        addReason(config, "distributed_type",
                  "CPU only (" + noGpu + ") with " + std::to_string(sockets) +
                      " sockets: one process per socket keeps each process's memory on its own socket");
        addReason(config, "num_processes", "one process per socket: " + std::to_string(sockets));
    } else if (nodes > 1) {
        config.distributedType = "MULTI_CPU";
        config.numProcesses = nodes;
        addReason(config, "distributed_type",
                  "CPU only (" + noGpu + ") with " + std::to_string(nodes) +
                      " NUMA nodes: one process per node keeps each process's memory local");
        addReason(config, "num_processes", "one process per NUMA node: " + std::to_string(nodes));
    } else {
        config.distributedType = "NO";
        config.numProcesses = 1;
        addReason(config, "distributed_type",
                  "CPU only (" + noGpu + ") with a single socket and NUMA node: one process using every core");
        addReason(config, "num_processes", "a single process");
    }
    addReason(config, "use_cpu", "no GPU to train on");

    const bool bf16 = report.cpu.hasFlag("avx512_bf16") || report.cpu.hasFlag("amx_bf16");
    if (bf16) {
        setPrecisions(config, {MP::No, MP::Bf16}, MP::Bf16);
        addReason(config, "mixed_precision",
                  std::string("the CPU has ") + (report.cpu.hasFlag("amx_bf16") ? "AMX-BF16" : "AVX512-BF16") +
                      " instructions: bf16 autocast runs natively");
    } else {
        setPrecisions(config, {MP::No}, MP::No);
        addReason(config, "mixed_precision",
                  "the CPU lacks avx512_bf16/amx_bf16: bf16 would be emulated and slower than fp32; fp16 autocast is "
                  "GPU-only");
    }

    const int cores = std::max(1, report.cpu.physicalCores);
    config.threadsPerProcess = threadsPerRank(cores, config.numProcesses);
    addReason(config, "OMP_NUM_THREADS",
              std::to_string(cores) + " physical cores / " + std::to_string(config.numProcesses) +
                  (config.numProcesses == 1 ? " process" : " processes") + " (hyper-threads do not help matrix math)");
    if (config.distributedType == "MULTI_CPU")
        config.warnings.push_back("MULTI_CPU: `accel launch` starts every process itself; `accelerate launch` starts "
                                  "only one without an mpirun hostfile");
}

} // namespace

bool driverLacksRtx40P2pFix(const std::string &driver)
{
    if (driver.empty())
        return true;
    const std::vector<int> have = versionParts(driver);
    const std::vector<int> fixed = {550, 40, 7};
    for (size_t i = 0; i < fixed.size(); ++i) {
        const int part = i < have.size() ? have[i] : 0;
        if (part != fixed[i])
            return part < fixed[i];
    }
    return false;
}

std::string RecommendedConfig::reasonFor(const std::string &key) const
{
    for (const auto &reason : reasons) {
        if (reason.key == key)
            return reason.text;
    }
    return {};
}

std::string RecommendedConfig::environmentValue(const std::string &name) const
{
    for (const auto &[key, value] : environment) {
        if (key == name)
            return value;
    }
    return {};
}

RecommendedConfig recommendConfig(const HardwareReport &report)
{
    RecommendedConfig config;
    if (!report.gpu.gpus.empty())
        recommendForGpus(report, config);
    else
        recommendForCpu(report, config);
    config.environment.insert(config.environment.begin(),
                              {"OMP_NUM_THREADS", std::to_string(config.threadsPerProcess)});
    return config;
}

std::string recommendationComments(const RecommendedConfig &config)
{
    std::ostringstream out;
    out << "# Recommended by `accel env --recommend` for this host.\n";
    for (const auto &reason : config.reasons)
        out << "# " << reason.key << ": " << reason.text << "\n";
    out << "# threads per process: " << config.threadsPerProcess << " (--num_cpu_threads_per_process)\n";
    for (const auto &[name, value] : config.environment)
        out << "# export " << name << "=" << value << "\n";
    for (const auto &warning : config.warnings)
        out << "# note: " << warning << "\n";
    return out.str();
}

std::string recommendedConfigYaml(const RecommendedConfig &config, bool withComments)
{
    std::ostringstream out;
    if (withComments)
        out << recommendationComments(config);
    // PyYAML's safe_dump quotes strings that YAML 1.1 would read as booleans ('NO', 'no').
    auto scalar = [](const std::string &value) {
        static const std::set<std::string> needQuotes = {"NO",  "no", "No",  "yes",  "Yes",
                                                         "YES", "on", "off", "true", "false"};
        return needQuotes.count(value) ? "'" + value + "'" : value;
    };
    // Keys in alphabetical order, as Accelerate writes them.
    out << "compute_environment: LOCAL_MACHINE\n"
        << "debug: false\n"
        << "distributed_type: " << scalar(config.distributedType) << "\n"
        << "downcast_bf16: 'no'\n"
        << "enable_cpu_affinity: false\n";
    if (!config.gpuIds.empty())
        out << "gpu_ids: " << scalar(config.gpuIds) << "\n";
    out << "machine_rank: 0\n"
        << "main_training_function: main\n"
        << "mixed_precision: " << scalar(config.mixedPrecision) << "\n"
        << "num_machines: " << config.numMachines << "\n"
        << "num_processes: " << config.numProcesses << "\n"
        << "rdzv_backend: static\n"
        << "same_network: true\n"
        << "tpu_env: []\n"
        << "tpu_use_cluster: false\n"
        << "tpu_use_sudo: false\n"
        << "use_cpu: " << (config.useCpu ? "true" : "false") << "\n";
    return out.str();
}

std::string recommendationToJson(const RecommendedConfig &config, int indent)
{
    using Json = nlohmann::ordered_json;
    Json json;
    json["schema"] = "accel.env-recommendation";
    json["version"] = 1;
    Json keys;
    keys["compute_environment"] = "LOCAL_MACHINE";
    keys["distributed_type"] = config.distributedType;
    keys["num_processes"] = config.numProcesses;
    keys["num_machines"] = config.numMachines;
    keys["mixed_precision"] = config.mixedPrecision;
    if (!config.gpuIds.empty())
        keys["gpu_ids"] = config.gpuIds;
    keys["use_cpu"] = config.useCpu;
    json["config"] = keys;
    json["supported_mixed_precision"] = config.supportedPrecisions;
    json["threads_per_process"] = config.threadsPerProcess;
    Json environment = Json::object();
    for (const auto &[name, value] : config.environment)
        environment[name] = value;
    json["environment"] = environment;
    Json reasons = Json::array();
    for (const auto &reason : config.reasons)
        reasons.push_back({{"key", reason.key}, {"text", reason.text}});
    json["reasons"] = reasons;
    json["warnings"] = config.warnings;
    json["yaml"] = recommendedConfigYaml(config, false);
    return json.dump(indent) + "\n";
}

} // namespace accel::hardware
