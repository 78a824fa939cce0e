// Memory sizes the way Accelerate reads and prints them: "10GiB" (powers of 2), "10GB" (powers of
// 10), the lower-case-b bits quirk ("10Gb" = 10·10⁹/8 bytes), max_memory specs and device budgets.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace accel::bigmodel {

// convert_file_size_to_int, plus plain integers as bytes (Python callers pass ints directly).
Result<int64_t> parseMemorySize(const std::string &text);

// Accelerate's convert_bytes: divided by 1024 until below 1024, labelled bytes/KB/MB/GB/TB/PB,
// rounded to 2 decimals and printed like Python's repr ("1.5 GB", "12.0 MB", "512 bytes").
std::string formatAccelerateSize(double bytes);
// Binary units with binary labels, for our own output ("13.48 GiB").
std::string formatBinarySize(uint64_t bytes);

// An ordered device budget list: "0", "1"... (GPU indices), "mps", "cpu", "disk".
using DeviceBudgets = std::vector<std::pair<std::string, int64_t>>;

// Parses "0=10GiB,1=10GiB,cpu=30GiB"; orders GPUs ascending, then mps, cpu, disk like
// get_max_memory(). The devices are Accelerate's: integers (accelerator indices, whatever the
// backend), mps, cpu and disk; other names ("cuda:0", "xpu:0") and a device given twice are errors.
Result<DeviceBudgets> parseMaxMemory(const std::string &spec);
// Same ordering applied to budgets that already exist.
Result<DeviceBudgets> orderDeviceBudgets(const DeviceBudgets &budgets);

bool isGpuDevice(const std::string &device);

// Currently available system RAM (MemAvailable in /proc/meminfo), 0 when unknown.
uint64_t availableSystemMemory();

} // namespace accel::bigmodel
