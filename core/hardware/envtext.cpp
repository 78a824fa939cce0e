#include "core/hardware/envtext.h"

#include "core/hardware/procparsers.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

namespace accel::hardware {

std::string formatGigabytes(uint64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

namespace {

std::string orText(const std::string &value, const std::string &fallback)
{
    return value.empty() ? fallback : value;
}

// Python's str() of a YAML scalar written by PyYAML.
std::string pythonScalar(const std::string &raw, bool quoteStrings)
{
    std::string value = trim(raw);
    if (value == "true" || value == "True")
        return "True";
    if (value == "false" || value == "False")
        return "False";
    if (value.empty() || value == "null" || value == "~")
        return "None";
    if (value == "[]" || value == "{}")
        return value;
    bool quoted = false;
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
        quoted = true;
    }
    const bool number = !quoted && !value.empty() && value.find_first_not_of("0123456789.-+e") == std::string::npos;
    if (number || !quoteStrings)
        return value;
    return "'" + value + "'";
}

std::string pythonJson(const nlohmann::ordered_json &value, bool top)
{
    if (value.is_boolean())
        return value.get<bool>() ? "True" : "False";
    if (value.is_null())
        return "None";
    if (value.is_string())
        return top ? value.get<std::string>() : "'" + value.get<std::string>() + "'";
    if (value.is_array()) {
        std::string out = "[";
        for (size_t i = 0; i < value.size(); ++i)
            out += (i ? ", " : "") + pythonJson(value[i], false);
        return out + "]";
    }
    if (value.is_object()) {
        std::string out = "{";
        bool first = true;
        for (const auto &[key, item] : value.items()) {
            out += (first ? "'" : ", '") + key + "': " + pythonJson(item, false);
            first = false;
        }
        return out + "}";
    }
    return value.dump();
}

std::string flags(const CpuInfo &cpu)
{
    std::string out;
    for (const auto &flag : cpu.flags)
        out += (out.empty() ? "" : " ") + flag;
    return out.empty() ? "none of the tracked ones" : out;
}

void writeGpus(std::ostringstream &out, const GpuSection &gpu)
{
    out << "\nGPUs:\n";
    if (gpu.gpus.empty()) {
        out << "- none" << (gpu.unavailableReason.empty() ? "" : " (" + gpu.unavailableReason + ")") << "\n";
        return;
    }
    out << "- Source: " << gpu.source << ", driver " << orText(gpu.driverVersion, "unknown") << ", CUDA driver API "
        << orText(gpu.cudaDriverVersion, "unknown") << "\n";
    for (const auto &g : gpu.gpus) {
        out << "- GPU" << g.index << ": " << g.name << ", " << formatGigabytes(g.memoryTotalBytes) << " ("
            << formatGigabytes(g.memoryFreeBytes) << " free), compute capability "
            << (g.hasComputeCapability() ? std::to_string(g.computeMajor) + "." + std::to_string(g.computeMinor)
                                         : "unknown");
        if (g.pcieGeneration > 0)
            out << ", PCIe gen" << g.pcieGeneration << " x" << g.pcieWidth;
        if (g.nvlinkActiveLinks > 0)
            out << ", " << g.nvlinkActiveLinks << " NVLinks";
        if (!g.processes.empty())
            out << ", " << g.processes.size() << " compute processes";
        if (!g.pciBusId.empty())
            out << " [" << g.pciBusId << "]";
        out << "\n";
    }
    const GpuTopology &topology = gpu.topology;
    if (topology.empty())
        return;
    out << "\nTopology:\n";
    for (const auto &device : topology.devices)
        out << "\t" << device;
    out << "\tCPU Affinity\tNUMA Affinity\n";
    for (size_t i = 0; i < topology.devices.size(); ++i) {
        out << topology.devices[i];
        for (const auto &link : topology.links[i])
            out << "\t" << link;
        out << "\t" << orText(topology.cpuAffinity[i], "N/A") << "\t" << orText(topology.numaAffinity[i], "N/A")
            << "\n";
    }
    for (const auto &[id, name] : topology.nicNames)
        out << "  " << id << ": " << name << "\n";
}

} // namespace

Result<std::vector<std::pair<std::string, std::string>>> configEntriesFromText(const std::string &text, bool json,
                                                                               const std::string &fileName)
{
    std::vector<std::pair<std::string, std::string>> entries;
    if (json || trim(text).rfind("{", 0) == 0) {
        // JSON (also what `accelerate config default` writes into a .yaml file).
        try {
            const auto document = nlohmann::ordered_json::parse(text);
            if (!document.is_object())
                return makeError(ErrorCode::InvalidInput, "expected a JSON object at the top level", fileName);
            for (const auto &[key, value] : document.items())
                entries.push_back({key, pythonJson(value, true)});
            return entries;
        } catch (const nlohmann::json::exception &error) {
            return makeError(ErrorCode::InvalidInput, std::string("not valid JSON: ") + error.what(), fileName);
        }
    }
    // Block-style YAML as Accelerate writes it: top-level "key: value", nested blocks indented.
    std::string nestedKey;
    std::vector<std::string> nested;
    bool nestedIsList = false;
    auto closeNested = [&] {
        if (nestedKey.empty())
            return;
        std::string value;
        for (size_t i = 0; i < nested.size(); ++i)
            value += (i ? ", " : "") + nested[i];
        entries.push_back({nestedKey, nestedIsList ? "[" + value + "]" : "{" + value + "}"});
        nestedKey.clear();
        nested.clear();
    };
    int lineNumber = 0;
    for (const std::string &line : splitLines(text)) {
        ++lineNumber;
        const std::string content = trim(line);
        if (content.empty() || content[0] == '#' || content == "---")
            continue;
        const bool indented = line[0] == ' ' || line[0] == '\t';
        if (indented || (content.rfind("- ", 0) == 0 && !nestedKey.empty())) {
            if (nestedKey.empty())
                return makeError(ErrorCode::InvalidInput, "indented line outside a block: '" + content + "'",
                                 fileName + ": line " + std::to_string(lineNumber));
            if (content.rfind("- ", 0) == 0) {
                nestedIsList = true;
                nested.push_back(pythonScalar(content.substr(2), true));
            } else {
                const auto colon = content.find(':');
                nested.push_back("'" + trim(content.substr(0, colon)) + "': " +
                                 (colon == std::string::npos ? "None" : pythonScalar(content.substr(colon + 1), true)));
            }
            continue;
        }
        closeNested();
        const auto colon = content.find(':');
        if (colon == std::string::npos)
            return makeError(ErrorCode::InvalidInput, "expected 'key: value', got '" + content + "'",
                             fileName + ": line " + std::to_string(lineNumber));
        const std::string key = trim(content.substr(0, colon));
        const std::string value = trim(content.substr(colon + 1));
        if (value.empty()) {
            nestedKey = key;
            nestedIsList = false;
        } else {
            entries.push_back({key, pythonScalar(value, false)});
        }
    }
    closeNested();
    return entries;
}

std::string formatEnvText(const HardwareReport &report)
{
    std::ostringstream out;
    const PythonInfo &python = report.python;
    const WorkerCapabilities &worker = report.worker;
    out << envHeaderLine() << "\n\n";
    out << "- `Accel Studio` version: " << orText(report.accelVersion, "unknown") << "\n";
    out << "- Platform: " << report.system.platform << "\n";
    out << "- `accelerate` bash location: " << orText(python.accelerateExecutable, "not found") << "\n";
    out << "- Python version: "
        << (python.available               ? python.version
            : python.error == "not probed" ? python.error
                                           : "not found (" + python.error + ")")
        << "\n";
    out << "- Numpy version: " << orText(python.numpyVersion, "not installed") << "\n";
    out << "- PyTorch version: " << orText(python.torchVersion, "not installed") << "\n";
    out << "- Accelerate version: " << orText(python.accelerateVersion, "not installed") << "\n";
    if (worker.available)
        out << "- accel-worker libtorch version: " << worker.torchVersion
            << " (CUDA: " << (worker.cudaCompiled ? "compiled " + orText(worker.cudaVersion, "in") : std::string("no"))
            << (worker.cudaCompiled ? (worker.cuda ? ", " + std::to_string(worker.gpuCount) + " GPU(s)" : ", no GPU")
                                    : "")
            << ", NCCL: " << (worker.nccl ? orText(worker.ncclVersion, "yes") : "no")
            << ", gloo: " << (worker.gloo ? "yes" : "no") << ", MPI: " << (worker.mpi ? "yes" : "no")
            << ", BLAS: " << orText(worker.blas, "unknown") << ")\n";
    else
        out << "- accel-worker libtorch version: not available (" << worker.error << ")\n";
    out << "- PyTorch accelerator: " << (report.gpu.gpus.empty() ? "N/A" : "CUDA") << "\n";
    out << "- System RAM: " << formatGigabytes(report.memory.totalBytes) << "\n";
    if (!report.gpu.gpus.empty())
        out << "- GPU type: " << report.gpu.gpus.front().name << "\n";
    const ConfigSection &config = report.config;
    out << "- `Accelerate` " << (config.passed ? "config passed" : "default config") << ":\n";
    if (!config.found)
        out << "\tNot found\n";
    else if (!config.error.empty())
        out << "\t- error: " << config.error << "\n";
    for (const auto &[key, value] : config.entries)
        out << "\t- " << key << ": " << value << "\n";

    const CpuInfo &cpu = report.cpu;
    out << "\nSystem:\n- Host: " << report.system.hostname << "\n- OS: " << report.system.osName
        << "\n- Kernel: " << report.system.kernelRelease << " (" << report.system.machine << ")\n";
    out << "\nCPU:\n- Model: " << orText(cpu.model, "unknown") << (cpu.vendor.empty() ? "" : " (" + cpu.vendor + ")")
        << "\n";
    out << "- Sockets: " << cpu.sockets << ", physical cores: " << cpu.physicalCores
        << ", logical CPUs: " << cpu.logicalCpus << ", available to this process: " << cpu.availableCpus << "\n";
    out << "- ISA: " << flags(cpu) << "\n";
    if (report.worker.available) {
        const auto &matrix = report.worker.cpuMatrixFeatures;
        std::string features;
        for (const auto &feature : matrix)
            features += (features.empty() ? "" : ", ") + feature;
        out << "- Matrix features (libtorch's view): " << (features.empty() ? std::string("none") : features) << "\n";
        for (const auto &[precision, runsOn] : report.worker.cpuPrecisions)
            out << "- mixed_precision " << precision << " runs on: " << runsOn << "\n";
    }
    out << "\nNUMA:\n";
    if (report.numaNodes.empty())
        out << "- not reported\n";
    for (const auto &node : report.numaNodes)
        out << "- node" << node.id << ": CPUs " << formatCpuList(node.cpus)
            << (node.memoryTotalBytes ? ", " + formatGigabytes(node.memoryTotalBytes) : std::string()) << "\n";
    const MemoryInfo &memory = report.memory;
    out << "\nMemory:\n- RAM: " << formatGigabytes(memory.availableBytes) << " available of "
        << formatGigabytes(memory.totalBytes) << "\n- Swap: " << formatGigabytes(memory.swapFreeBytes) << " free of "
        << formatGigabytes(memory.swapTotalBytes) << "\n";
    out << "\nDisks:\n";
    for (const auto &disk : report.disks) {
        if (!disk.error.empty())
            out << "- " << disk.path << ": " << disk.error << "\n";
        else
            out << "- " << disk.path << ": " << formatGigabytes(disk.freeBytes) << " free of "
                << formatGigabytes(disk.totalBytes) << "\n";
    }
    out << "\nNetwork:\n";
    for (const auto &interface : report.network) {
        out << "- " << interface.name << " (" << (interface.up ? "up" : "down");
        if (interface.mtu > 0)
            out << ", MTU " << interface.mtu;
        if (interface.speedMbps > 0)
            out << ", " << interface.speedMbps << " Mb/s";
        if (interface.defaultRouteIpv4 || interface.defaultRouteIpv6)
            out << ", default route " << (interface.defaultRouteIpv4 ? "IPv4" : "")
                << (interface.defaultRouteIpv4 && interface.defaultRouteIpv6 ? "+" : "")
                << (interface.defaultRouteIpv6 ? "IPv6" : "");
        out << ")";
        for (size_t i = 0; i < interface.addresses.size(); ++i)
            out << (i ? ", " : ": ") << interface.addresses[i].address << "/" << interface.addresses[i].prefixLength;
        out << "\n";
    }
    writeGpus(out, report.gpu);
    return out.str();
}

} // namespace accel::hardware
