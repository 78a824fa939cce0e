#include "core/rundir/runevents.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <chrono>
#include <cmath>

namespace accel::rundir {

namespace {

struct StateName {
    RunState state;
    const char *name;
};
constexpr StateName kStates[] = {
    {RunState::Starting, state::Starting},     {RunState::Running, state::Running},
    {RunState::Restarting, state::Restarting}, {RunState::Stopping, state::Stopping},
    {RunState::Succeeded, state::Succeeded},   {RunState::Failed, state::Failed},
    {RunState::Stopped, state::Stopped},       {RunState::Lost, state::Lost},
};

// Every event kind: its name in events.jsonl, its severity and what it says about the ranks.
struct EventInfo {
    EventKind kind;
    const char *name;
    Severity severity;
    Liveness liveness;
};
constexpr EventInfo kEvents[] = {
    {EventKind::Started, "started", Severity::Info, Liveness::Alive},
    {EventKind::RendezvousStarted, "rendezvous_started", Severity::Info, Liveness::Unchanged},
    {EventKind::RendezvousFailed, "rendezvous_failed", Severity::Info, Liveness::Unchanged},
    {EventKind::Rendezvous, "rendezvous", Severity::Info, Liveness::Unchanged},
    {EventKind::RankStarted, "rank_started", Severity::Info, Liveness::Alive},
    {EventKind::RankExited, "rank_exited", Severity::Error, Liveness::Unchanged}, // info on exit code 0
    {EventKind::LogWriteFailed, "log_write_failed", Severity::Info, Liveness::Unchanged},
    {EventKind::StoppingRanks, "stopping_ranks", Severity::Warning, Liveness::Gone},
    {EventKind::Killed, "killed", Severity::Error, Liveness::Gone},
    {EventKind::EscapedProcessesKilled, "escaped_processes_killed", Severity::Info, Liveness::Unchanged},
    {EventKind::SharedMemoryRemoved, "shared_memory_removed", Severity::Info, Liveness::Unchanged},
    {EventKind::Restarting, "restarting", Severity::Warning, Liveness::Alive},
    {EventKind::Restarted, "restarted", Severity::Info, Liveness::Alive},
    {EventKind::Finished, "finished", Severity::Info, Liveness::Gone}, // error when failed or lost
    {EventKind::Stopped, "stopped", Severity::Info, Liveness::Gone},
    {EventKind::Failed, "failed", Severity::Info, Liveness::Gone},
    {EventKind::Lost, "lost", Severity::Error, Liveness::Gone},
    {EventKind::HangSuspected, "hang_suspected", Severity::Error, Liveness::Unchanged},
    {EventKind::HangCleared, "hang_cleared", Severity::Info, Liveness::Unchanged},
    {EventKind::StragglerDetected, "straggler_detected", Severity::Warning, Liveness::Unchanged},
    {EventKind::StragglerCleared, "straggler_cleared", Severity::Info, Liveness::Unchanged},
    {EventKind::StacksCaptured, "stacks_captured", Severity::Info, Liveness::Unchanged},
    {EventKind::TrackerFound, "tracker_found", Severity::Info, Liveness::Unchanged},
    {EventKind::TrackerProblem, "tracker_problem", Severity::Info, Liveness::Unchanged},
};

const EventInfo *infoOf(EventKind kind)
{
    for (const EventInfo &info : kEvents)
        if (info.kind == kind)
            return &info;
    return nullptr;
}

} // namespace

const char *toString(RunState value)
{
    for (const StateName &entry : kStates)
        if (entry.state == value)
            return entry.name;
    return "";
}

std::optional<RunState> runStateFromString(std::string_view name)
{
    for (const StateName &entry : kStates)
        if (name == entry.name)
            return entry.state;
    return std::nullopt;
}

const char *toString(EventKind kind)
{
    const EventInfo *info = infoOf(kind);
    return info ? info->name : "";
}

EventKind eventKindFromString(std::string_view name)
{
    for (const EventInfo &info : kEvents)
        if (name == info.name)
            return info.kind;
    return EventKind::Other;
}

const char *toString(Severity severity)
{
    switch (severity) {
    case Severity::Warning:
        return "warning";
    case Severity::Error:
        return "error";
    case Severity::Info:
        break;
    }
    return "info";
}

Severity severityOf(EventKind kind, bool exitCodeZero, std::string_view finishedState)
{
    if (kind == EventKind::RankExited)
        return exitCodeZero ? Severity::Info : Severity::Error;
    if (kind == EventKind::Finished)
        return finishedState == state::Failed || finishedState == state::Lost ? Severity::Error : Severity::Info;
    const EventInfo *info = infoOf(kind);
    return info ? info->severity : Severity::Info;
}

Liveness livenessOf(EventKind kind)
{
    const EventInfo *info = infoOf(kind);
    return info ? info->liveness : Liveness::Unchanged;
}

std::string encodeEventLine(double time, std::string_view event, int rank, std::string_view moreFields)
{
    if (!std::isfinite(time))
        time = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count()) /
               1000.0;
    char number[64];
    const auto written = std::to_chars(number, number + sizeof(number), time, std::chars_format::fixed, 3); // no locale
    std::string line = "{\"v\":1,\"time\":";
    line.append(number, written.ptr);
    line += ",\"event\":";
    line += nlohmann::json(std::string(event)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (rank >= 0)
        line += ",\"rank\":" + std::to_string(rank);
    if (!moreFields.empty()) {
        line += ',';
        line += moreFields;
    }
    line += '}';
    return line;
}

Result<void> appendEvent(const std::string &runDirectory, const std::string &line)
{
    return appendRunLine(runDirectory, file::Events, line);
}

} // namespace accel::rundir
