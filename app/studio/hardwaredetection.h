// One detection of this machine for the Hardware page: the report and the recommended config
// with the reason for each recommended key. Runs on a worker thread, so it touches no widgets.
#pragma once

#include "core/config/clusterconfig.h"
#include "core/hardware/hardwaredetector.h"
#include "core/hardware/hardwarereport.h"

#include <string>
#include <vector>

namespace accel::app {

struct RecommendedKey {
    std::string key;    // "distributed_type", "fsdp_config.fsdp_version", ...
    std::string value;  // as it would be written
    std::string reason; // why, in a sentence
};

struct HardwareDetection {
    hardware::HardwareReport report;
    std::vector<RecommendedKey> keys;
    std::vector<std::string> notes;    // recommendation remarks that concern no single key
    config::ClusterConfig recommended; // the keys above applied to Accelerate's defaults
    std::string recommendationError;   // why no recommendation could be built, "" when fine
};

// The fast part: system, CPU, NUMA, memory, disks, network and GPUs (software not probed).
HardwareDetection detectThisMachine(const hardware::DetectOptions &options);
// The slow part: adds accel-worker's capabilities and Python's versions (as `options` asks) to a
// detection, then recomputes the recommendation.
HardwareDetection addSoftware(HardwareDetection detection, const hardware::DetectOptions &options);
// Whether `options` asks for anything addSoftware() would probe.
bool wantsSoftware(const hardware::DetectOptions &options);
// Recommendation for an existing report (tests use a report they build).
void recommendFor(HardwareDetection &detection);

// The report as plain text for the clipboard.
std::string hardwareReportText(const HardwareDetection &detection);

} // namespace accel::app
