// The run-directory contract (docs/run-directory.md): file names, the states a run goes through,
// the supervisor record in run.json and the one rule that turns a live state into "lost".
// Qt-free: the launcher writes run directories with it and the monitor reads them with it.
#pragma once

#include "processidentity.h"

#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>

namespace accel::rundir {

// Names inside a run directory.
// The answer of an accel-worker rank to a stack request (core/worker/stackdump.cpp writes it, accel
// stack reads it).
inline constexpr const char *NativeStackSchema = "accel.native-stack";
inline constexpr int NativeStackVersion = 1;

namespace file {
inline constexpr const char *Manifest = "run.json";
inline constexpr const char *Events = "events.jsonl";
inline constexpr const char *ClusterConfig = "cluster.yaml";
inline constexpr const char *Job = "job.yaml";
inline constexpr const char *SupervisorLog = "supervisor.log";
// The user's stop request: `accel stop` writes it before any signal (and `accel hosts stop` on
// every node before signalling any), so that the supervisor takes a rank that ends badly from then
// on (a pipeline stage whose peer on another node was stopped first) as the stop's consequence.
inline constexpr const char *StopRequest = "stop_request.json";
inline constexpr const char *Logs = "logs";
inline constexpr const char *Metrics = "metrics";
inline constexpr const char *Checkpoints = "checkpoints";
// In Metrics: the supervisor's samples of the machine (not a rank's).
inline constexpr const char *SystemMetrics = "system.jsonl";
// Written by people's tools, never by the supervisor: the tracker's init_trackers(config=...)
// (resources/python), and what the studio and `accel runs` add to a run (display name, notes, tags).
inline constexpr const char *Hyperparameters = "hparams.json";
inline constexpr const char *Annotations = "annotations.json";
// The trackers' start-up hook (docs/trackers.md): the folder appended to the ranks' PYTHONPATH,
// holding the hook as sitecustomize.py, and the file where the ranks' hook reports each tracker's
// files (one JSON line each), which the supervisor reads into the run's metrics.
inline constexpr const char *PythonStartup = "python";
inline constexpr const char *TrackerReports = "trackers.jsonl";
// The hang autopsy (docs/hang-autopsy.md): `accel stack` writes the latest capture of
// every rank's stack to StackAutopsy (JSON, schema accel.stack) and StackAutopsyText (as printed);
// a native rank asked for its stack first writes nativeStackFile(rank) in the Stacks folder.
inline constexpr const char *Stacks = "stacks";
inline constexpr const char *StackAutopsy = "stacks.json";
inline constexpr const char *StackAutopsyText = "stacks.txt";
} // namespace file
std::string logFile(int rank);         // "logs/rank3.log"
std::string metricsFile(int rank);     // "metrics/rank3.jsonl"
std::string nativeStackFile(int rank); // "stacks/rank3.native.json"
std::string systemMetricsFile();       // "metrics/system.jsonl"
// Whether a path relative to the run directory lies in logs/ or metrics/.
bool inLogs(std::string_view relative);
bool inMetrics(std::string_view relative);
// The signal that asks accel-worker for its stack. Its default action is to ignore it, so a worker
// that has not installed its handler yet (or predates it) is unharmed by the request.
inline constexpr int nativeStackSignal = SIGURG;

// States; a reader sets "lost" when the supervisor is gone (effectiveState).
namespace state {
inline constexpr const char *Starting = "starting";
inline constexpr const char *Running = "running";
inline constexpr const char *Restarting = "restarting";
inline constexpr const char *Stopping = "stopping";
inline constexpr const char *Succeeded = "succeeded";
inline constexpr const char *Failed = "failed";
inline constexpr const char *Stopped = "stopped";
inline constexpr const char *Lost = "lost";
} // namespace state
bool isFinalState(std::string_view state); // succeeded, failed, stopped, lost
bool isLiveState(std::string_view state);  // starting, running, restarting, stopping

// run.json keys of the supervisor record and of each rank entry.
namespace key {
inline constexpr const char *Supervisor = "supervisor";
inline constexpr const char *Pid = "pid";
inline constexpr const char *StartTime = "start_time";
inline constexpr const char *Host = "host";
inline constexpr const char *ProcessGroup = "process_group";
inline constexpr const char *Session = "session";
inline constexpr const char *Ranks = "ranks";
} // namespace key

// Who supervises a run: recorded by the supervisor itself when it starts.
struct SupervisorRecord {
    std::int64_t pid = 0;
    std::uint64_t startTime = 0;                           // clock ticks since boot, /proc/<pid>/stat field 22
    std::string host;                                      // localHostName() of the supervisor's machine
    std::int64_t processGroup = ProcessClaim::NotRecorded; // 0 is real (session leader outside the pid namespace)
    std::int64_t session = ProcessClaim::NotRecorded;
};
// Reads the supervisor object of run.json ({"pid":..,"start_time":..,"host":..}) from its JSON text;
// missing, negative or out-of-range pid and start time read as 0 (nothing can be proven with them),
// a missing or invalid process group or session as ProcessClaim::NotRecorded.
SupervisorRecord parseSupervisorRecord(const std::string &jsonObject);
// The same record as the JSON object run.json holds.
std::string supervisorRecordJson(const SupervisorRecord &record);
// The record of the calling process.
SupervisorRecord currentSupervisorRecord();
std::string localHostName();

enum class SupervisorCheck {
    Alive,     // this host, and pid + start time match a live process
    Gone,      // this host, and nothing matches (a start time of 0 matches nothing)
    Unknown,   // another host, or no host recorded: cannot be told from here
    NotStarted // no pid recorded yet
};
SupervisorCheck checkSupervisor(const SupervisorRecord &supervisor, const std::string &localHost = localHostName());

// The lost rule: a live recorded state whose supervisor is Gone reads "lost"; everything else
// reads as recorded.
std::string effectiveState(const std::string &recorded, const SupervisorRecord &supervisor,
                           const std::string &localHost = localHostName());

} // namespace accel::rundir
