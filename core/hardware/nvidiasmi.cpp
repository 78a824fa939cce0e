#include "core/hardware/nvidiasmi.h"

#include "core/hardware/procparsers.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace accel::hardware {

const std::vector<std::string> &nvidiaSmiQueryFields()
{
    static const std::vector<std::string> fields = {
        "index",
        "name",
        "uuid",
        "pci.bus_id",
        "memory.total",
        "memory.used",
        "memory.free",
        "compute_cap",
        "driver_version",
        "pcie.link.gen.current",
        "pcie.link.width.current",
    };
    return fields;
}

std::vector<std::string> nvidiaSmiQueryArguments()
{
    std::string query = "--query-gpu=";
    for (size_t i = 0; i < nvidiaSmiQueryFields().size(); ++i)
        query += (i ? "," : "") + nvidiaSmiQueryFields()[i];
    return {query, "--format=csv,noheader,nounits"};
}

static bool isMissing(const std::string &value)
{
    return value.empty() || value == "[N/A]" || value == "N/A" || value == "[Not Supported]" ||
           value == "[Unknown Error]" || value == "[Insufficient Permissions]";
}

static std::vector<std::string> splitCsvLine(const std::string &line)
{
    // nvidia-smi never quotes; a ", " separates the columns.
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream stream(line);
    while (std::getline(stream, cell, ','))
        cells.push_back(trim(cell));
    if (!line.empty() && line.back() == ',')
        cells.emplace_back();
    return cells;
}

static uint64_t mibToBytes(const std::string &value)
{
    return static_cast<uint64_t>(std::strtod(value.c_str(), nullptr) * 1024.0 * 1024.0 + 0.5);
}

Result<GpuSection> parseNvidiaSmiQuery(const std::string &text, const std::vector<std::string> &fields)
{
    GpuSection section;
    section.source = "nvidia-smi";
    int lineNumber = 0;
    for (const std::string &raw : splitLines(text)) {
        ++lineNumber;
        const std::string line = trim(raw);
        if (line.empty())
            continue;
        const auto cells = splitCsvLine(line);
        if (cells.size() != fields.size()) {
            return makeError(ErrorCode::InvalidInput,
                             "expected " + std::to_string(fields.size()) + " comma-separated columns (" +
                                 std::to_string(fields.size()) + " --query-gpu fields), got " +
                                 std::to_string(cells.size()) + ": '" + line + "'",
                             "nvidia-smi output: line " + std::to_string(lineNumber));
        }
        GpuInfo gpu;
        gpu.index = static_cast<int>(section.gpus.size());
        for (size_t i = 0; i < fields.size(); ++i) {
            const std::string &field = fields[i];
            const std::string &value = cells[i];
            if (isMissing(value))
                continue;
            if (field == "index") {
                gpu.index = std::atoi(value.c_str());
            } else if (field == "name") {
                gpu.name = value;
            } else if (field == "uuid") {
                gpu.uuid = value;
            } else if (field == "pci.bus_id") {
                gpu.pciBusId = value;
            } else if (field == "memory.total") {
                gpu.memoryTotalBytes = mibToBytes(value);
            } else if (field == "memory.used") {
                gpu.memoryUsedBytes = mibToBytes(value);
            } else if (field == "memory.free") {
                gpu.memoryFreeBytes = mibToBytes(value);
            } else if (field == "compute_cap") {
                const auto dot = value.find('.');
                if (dot == std::string::npos)
                    return makeError(ErrorCode::InvalidInput, "compute_cap: expected MAJOR.MINOR, got '" + value + "'",
                                     "nvidia-smi output: line " + std::to_string(lineNumber));
                gpu.computeMajor = std::atoi(value.substr(0, dot).c_str());
                gpu.computeMinor = std::atoi(value.substr(dot + 1).c_str());
            } else if (field == "driver_version") {
                section.driverVersion = value;
            } else if (field == "pcie.link.gen.current") {
                gpu.pcieGeneration = std::atoi(value.c_str());
            } else if (field == "pcie.link.width.current") {
                gpu.pcieWidth = std::atoi(value.c_str());
            }
        }
        section.gpus.push_back(std::move(gpu));
    }
    return section;
}

static std::string stripAnsi(const std::string &text)
{
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
            i += 2;
            while (i < text.size() && !(text[i] >= '@' && text[i] <= '~'))
                ++i;
            continue;
        }
        out += text[i];
    }
    return out;
}

bool isNvLink(const std::string &link)
{
    return link.size() > 2 && link[0] == 'N' && link[1] == 'V';
}

static bool isDeviceColumn(const std::string &word)
{
    auto startsWith = [&](const char *prefix) { return word.rfind(prefix, 0) == 0; };
    return startsWith("GPU") || startsWith("NIC") || startsWith("mlx") || startsWith("NVSwitch");
}

Result<GpuTopology> parseNvidiaSmiTopology(const std::string &input)
{
    GpuTopology topology;
    const auto lines = splitLines(stripAnsi(input));
    size_t row = 0;
    // Header: device columns, then "CPU Affinity", "NUMA Affinity", "GPU NUMA ID" (words vary).
    for (; row < lines.size(); ++row) {
        const auto words = splitWhitespace(lines[row]);
        if (!words.empty() && words[0].rfind("GPU0", 0) == 0) {
            for (const auto &word : words) {
                if (!isDeviceColumn(word) || word == "GPU" /* "GPU NUMA ID" */)
                    break;
                topology.devices.push_back(word);
            }
            ++row;
            break;
        }
    }
    if (topology.devices.empty())
        return makeError(ErrorCode::InvalidInput, "no header line with GPU0, GPU1, ... columns found",
                         "nvidia-smi topo -m output");
    const size_t count = topology.devices.size();
    topology.links.assign(count, std::vector<std::string>(count));
    topology.cpuAffinity.assign(count, {});
    topology.numaAffinity.assign(count, {});
    std::vector<bool> seen(count, false);
    for (; row < lines.size(); ++row) {
        const auto words = splitWhitespace(lines[row]);
        if (words.empty())
            continue;
        // Legend: "  NIC0: mlx5_0"
        if (words.size() == 2 && words[0].size() > 1 && words[0].back() == ':') {
            topology.nicNames.push_back({words[0].substr(0, words[0].size() - 1), words[1]});
            continue;
        }
        const auto found = std::find(topology.devices.begin(), topology.devices.end(), words[0]);
        if (found == topology.devices.end())
            continue; // "Legend:", explanations
        const size_t index = static_cast<size_t>(found - topology.devices.begin());
        if (words.size() < count + 1)
            return makeError(ErrorCode::InvalidInput,
                             "row " + words[0] + " has " + std::to_string(words.size() - 1) +
                                 " cells, expected at least " + std::to_string(count),
                             "nvidia-smi topo -m output: line " + std::to_string(row + 1));
        for (size_t j = 0; j < count; ++j)
            topology.links[index][j] = words[j + 1];
        if (words.size() > count + 1 && words[0].rfind("GPU", 0) == 0)
            topology.cpuAffinity[index] = words[count + 1];
        if (words.size() > count + 2 && words[0].rfind("GPU", 0) == 0)
            topology.numaAffinity[index] = words[count + 2];
        seen[index] = true;
    }
    for (size_t i = 0; i < count; ++i) {
        if (!seen[i])
            return makeError(ErrorCode::InvalidInput, "no row for " + topology.devices[i], "nvidia-smi topo -m output");
    }
    return topology;
}

Result<GpuSection> gpuSectionFromNvidiaSmi(const std::string &queryText, const std::string &topologyText)
{
    auto section = parseNvidiaSmiQuery(queryText);
    if (!section)
        return section;
    if (trim(topologyText).empty())
        return section;
    auto topology = parseNvidiaSmiTopology(topologyText);
    if (!topology)
        return makeError(topology.error().code, topology.error().message, topology.error().context);
    for (GpuInfo &gpu : section->gpus) {
        const std::string self = "GPU" + std::to_string(gpu.index);
        const auto row = std::find(topology->devices.begin(), topology->devices.end(), self);
        if (row == topology->devices.end())
            continue;
        // "NV12" to every peer on a switch counts the links once: the largest bond is the link count.
        int links = 0;
        for (const std::string &cell : topology->links[static_cast<size_t>(row - topology->devices.begin())]) {
            if (isNvLink(cell))
                links = std::max(links, std::atoi(cell.c_str() + 2));
        }
        gpu.nvlinkActiveLinks = links;
    }
    section->topology = std::move(*topology);
    return section;
}

std::string GpuTopology::link(const std::string &a, const std::string &b) const
{
    const auto ia = std::find(devices.begin(), devices.end(), a);
    const auto ib = std::find(devices.begin(), devices.end(), b);
    if (ia == devices.end() || ib == devices.end())
        return {};
    return links[static_cast<size_t>(ia - devices.begin())][static_cast<size_t>(ib - devices.begin())];
}

} // namespace accel::hardware
