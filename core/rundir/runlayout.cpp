#include "core/rundir/runlayout.h"

#include "core/rundir/processidentity.h"

#include <nlohmann/json.hpp>

#include <climits>
#include <unistd.h>

namespace accel::rundir {

std::string logFile(int rank)
{
    return std::string(file::Logs) + "/rank" + std::to_string(rank) + ".log";
}

std::string metricsFile(int rank)
{
    return std::string(file::Metrics) + "/rank" + std::to_string(rank) + ".jsonl";
}

std::string nativeStackFile(int rank)
{
    return std::string(file::Stacks) + "/rank" + std::to_string(rank) + ".native.json";
}

std::string systemMetricsFile()
{
    return std::string(file::Metrics) + "/" + file::SystemMetrics;
}

namespace {
bool inFolder(std::string_view relative, std::string_view folder)
{
    return relative.size() > folder.size() && relative.substr(0, folder.size()) == folder &&
           relative[folder.size()] == '/';
}
} // namespace

bool inLogs(std::string_view relative)
{
    return inFolder(relative, file::Logs);
}

bool inMetrics(std::string_view relative)
{
    return inFolder(relative, file::Metrics);
}

bool isFinalState(std::string_view value)
{
    return value == state::Succeeded || value == state::Failed || value == state::Stopped || value == state::Lost;
}

bool isLiveState(std::string_view value)
{
    return value == state::Starting || value == state::Running || value == state::Restarting ||
           value == state::Stopping;
}

std::string localHostName()
{
    char name[HOST_NAME_MAX + 1] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0)
        return {};
    return name;
}

SupervisorRecord parseSupervisorRecord(const std::string &jsonObject)
{
    SupervisorRecord record;
    const nlohmann::json object = nlohmann::json::parse(jsonObject, nullptr, false);
    if (!object.is_object())
        return record;
    // Integers only: 4294967297 or 1e30 stay what they are (and prove nothing) instead of wrapping.
    auto integer = [&object](const char *name, std::int64_t otherwise = 0) -> std::int64_t {
        const auto it = object.find(name);
        if (it == object.end())
            return otherwise;
        if (it->is_number_unsigned())
            return it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX) ? otherwise
                                                                                    : it->get<std::int64_t>();
        if (it->is_number_integer())
            return it->get<std::int64_t>();
        if (it->is_number_float()) {
            const double value = it->get<double>();
            return value >= -9.2e18 && value <= 9.2e18 && value == static_cast<double>(static_cast<std::int64_t>(value))
                       ? static_cast<std::int64_t>(value)
                       : otherwise;
        }
        return otherwise;
    };
    record.pid = integer(key::Pid);
    const std::int64_t start = integer(key::StartTime);
    record.startTime = start > 0 ? static_cast<std::uint64_t>(start) : 0;
    const auto host = object.find(key::Host);
    if (host != object.end() && host->is_string())
        record.host = host->get<std::string>();
    // A process group or session id is never negative; one that is proves nothing either.
    const auto groupOrSession = [&integer](const char *name) {
        const std::int64_t value = integer(name, ProcessClaim::NotRecorded);
        return value < 0 ? ProcessClaim::NotRecorded : value;
    };
    record.processGroup = groupOrSession(key::ProcessGroup);
    record.session = groupOrSession(key::Session);
    return record;
}

std::string supervisorRecordJson(const SupervisorRecord &record)
{
    nlohmann::json object = {{key::Pid, record.pid},
                             {key::StartTime, record.startTime},
                             {key::Host, record.host},
                             {key::ProcessGroup, record.processGroup},
                             {key::Session, record.session}};
    return object.dump();
}

SupervisorRecord currentSupervisorRecord()
{
    SupervisorRecord record;
    record.pid = ::getpid();
    record.host = localHostName();
    if (const auto stat = readProcessStat(record.pid)) {
        record.startTime = stat->startTime;
        record.processGroup = stat->processGroup;
        record.session = stat->session;
    }
    return record;
}

SupervisorCheck checkSupervisor(const SupervisorRecord &supervisor, const std::string &localHost)
{
    if (supervisor.pid == 0)
        return SupervisorCheck::NotStarted;
    if (supervisor.host.empty() || supervisor.host != localHost)
        return SupervisorCheck::Unknown;
    return processMatches(supervisor.pid, supervisor.startTime) ? SupervisorCheck::Alive : SupervisorCheck::Gone;
}

std::string effectiveState(const std::string &recorded, const SupervisorRecord &supervisor,
                           const std::string &localHost)
{
    if (isLiveState(recorded) && checkSupervisor(supervisor, localHost) == SupervisorCheck::Gone)
        return state::Lost;
    return recorded;
}

} // namespace accel::rundir
