// Pure parsers over the text of Linux system files, so that tests feed documented samples:
// /etc/os-release, /proc/cpuinfo, /proc/meminfo, CPU lists ("0-3,8"), /proc/net/route and
// /proc/net/ipv6_route. None of them touches the file system.
#pragma once

#include "core/common/text.h"

#include "core/hardware/hardwarereport.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace accel::hardware {

// KEY=value lines, values unquoted ("..." and '...'); comments and blank lines skipped.
std::map<std::string, std::string> parseOsRelease(const std::string &text);

// Model, vendor, sockets, physical cores, logical CPUs and the flags in interestingCpuFlags()
// that the CPU has (in that order). availableCpus is left 0 (not in the text).
CpuInfo parseCpuInfo(const std::string &text);

// The ISA flags the report keeps: avx, avx2, fma, avx512f, avx512_bf16, avx512_fp16,
// avx512_vnni, amx_bf16, amx_tile, amx_int8, asimd, sve (ARM).
const std::vector<std::string> &interestingCpuFlags();

// MemTotal, MemAvailable, SwapTotal, SwapFree (kB in the file, bytes in the result).
MemoryInfo parseMemInfo(const std::string &text);

// "Node 0 MemTotal: 123 kB" lines of /sys/devices/system/node/nodeN/meminfo; 0 when absent.
uint64_t parseNodeMemTotal(const std::string &text);

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Returns false on malformed text.
bool parseCpuList(const std::string &text, std::vector<int> &cpus);
// {0,1,2,3,8} -> "0-3,8"
std::string formatCpuList(const std::vector<int> &cpus);

// Interfaces holding an IPv4 default route (destination and mask 0, route up) in /proc/net/route.
std::set<std::string> parseIpv4DefaultRoutes(const std::string &text);
// Interfaces holding an IPv6 default route (::/0, route up, not a reject route) in
// /proc/net/ipv6_route.
std::set<std::string> parseIpv6DefaultRoutes(const std::string &text);

// Helpers shared by the parsers (trim: core/common/text.h).
using text::trim;
std::vector<std::string> splitWhitespace(const std::string &text);
std::vector<std::string> splitLines(const std::string &text);

} // namespace accel::hardware
