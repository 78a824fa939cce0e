// Parsers for nvidia-smi's text, for hosts where the report comes from running nvidia-smi
// (for example over SSH) instead of loading NVML:
//   nvidia-smi --query-gpu=<nvidiaSmiQueryFields()> --format=csv,noheader,nounits
//   nvidia-smi topo -m
#pragma once

#include "core/common/result.h"
#include "core/hardware/hardwarereport.h"

#include <string>
#include <vector>

namespace accel::hardware {

// The fields asked by nvidiaSmiQueryArguments(), in order.
const std::vector<std::string> &nvidiaSmiQueryFields();
// {"--query-gpu=index,name,...", "--format=csv,noheader,nounits"}
std::vector<std::string> nvidiaSmiQueryArguments();

// Parses the CSV produced with `fields` (any subset/order of the known field names; unknown
// fields are ignored). Memory values are MiB (nounits). "[N/A]"/"[Not Supported]" leave the
// field unknown. Fills the section's gpus, driverVersion, and source = "nvidia-smi".
// Fails when a line has a different number of columns than `fields`.
Result<GpuSection> parseNvidiaSmiQuery(const std::string &text,
                                       const std::vector<std::string> &fields = nvidiaSmiQueryFields());

// Parses the matrix of `nvidia-smi topo -m` (ANSI escapes tolerated, tabs or spaces).
// Fails when there is no header with GPU columns or a row is cut short.
Result<GpuTopology> parseNvidiaSmiTopology(const std::string &text);

// Both outputs of one host combined into the report's GPU section: the query gives the GPUs,
// the topology text (may be empty) the matrix, with each GPU's active NVLink count taken from it.
Result<GpuSection> gpuSectionFromNvidiaSmi(const std::string &queryText, const std::string &topologyText);

// True when the link string means an NVLink connection ("NV4", "NV12", "NV#").
bool isNvLink(const std::string &link);

} // namespace accel::hardware
