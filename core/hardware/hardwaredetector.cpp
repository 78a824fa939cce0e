#include "core/hardware/hardwaredetector.h"

#include "core/common/programs.h"
#include "core/hardware/childprocess.h"
#include "core/hardware/nvmlprobe.h"
#include "core/hardware/softwareprobe.h"

#include <ctime>

namespace accel::hardware {

static std::string utcNow()
{
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    ::gmtime_r(&now, &parts);
    char text[32] = {};
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

HardwareReport detectHardware(const DetectOptions &options)
{
    HardwareReport report;
    report.generatedAt = utcNow();
#ifdef ACCEL_VERSION
    report.accelVersion = ACCEL_VERSION;
#endif
    report.system = detectSystem(options.root);
    report.cpu = detectCpu(options.root);
    report.numaNodes = detectNumaNodes(options.root);
    report.memory = detectMemory(options.root);
    report.disks = detectDisks(options.diskPaths.empty() ? defaultDiskPaths() : options.diskPaths);
    report.network = detectNetwork(options.root);
    if (options.probeGpus)
        report.gpu = probeNvml(options.nvmlLibrary);
    else
        report.gpu.unavailableReason = "GPU probing was switched off";
    if (options.probeWorker) {
        const std::string worker = options.workerPath.empty() ? workerProgramPath() : options.workerPath;
        report.worker = probeWorker(worker, options.workerTimeoutMs);
    } else {
        report.worker.error = "not probed";
    }
    if (options.probePython) {
        report.python = probePython(options.python, options.pythonTimeoutMs);
    } else {
        report.python.error = "not probed";
        report.python.torchVersion = report.python.accelerateVersion = report.python.numpyVersion = notInstalled();
    }
    return report;
}

} // namespace accel::hardware
