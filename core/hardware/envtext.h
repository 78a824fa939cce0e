// The human text of `accel env`: modelled on `accelerate env` (a header line, "- key: value"
// lines, then the config as tab-indented "- key: value" lines), followed by Accel Studio's own
// sections (CPU, NUMA, memory, disks, network, GPUs, topology).
#pragma once

#include "core/common/result.h"
#include "core/hardware/hardwarereport.h"

#include <string>
#include <utility>
#include <vector>

namespace accel::hardware {

// The first line of the output, the same as Accelerate's.
inline const char *envHeaderLine()
{
    return "Copy-and-paste the text below in your GitHub issue";
}

std::string formatEnvText(const HardwareReport &report);

// The config's top-level entries as `accelerate env` prints them (Python's str() of the values:
// True/False, None, nested blocks as {'key': 'value'}), from YAML or JSON text.
Result<std::vector<std::pair<std::string, std::string>>> configEntriesFromText(const std::string &text, bool json,
                                                                               const std::string &fileName);

// 24731708 kB -> "23.59 GB" (bytes / 1024^3, two decimals, like `accelerate env`).
std::string formatGigabytes(uint64_t bytes);

} // namespace accel::hardware
