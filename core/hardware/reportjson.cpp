#include "core/hardware/reportjson.h"

#include "core/hardware/procparsers.h"

#include <nlohmann/json.hpp>

namespace accel::hardware {

using Json = nlohmann::ordered_json;

namespace {

Json addressesToJson(const std::vector<InterfaceAddress> &addresses)
{
    Json list = Json::array();
    for (const auto &address : addresses)
        list.push_back(
            {{"family", address.family}, {"address", address.address}, {"prefix_length", address.prefixLength}});
    return list;
}

Json precisionsToJson(const std::vector<std::pair<std::string, std::string>> &precisions)
{
    Json out = Json::array();
    for (const auto &[precision, runsOn] : precisions)
        out.push_back({{"precision", precision}, {"runs_on", runsOn}});
    return out;
}

Json gpuToJson(const GpuInfo &gpu)
{
    Json processes = Json::array();
    for (const auto &process : gpu.processes)
        processes.push_back({{"pid", process.pid}, {"used_memory_bytes", process.usedMemoryBytes}});
    Json capability = nullptr;
    if (gpu.hasComputeCapability())
        capability = std::to_string(gpu.computeMajor) + "." + std::to_string(gpu.computeMinor);
    return {{"index", gpu.index},
            {"name", gpu.name},
            {"uuid", gpu.uuid},
            {"pci_bus_id", gpu.pciBusId},
            {"memory_total_bytes", gpu.memoryTotalBytes},
            {"memory_used_bytes", gpu.memoryUsedBytes},
            {"memory_free_bytes", gpu.memoryFreeBytes},
            {"compute_capability", capability},
            {"pcie_generation", gpu.pcieGeneration},
            {"pcie_width", gpu.pcieWidth},
            {"nvlink_active_links", gpu.nvlinkActiveLinks},
            {"processes", processes}};
}

Json topologyToJson(const GpuTopology &topology)
{
    Json nics = Json::object();
    for (const auto &[id, name] : topology.nicNames)
        nics[id] = name;
    return {{"devices", topology.devices},
            {"links", topology.links},
            {"cpu_affinity", topology.cpuAffinity},
            {"numa_affinity", topology.numaAffinity},
            {"nics", nics}};
}

// Reads typed values out of a parsed document; the first type error wins and names its key.
class Reader {
public:
    std::string error;

    const Json *child(const Json &object, const char *key, const std::string &where, Json::value_t expected)
    {
        if (!object.is_object())
            return nullptr;
        const auto found = object.find(key);
        if (found == object.end() || found->is_null())
            return nullptr;
        const bool matches =
            found->type() == expected || (expected == Json::value_t::number_integer && found->is_number_unsigned());
        if (!matches) {
            fail(where + key, std::string("expected ") + typeName(expected) + ", got " + found->type_name());
            return nullptr;
        }
        return &*found;
    }

    void read(const Json &o, const char *key, const std::string &where, std::string &out)
    {
        if (const Json *v = child(o, key, where, Json::value_t::string))
            out = v->get<std::string>();
    }
    void read(const Json &o, const char *key, const std::string &where, bool &out)
    {
        if (const Json *v = child(o, key, where, Json::value_t::boolean))
            out = v->get<bool>();
    }
    void read(const Json &o, const char *key, const std::string &where, int &out)
    {
        if (const Json *v = child(o, key, where, Json::value_t::number_integer))
            out = v->get<int>();
    }
    void read(const Json &o, const char *key, const std::string &where, unsigned &out)
    {
        if (const Json *v = child(o, key, where, Json::value_t::number_integer))
            out = v->get<unsigned>();
    }
    void read(const Json &o, const char *key, const std::string &where, uint64_t &out)
    {
        if (const Json *v = child(o, key, where, Json::value_t::number_integer))
            out = v->get<uint64_t>();
    }
    void read(const Json &o, const char *key, const std::string &where, std::vector<std::string> &out)
    {
        const Json *v = child(o, key, where, Json::value_t::array);
        if (!v)
            return;
        out.clear();
        for (const auto &item : *v) {
            if (!item.is_string())
                return fail(where + key, "expected an array of strings");
            out.push_back(item.get<std::string>());
        }
    }
    // Calls `each(item, where)` for every object in the array at `key`.
    template <typename F>
    void forEach(const Json &o, const char *key, const std::string &where, F each)
    {
        const Json *v = child(o, key, where, Json::value_t::array);
        if (!v)
            return;
        for (size_t i = 0; i < v->size(); ++i) {
            const std::string itemWhere = where + key + "[" + std::to_string(i) + "].";
            if (!(*v)[i].is_object())
                return fail(where + key + "[" + std::to_string(i) + "]", "expected an object");
            each((*v)[i], itemWhere);
        }
    }
    void fail(const std::string &key, const std::string &message)
    {
        if (error.empty())
            error = key + ": " + message;
    }

private:
    static const char *typeName(Json::value_t type)
    {
        switch (type) {
        case Json::value_t::string:
            return "a string";
        case Json::value_t::boolean:
            return "true or false";
        case Json::value_t::number_integer:
            return "an integer";
        case Json::value_t::array:
            return "an array";
        case Json::value_t::object:
            return "an object";
        default:
            return "another type";
        }
    }
};

const Json &objectAt(const Json &parent, const char *key, Reader &reader, const std::string &where = {})
{
    static const Json empty = Json::object();
    const Json *found = reader.child(parent, key, where, Json::value_t::object);
    return found ? *found : empty;
}

void readGpu(Reader &r, const Json &o, const std::string &w, GpuInfo &gpu)
{
    r.read(o, "index", w, gpu.index);
    r.read(o, "name", w, gpu.name);
    r.read(o, "uuid", w, gpu.uuid);
    r.read(o, "pci_bus_id", w, gpu.pciBusId);
    r.read(o, "memory_total_bytes", w, gpu.memoryTotalBytes);
    r.read(o, "memory_used_bytes", w, gpu.memoryUsedBytes);
    r.read(o, "memory_free_bytes", w, gpu.memoryFreeBytes);
    std::string capability;
    r.read(o, "compute_capability", w, capability);
    if (!capability.empty()) {
        const auto dot = capability.find('.');
        if (dot == std::string::npos)
            r.fail(w + "compute_capability", "expected \"MAJOR.MINOR\", got \"" + capability + "\"");
        else {
            gpu.computeMajor = std::atoi(capability.substr(0, dot).c_str());
            gpu.computeMinor = std::atoi(capability.substr(dot + 1).c_str());
        }
    }
    r.read(o, "pcie_generation", w, gpu.pcieGeneration);
    r.read(o, "pcie_width", w, gpu.pcieWidth);
    r.read(o, "nvlink_active_links", w, gpu.nvlinkActiveLinks);
    r.forEach(o, "processes", w, [&](const Json &p, const std::string &pw) {
        GpuProcess process;
        r.read(p, "pid", pw, process.pid);
        r.read(p, "used_memory_bytes", pw, process.usedMemoryBytes);
        gpu.processes.push_back(process);
    });
}

void readTopology(Reader &r, const Json &o, const std::string &w, GpuTopology &topology)
{
    r.read(o, "devices", w, topology.devices);
    r.read(o, "cpu_affinity", w, topology.cpuAffinity);
    r.read(o, "numa_affinity", w, topology.numaAffinity);
    if (const Json *links = r.child(o, "links", w, Json::value_t::array)) {
        for (const auto &row : *links) {
            std::vector<std::string> cells;
            for (const auto &cell : row.is_array() ? row : Json::array()) {
                if (cell.is_string())
                    cells.push_back(cell.get<std::string>());
            }
            if (cells.size() != topology.devices.size())
                return r.fail(w + "links", "expected a square matrix over \"devices\"");
            topology.links.push_back(std::move(cells));
        }
        if (topology.links.size() != topology.devices.size())
            return r.fail(w + "links", "expected one row per device");
    }
    for (const auto &[id, name] : objectAt(o, "nics", r, w).items()) {
        if (name.is_string())
            topology.nicNames.push_back({id, name.get<std::string>()});
    }
    topology.cpuAffinity.resize(topology.devices.size());
    topology.numaAffinity.resize(topology.devices.size());
}

} // namespace

std::string reportToJson(const HardwareReport &report, int indent)
{
    Json json;
    json["schema"] = EnvSchema;
    json["version"] = EnvSchemaVersion;
    json["generated_at"] = report.generatedAt;
    json["accel_version"] = report.accelVersion;
    const SystemInfo &s = report.system;
    json["system"] = {{"hostname", s.hostname},
                      {"os_name", s.osName},
                      {"os_id", s.osId},
                      {"os_version_id", s.osVersionId},
                      {"kernel_name", s.kernelName},
                      {"kernel_release", s.kernelRelease},
                      {"kernel_version", s.kernelVersion},
                      {"machine", s.machine},
                      {"libc_version", s.libcVersion},
                      {"platform", s.platform}};
    const CpuInfo &c = report.cpu;
    json["cpu"] = {{"vendor", c.vendor},
                   {"model", c.model},
                   {"sockets", c.sockets},
                   {"physical_cores", c.physicalCores},
                   {"logical_cpus", c.logicalCpus},
                   {"available_cpus", c.availableCpus},
                   {"flags", c.flags}};
    json["numa_nodes"] = Json::array();
    for (const auto &node : report.numaNodes)
        json["numa_nodes"].push_back(
            {{"id", node.id}, {"cpus", formatCpuList(node.cpus)}, {"memory_total_bytes", node.memoryTotalBytes}});
    const MemoryInfo &m = report.memory;
    json["memory"] = {{"total_bytes", m.totalBytes},
                      {"available_bytes", m.availableBytes},
                      {"swap_total_bytes", m.swapTotalBytes},
                      {"swap_free_bytes", m.swapFreeBytes}};
    json["disks"] = Json::array();
    for (const auto &disk : report.disks)
        json["disks"].push_back({{"path", disk.path},
                                 {"total_bytes", disk.totalBytes},
                                 {"free_bytes", disk.freeBytes},
                                 {"error", disk.error}});
    json["network"] = Json::array();
    for (const auto &i : report.network)
        json["network"].push_back({{"name", i.name},
                                   {"up", i.up},
                                   {"loopback", i.loopback},
                                   {"mtu", i.mtu},
                                   {"speed_mbps", i.speedMbps},
                                   {"default_route_ipv4", i.defaultRouteIpv4},
                                   {"default_route_ipv6", i.defaultRouteIpv6},
                                   {"addresses", addressesToJson(i.addresses)}});
    const GpuSection &g = report.gpu;
    Json gpus = Json::array();
    for (const auto &gpu : g.gpus)
        gpus.push_back(gpuToJson(gpu));
    json["gpu"] = {{"source", g.source},
                   {"unavailable_reason", g.unavailableReason},
                   {"driver_version", g.driverVersion},
                   {"cuda_driver_version", g.cudaDriverVersion},
                   {"gpus", gpus},
                   {"topology", topologyToJson(g.topology)}};
    const WorkerCapabilities &w = report.worker;
    json["worker"] = {{"available", w.available},
                      {"error", w.error},
                      {"path", w.path},
                      {"torch_version", w.torchVersion},
                      {"cuda_compiled", w.cudaCompiled},
                      {"cuda", w.cuda},
                      {"gpu_count", w.gpuCount},
                      {"cuda_version", w.cudaVersion},
                      {"cudnn", w.cudnn},
                      {"nccl", w.nccl},
                      {"nccl_version", w.ncclVersion},
                      {"gloo", w.gloo},
                      {"mpi", w.mpi},
                      {"openmp_threads", w.openmpThreads},
                      {"blas", w.blas},
                      {"cpu_matrix_features", w.cpuMatrixFeatures},
                      {"cpu_precisions", precisionsToJson(w.cpuPrecisions)}};
    const PythonInfo &p = report.python;
    json["python"] = {{"available", p.available},   {"error", p.error},
                      {"executable", p.executable}, {"version", p.version},
                      {"torch", p.torchVersion},    {"accelerate", p.accelerateVersion},
                      {"numpy", p.numpyVersion},    {"accelerate_executable", p.accelerateExecutable}};
    const ConfigSection &cfg = report.config;
    Json entries = Json::array();
    for (const auto &[key, value] : cfg.entries)
        entries.push_back({{"key", key}, {"value", value}});
    json["config"] = {
        {"path", cfg.path}, {"passed", cfg.passed}, {"found", cfg.found}, {"error", cfg.error}, {"entries", entries}};
    return json.dump(indent) + "\n";
}

Result<HardwareReport> reportFromJson(const std::string &text)
{
    Json json;
    try {
        json = Json::parse(text);
    } catch (const nlohmann::json::exception &error) {
        return makeError(ErrorCode::InvalidInput, std::string("not valid JSON: ") + error.what(), "accel.env report");
    }
    if (!json.is_object() || !json.contains("schema") || json["schema"] != EnvSchema)
        return makeError(ErrorCode::InvalidInput,
                         std::string("\"schema\": expected \"") + EnvSchema + "\", got " +
                             (json.is_object() && json.contains("schema") ? json["schema"].dump() : "nothing"),
                         "accel.env report");
    if (!json.contains("version") || !json["version"].is_number_integer())
        return makeError(ErrorCode::InvalidInput, "\"version\": expected an integer", "accel.env report");
    const int version = json["version"].get<int>();
    if (version < 1 || version > EnvSchemaVersion)
        return makeError(ErrorCode::Unsupported,
                         "\"version\": " + std::to_string(version) + " is not understood by this accel (knows 1.." +
                             std::to_string(EnvSchemaVersion) + ")",
                         "accel.env report");
    HardwareReport report;
    Reader r;
    r.read(json, "generated_at", "", report.generatedAt);
    r.read(json, "accel_version", "", report.accelVersion);
    {
        const Json &o = objectAt(json, "system", r);
        const std::string w = "system.";
        SystemInfo &s = report.system;
        r.read(o, "hostname", w, s.hostname);
        r.read(o, "os_name", w, s.osName);
        r.read(o, "os_id", w, s.osId);
        r.read(o, "os_version_id", w, s.osVersionId);
        r.read(o, "kernel_name", w, s.kernelName);
        r.read(o, "kernel_release", w, s.kernelRelease);
        r.read(o, "kernel_version", w, s.kernelVersion);
        r.read(o, "machine", w, s.machine);
        r.read(o, "libc_version", w, s.libcVersion);
        r.read(o, "platform", w, s.platform);
    }
    {
        const Json &o = objectAt(json, "cpu", r);
        const std::string w = "cpu.";
        CpuInfo &c = report.cpu;
        r.read(o, "vendor", w, c.vendor);
        r.read(o, "model", w, c.model);
        r.read(o, "sockets", w, c.sockets);
        r.read(o, "physical_cores", w, c.physicalCores);
        r.read(o, "logical_cpus", w, c.logicalCpus);
        r.read(o, "available_cpus", w, c.availableCpus);
        r.read(o, "flags", w, c.flags);
    }
    r.forEach(json, "numa_nodes", "", [&](const Json &o, const std::string &w) {
        NumaNode node;
        r.read(o, "id", w, node.id);
        std::string cpus;
        r.read(o, "cpus", w, cpus);
        if (!parseCpuList(cpus, node.cpus))
            r.fail(w + "cpus", "expected a CPU list like \"0-3,8\", got \"" + cpus + "\"");
        r.read(o, "memory_total_bytes", w, node.memoryTotalBytes);
        report.numaNodes.push_back(std::move(node));
    });
    {
        const Json &o = objectAt(json, "memory", r);
        const std::string w = "memory.";
        r.read(o, "total_bytes", w, report.memory.totalBytes);
        r.read(o, "available_bytes", w, report.memory.availableBytes);
        r.read(o, "swap_total_bytes", w, report.memory.swapTotalBytes);
        r.read(o, "swap_free_bytes", w, report.memory.swapFreeBytes);
    }
    r.forEach(json, "disks", "", [&](const Json &o, const std::string &w) {
        DiskInfo disk;
        r.read(o, "path", w, disk.path);
        r.read(o, "total_bytes", w, disk.totalBytes);
        r.read(o, "free_bytes", w, disk.freeBytes);
        r.read(o, "error", w, disk.error);
        report.disks.push_back(std::move(disk));
    });
    r.forEach(json, "network", "", [&](const Json &o, const std::string &w) {
        NetworkInterface i;
        r.read(o, "name", w, i.name);
        r.read(o, "up", w, i.up);
        r.read(o, "loopback", w, i.loopback);
        r.read(o, "mtu", w, i.mtu);
        r.read(o, "speed_mbps", w, i.speedMbps);
        r.read(o, "default_route_ipv4", w, i.defaultRouteIpv4);
        r.read(o, "default_route_ipv6", w, i.defaultRouteIpv6);
        r.forEach(o, "addresses", w, [&](const Json &a, const std::string &aw) {
            InterfaceAddress address;
            r.read(a, "family", aw, address.family);
            r.read(a, "address", aw, address.address);
            r.read(a, "prefix_length", aw, address.prefixLength);
            i.addresses.push_back(std::move(address));
        });
        report.network.push_back(std::move(i));
    });
    {
        const Json &o = objectAt(json, "gpu", r);
        const std::string w = "gpu.";
        GpuSection &g = report.gpu;
        r.read(o, "source", w, g.source);
        r.read(o, "unavailable_reason", w, g.unavailableReason);
        r.read(o, "driver_version", w, g.driverVersion);
        r.read(o, "cuda_driver_version", w, g.cudaDriverVersion);
        r.forEach(o, "gpus", w, [&](const Json &item, const std::string &iw) {
            GpuInfo gpu;
            readGpu(r, item, iw, gpu);
            g.gpus.push_back(std::move(gpu));
        });
        readTopology(r, objectAt(o, "topology", r, w), w + "topology.", g.topology);
    }
    {
        const Json &o = objectAt(json, "worker", r);
        const std::string w = "worker.";
        WorkerCapabilities &k = report.worker;
        r.read(o, "available", w, k.available);
        r.read(o, "error", w, k.error);
        r.read(o, "path", w, k.path);
        r.read(o, "torch_version", w, k.torchVersion);
        r.read(o, "cuda_compiled", w, k.cudaCompiled);
        r.read(o, "cuda", w, k.cuda);
        r.read(o, "gpu_count", w, k.gpuCount);
        r.read(o, "cuda_version", w, k.cudaVersion);
        r.read(o, "cudnn", w, k.cudnn);
        r.read(o, "nccl", w, k.nccl);
        r.read(o, "nccl_version", w, k.ncclVersion);
        r.read(o, "gloo", w, k.gloo);
        r.read(o, "mpi", w, k.mpi);
        r.read(o, "openmp_threads", w, k.openmpThreads);
        r.read(o, "blas", w, k.blas);
        r.read(o, "cpu_matrix_features", w, k.cpuMatrixFeatures);
        r.forEach(o, "cpu_precisions", w, [&](const Json &item, const std::string &iw) {
            std::pair<std::string, std::string> precision;
            r.read(item, "precision", iw, precision.first);
            r.read(item, "runs_on", iw, precision.second);
            k.cpuPrecisions.push_back(std::move(precision));
        });
    }
    {
        const Json &o = objectAt(json, "python", r);
        const std::string w = "python.";
        PythonInfo &p = report.python;
        r.read(o, "available", w, p.available);
        r.read(o, "error", w, p.error);
        r.read(o, "executable", w, p.executable);
        r.read(o, "version", w, p.version);
        r.read(o, "torch", w, p.torchVersion);
        r.read(o, "accelerate", w, p.accelerateVersion);
        r.read(o, "numpy", w, p.numpyVersion);
        r.read(o, "accelerate_executable", w, p.accelerateExecutable);
    }
    {
        const Json &o = objectAt(json, "config", r);
        const std::string w = "config.";
        ConfigSection &cfg = report.config;
        r.read(o, "path", w, cfg.path);
        r.read(o, "passed", w, cfg.passed);
        r.read(o, "found", w, cfg.found);
        r.read(o, "error", w, cfg.error);
        r.forEach(o, "entries", w, [&](const Json &e, const std::string &ew) {
            std::pair<std::string, std::string> entry;
            r.read(e, "key", ew, entry.first);
            r.read(e, "value", ew, entry.second);
            cfg.entries.push_back(std::move(entry));
        });
    }
    if (!r.error.empty())
        return makeError(ErrorCode::InvalidInput, r.error, "accel.env report");
    return report;
}

} // namespace accel::hardware
