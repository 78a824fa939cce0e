// The run-directory contract's vocabulary (docs/run-directory.md): the states a run goes through,
// the kinds of events in events.jsonl with what each means (severity, what it says about the
// ranks' processes), and the one line format and writer of events.jsonl. Each name is spelled in
// one table (runevents.cpp); writers (the supervisor, `accel stack`, the detectors, the tracker
// import) and classifiers (detectors, the ranks and events models, the studio's banners) use it.
#pragma once

#include "core/common/result.h"

#include <optional>
#include <string>
#include <string_view>

namespace accel::rundir {

// run.json "state"; the names are runlayout.h's state:: constants.
enum class RunState { Starting, Running, Restarting, Stopping, Succeeded, Failed, Stopped, Lost };
const char *toString(RunState state);
std::optional<RunState> runStateFromString(std::string_view name);

// events.jsonl "event".
enum class EventKind {
    Started,                // the supervisor started the ranks ("ranks")
    RendezvousStarted,      // a multi-node rendezvous began
    RendezvousFailed,       // ... and failed ("attempt", "error")
    Rendezvous,             // ... and agreed (machine rank, master address)
    RankStarted,            // one rank's process started ("rank", "pid")
    RankExited,             // one rank's process ended ("rank", "exit_code" or "signal")
    LogWriteFailed,         // a rank's log could not be written ("rank", "error")
    StoppingRanks,          // the supervisor asks the ranks to end
    Killed,                 // ranks still alive after the grace time were killed
    EscapedProcessesKilled, // processes of the run outside the ranks' groups were killed
    SharedMemoryRemoved,    // shared-memory segments the ranks left were removed
    Restarting,             // the ranks start again ("restart")
    Restarted,              // (read only) the ranks started again
    Finished,               // the run ended ("state": succeeded, failed, stopped)
    Stopped,                // (read only) the ranks were stopped
    Failed,                 // (read only) the ranks failed
    Lost,                   // a reader found the supervisor gone
    HangSuspected,          // no rank's step advanced for too long (detectors)
    HangCleared,            // ... steps advance again
    StragglerDetected,      // one rank is persistently slower ("rank")
    StragglerCleared,       // ... it is back within the margin
    StacksCaptured,         // `accel stack` saved every rank's stack
    TrackerFound,           // a tracker's files were found ("kind", "path")
    TrackerProblem,         // ... and could not be read ("problem")
    Other                   // a name this table does not know (a newer writer's): shown, never classified
};
const char *toString(EventKind kind); // "" for Other
EventKind eventKindFromString(std::string_view name);

enum class Severity { Info, Warning, Error };
const char *toString(Severity severity); // "info", "warning", "error"
// What an event says about the ranks' processes (a hang is only suspected while they live).
enum class Liveness { Unchanged, Alive, Gone };

// The kind's severity. Two kinds depend on their outcome: rank_exited is an error unless its
// exit code is 0 (`exitCodeZero`), finished is an error when its state is failed or lost.
Severity severityOf(EventKind kind, bool exitCodeZero = false, std::string_view finishedState = {});
Liveness livenessOf(EventKind kind);

// One events.jsonl line, newline excluded:
//   {"v":1,"time":1763771234.500,"event":"rank_exited","rank":1,"exit_code":0}
// "v", the time (Unix seconds, 3 decimals), the event and the rank (left out when negative) come
// first; `moreFields` are the members of a compact JSON object after them, without braces
// ("\"exit_code\":0", or empty), holding none of those four keys. A time that is not finite is
// replaced by now.
std::string encodeEventLine(double time, std::string_view event, int rank, std::string_view moreFields);
// Appends one line to the run's events.jsonl in a single write (O_APPEND, so lines of several
// writers never interleave), created 0600 when missing, never through a symlink (privatefiles.h).
Result<void> appendEvent(const std::string &runDirectory, const std::string &line);

} // namespace accel::rundir
