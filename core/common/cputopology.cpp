#include "core/common/cputopology.h"

#include "core/common/text.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace accel {

using text::trim;

CpuTopology parseCpuTopology(std::string_view cpuinfo)
{
    CpuTopology topology;
    std::set<std::string> sockets;
    std::set<std::pair<std::string, std::string>> cores;
    std::string physicalId, coreId;
    bool sawTopology = false;
    const auto finishProcessor = [&] {
        if (!physicalId.empty() || !coreId.empty()) {
            sawTopology = true;
            sockets.insert(physicalId);
            cores.insert({physicalId, coreId});
        }
        physicalId.clear();
        coreId.clear();
    };
    std::size_t start = 0;
    while (start < cpuinfo.size()) {
        std::size_t end = cpuinfo.find('\n', start);
        if (end == std::string_view::npos)
            end = cpuinfo.size();
        const std::string_view line = cpuinfo.substr(start, end - start);
        start = end + 1;
        const auto colon = line.find(':');
        if (colon == std::string_view::npos)
            continue;
        const std::string key = trim(std::string(line.substr(0, colon)));
        if (key == "processor") {
            finishProcessor();
            ++topology.logicalCpus;
        } else if (key == "physical id") {
            physicalId = trim(std::string(line.substr(colon + 1)));
        } else if (key == "core id") {
            coreId = trim(std::string(line.substr(colon + 1)));
        }
    }
    finishProcessor();
    if (sawTopology) {
        topology.sockets = static_cast<int>(sockets.size());
        topology.physicalCores = static_cast<int>(cores.size());
    } else {
        topology.sockets = topology.logicalCpus > 0 ? 1 : 0;
        topology.physicalCores = topology.logicalCpus;
    }
    return topology;
}

int localPhysicalCores()
{
    std::ifstream in("/proc/cpuinfo");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (const int cores = parseCpuTopology(text).physicalCores; cores > 0)
        return cores;
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int threadsPerRank(int physicalCores, int ranksOnHost)
{
    return std::max(1, physicalCores / std::max(1, ranksOnHost));
}

} // namespace accel
