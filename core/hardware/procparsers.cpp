#include "core/hardware/procparsers.h"

#include "core/common/cputopology.h"
#include "core/common/text.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace accel::hardware {

std::vector<std::string> splitWhitespace(const std::string &text)
{
    std::vector<std::string> words;
    std::istringstream stream(text);
    std::string word;
    while (stream >> word)
        words.push_back(word);
    return words;
}

std::vector<std::string> splitLines(const std::string &text)
{
    std::vector<std::string> lines;
    std::string line;
    std::istringstream stream(text);
    while (std::getline(stream, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        lines.push_back(line);
    }
    return lines;
}

std::map<std::string, std::string> parseOsRelease(const std::string &text)
{
    std::map<std::string, std::string> values;
    for (const std::string &raw : splitLines(text)) {
        const std::string line = trim(raw);
        if (line.empty() || line[0] == '#')
            continue;
        const auto eq = line.find('=');
        if (eq == std::string::npos || eq == 0)
            continue;
        std::string value = trim(line.substr(eq + 1));
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
            value = value.substr(1, value.size() - 2);
        values[trim(line.substr(0, eq))] = value;
    }
    return values;
}

const std::vector<std::string> &interestingCpuFlags()
{
    static const std::vector<std::string> flags = {
        "avx",      "avx2",     "fma",      "avx512f",  "avx512_bf16", "avx512_fp16", "avx512_vnni",
        "avx_vnni", "amx_bf16", "amx_fp16", "amx_tile", "amx_int8",    "asimd",       "sve",
    };
    return flags;
}

CpuInfo parseCpuInfo(const std::string &text)
{
    CpuInfo cpu;
    const CpuTopology topology = parseCpuTopology(text);
    cpu.logicalCpus = topology.logicalCpus;
    cpu.sockets = topology.sockets;
    cpu.physicalCores = topology.physicalCores;
    std::set<std::string> flagSet;
    for (const std::string &line : splitLines(text)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        const std::string key = trim(line.substr(0, colon));
        const std::string value = trim(line.substr(colon + 1));
        if (key == "model name" && cpu.model.empty()) {
            cpu.model = value;
        } else if (key == "vendor_id" && cpu.vendor.empty()) {
            cpu.vendor = value;
        } else if (key == "CPU implementer" && cpu.vendor.empty()) {
            cpu.vendor = "ARM implementer " + value;
        } else if (key == "flags" || key == "Features") {
            for (const std::string &flag : splitWhitespace(value))
                flagSet.insert(flag);
        }
    }
    for (const std::string &flag : interestingCpuFlags()) {
        if (flagSet.count(flag))
            cpu.flags.push_back(flag);
    }
    return cpu;
}

MemoryInfo parseMemInfo(const std::string &text)
{
    MemoryInfo memory;
    for (const std::string &line : splitLines(text)) {
        const auto words = splitWhitespace(line);
        if (words.size() < 2)
            continue;
        uint64_t value = std::strtoull(words[1].c_str(), nullptr, 10);
        if (words.size() >= 3 && words[2] == "kB")
            value *= 1024;
        if (words[0] == "MemTotal:")
            memory.totalBytes = value;
        else if (words[0] == "MemAvailable:")
            memory.availableBytes = value;
        else if (words[0] == "SwapTotal:")
            memory.swapTotalBytes = value;
        else if (words[0] == "SwapFree:")
            memory.swapFreeBytes = value;
    }
    return memory;
}

uint64_t parseNodeMemTotal(const std::string &text)
{
    for (const std::string &line : splitLines(text)) {
        const auto words = splitWhitespace(line);
        // "Node 0 MemTotal: 32768 kB"
        if (words.size() >= 4 && words[0] == "Node" && words[2] == "MemTotal:") {
            uint64_t value = std::strtoull(words[3].c_str(), nullptr, 10);
            if (words.size() >= 5 && words[4] == "kB")
                value *= 1024;
            return value;
        }
    }
    return 0;
}

static bool parseNonNegative(const std::string &text, int &value)
{
    if (text.empty() || text.size() > 9 ||
        !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
        return false;
    value = std::atoi(text.c_str());
    return true;
}

bool parseCpuList(const std::string &text, std::vector<int> &cpus)
{
    cpus.clear();
    const std::string list = trim(text);
    if (list.empty())
        return true;
    std::istringstream stream(list);
    std::string part;
    while (std::getline(stream, part, ',')) {
        part = trim(part);
        const auto dash = part.find('-');
        int first = 0;
        int last = 0;
        if (dash == std::string::npos) {
            if (!parseNonNegative(part, first))
                return false;
            last = first;
        } else if (!parseNonNegative(part.substr(0, dash), first) || !parseNonNegative(part.substr(dash + 1), last) ||
                   last < first) {
            return false;
        }
        for (int cpu = first; cpu <= last; ++cpu)
            cpus.push_back(cpu);
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return true;
}

std::string formatCpuList(const std::vector<int> &input)
{
    std::vector<int> cpus = input;
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    std::string out;
    for (size_t i = 0; i < cpus.size();) {
        size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
            ++j;
        if (!out.empty())
            out += ',';
        out += std::to_string(cpus[i]);
        if (j > i)
            out += '-' + std::to_string(cpus[j]);
        i = j + 1;
    }
    return out;
}

std::set<std::string> parseIpv4DefaultRoutes(const std::string &text)
{
    // Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT (hex, host order)
    constexpr unsigned long RouteUp = 0x0001;
    std::set<std::string> interfaces;
    for (const std::string &line : splitLines(text)) {
        const auto words = splitWhitespace(line);
        if (words.size() < 8 || words[0] == "Iface")
            continue;
        const unsigned long destination = std::strtoul(words[1].c_str(), nullptr, 16);
        const unsigned long flags = std::strtoul(words[3].c_str(), nullptr, 16);
        const unsigned long mask = std::strtoul(words[7].c_str(), nullptr, 16);
        if (destination == 0 && mask == 0 && (flags & RouteUp))
            interfaces.insert(words[0]);
    }
    return interfaces;
}

std::set<std::string> parseIpv6DefaultRoutes(const std::string &text)
{
    // destination prefix source prefix next-hop metric refcount use flags interface
    constexpr unsigned long RouteUp = 0x0001;
    constexpr unsigned long RouteReject = 0x0200;
    std::set<std::string> interfaces;
    for (const std::string &line : splitLines(text)) {
        const auto words = splitWhitespace(line);
        if (words.size() < 10)
            continue;
        const bool zeroDestination = words[0].find_first_not_of('0') == std::string::npos;
        const unsigned long prefix = std::strtoul(words[1].c_str(), nullptr, 16);
        const unsigned long flags = std::strtoul(words[8].c_str(), nullptr, 16);
        if (zeroDestination && prefix == 0 && (flags & RouteUp) && !(flags & RouteReject) && words[9] != "lo")
            interfaces.insert(words[9]);
    }
    return interfaces;
}

} // namespace accel::hardware
