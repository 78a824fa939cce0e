#include "core/worker/cpuaffinity.h"

#include "core/common/accelerateenv.h"
#include "core/common/text.h"
#include "core/hardware/hardwaredetector.h"
#include "core/hardware/procparsers.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sched.h>
#include <sstream>

namespace accel::worker {

namespace {

const char *const kVariable = accelerateenv::kCpuAffinity;

std::string readFirstLine(const std::string &path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return hardware::trim(line);
}

} // namespace

int numaNodeOfCpuRank(int localRank, int localWorldSize, int nodeCount)
{
    if (nodeCount <= 1 || localWorldSize <= 0)
        return 0;
    const long long index = (long long)std::clamp(localRank, 0, localWorldSize - 1) * nodeCount / localWorldSize;
    return int(std::min<long long>(index, nodeCount - 1));
}

std::optional<int> numaNodeOfPciDevice(const std::string &busId, const std::string &sysRoot)
{
    // sysfs names the device by a 4-digit domain: 0000:3b:00.0.
    std::string name = text::lower(busId);
    const size_t colon = name.find(':');
    if (colon != std::string::npos && colon > 4)
        name = name.substr(colon - 4);
    const std::string text = readFirstLine(sysRoot + "/sys/bus/pci/devices/" + name + "/numa_node");
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
        return std::nullopt; // "-1": the kernel does not know
    return std::atoi(text.c_str());
}

std::string allowedCpuList()
{
    std::ifstream in("/proc/self/status");
    std::string line;
    const std::string key = "Cpus_allowed_list:";
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0)
            return hardware::trim(line.substr(key.size()));
    }
    return {};
}

Result<Pinning> pinToNumaNode(int localRank, int localWorldSize, std::optional<int> node, const std::string &sysRoot)
{
    std::vector<hardware::NumaNode> nodes = hardware::detectNumaNodes(sysRoot);
    nodes.erase(std::remove_if(nodes.begin(), nodes.end(), [](const hardware::NumaNode &n) { return n.cpus.empty(); }),
                nodes.end());
    if (nodes.empty())
        return makeError(ErrorCode::Unsupported,
                         std::string(kVariable) + "=1 (enable_cpu_affinity): this machine shows no NUMA node with CPUs "
                                                  "under /sys/devices/system/node; unset enable_cpu_affinity");
    Pinning pinning;
    const hardware::NumaNode *chosen = nullptr;
    if (node) {
        for (const hardware::NumaNode &candidate : nodes)
            if (candidate.id == *node)
                chosen = &candidate;
    }
    if (!chosen)
        chosen = &nodes[size_t(numaNodeOfCpuRank(localRank, localWorldSize, int(nodes.size())))];
    pinning.node = chosen->id;
    pinning.nodeCpus = hardware::formatCpuList(chosen->cpus);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : chosen->cpus)
        if (cpu >= 0 && cpu < CPU_SETSIZE)
            CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0)
        return makeError(ErrorCode::Failed, std::string(kVariable) + "=1 (enable_cpu_affinity): pinning local rank " +
                                                std::to_string(localRank) + " to NUMA node " +
                                                std::to_string(pinning.node) + " (CPUs " + pinning.nodeCpus +
                                                ") failed: " + std::strerror(errno));
    pinning.allowedCpus = allowedCpuList();
    return pinning;
}

} // namespace accel::worker
