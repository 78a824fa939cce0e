#include "app/studio/hardwaredetection.h"

#include "core/common/programs.h"
#include "core/config/configio.h"
#include "core/hardware/childprocess.h"
#include "core/hardware/envtext.h"
#include "core/hardware/recommender.h"
#include "core/hardware/softwareprobe.h"

namespace accel::app {

HardwareDetection detectThisMachine(const hardware::DetectOptions &options)
{
    hardware::DetectOptions fast = options;
    fast.probeWorker = false;
    fast.probePython = false;
    HardwareDetection detection;
    detection.report = hardware::detectHardware(fast);
    // Until addSoftware() runs, say that the software is still being looked at.
    if (options.probeWorker)
        detection.report.worker.error = "checking…";
    if (options.probePython)
        detection.report.python.error = "checking…";
    recommendFor(detection);
    return detection;
}

bool wantsSoftware(const hardware::DetectOptions &options)
{
    return options.probeWorker || options.probePython;
}

HardwareDetection addSoftware(HardwareDetection detection, const hardware::DetectOptions &options)
{
    if (options.probeWorker) {
        const std::string worker = options.workerPath.empty() ? workerProgramPath() : options.workerPath;
        detection.report.worker = hardware::probeWorker(worker, options.workerTimeoutMs);
    }
    if (options.probePython)
        detection.report.python = hardware::probePython(options.python, options.pythonTimeoutMs);
    recommendFor(detection);
    return detection;
}

void recommendFor(HardwareDetection &detection)
{
    const hardware::RecommendedConfig recommendation = hardware::recommendConfig(detection.report);
    detection.keys.clear();
    detection.notes.clear();
    detection.recommendationError.clear();
    auto addKey = [&](const std::string &key, const std::string &value) {
        detection.keys.push_back({key, value, recommendation.reasonFor(key)});
    };
    addKey("distributed_type", recommendation.distributedType);
    addKey("num_processes", std::to_string(recommendation.numProcesses));
    addKey("num_machines", std::to_string(recommendation.numMachines));
    addKey("mixed_precision", recommendation.mixedPrecision);
    if (!recommendation.gpuIds.empty())
        addKey("gpu_ids", recommendation.gpuIds);
    addKey("use_cpu", recommendation.useCpu ? "true" : "false");

    std::string supported;
    for (const std::string &precision : recommendation.supportedPrecisions)
        supported += (supported.empty() ? "" : ", ") + precision;
    if (!supported.empty())
        detection.notes.push_back("Mixed precision this hardware runs: " + supported + ".");
    detection.notes.push_back("Threads per process: " + std::to_string(recommendation.threadsPerProcess) +
                              (recommendation.reasonFor("num_cpu_threads_per_process").empty()
                                   ? std::string()
                                   : " — " + recommendation.reasonFor("num_cpu_threads_per_process")));
    for (const auto &[name, value] : recommendation.environment) {
        const std::string reason = recommendation.reasonFor(name);
        detection.notes.push_back("Environment: " + name + "=" + value +
                                  (reason.empty() ? std::string() : " — " + reason));
    }
    for (const std::string &warning : recommendation.warnings)
        detection.notes.push_back("Warning: " + warning);

    // The recommender writes the file text Accelerate would; reading it back through the config
    // library gives the Configure page exactly what a saved recommendation would contain.
    const std::string yaml = hardware::recommendedConfigYaml(recommendation, false);
    auto parsed = config::parseConfig(yaml, config::ConfigFormat::Yaml, "recommendation");
    if (parsed) {
        detection.recommended = *parsed;
    } else {
        detection.recommendationError = parsed.error().toString();
        detection.recommended = config::ClusterConfig{};
        config::applyDefaults(detection.recommended);
    }
}

std::string hardwareReportText(const HardwareDetection &detection)
{
    return hardware::formatEnvText(detection.report);
}

} // namespace accel::app
