// RunSupervisor: starts this machine's ranks, watches them, and ends the run exactly once with
// finished(RunOutcome). When any rank fails it SIGTERMs every rank's process group, SIGKILLs
// after the grace period, and restarts the whole group while restarts remain
// (TORCHELASTIC_RESTART_COUNT counts them). stop() ends the run the same way.
#pragma once

#include "core/rundir/runevents.h"
#include "launcher/launchsettings.h"
#include "launcher/rankprocess.h"

#include <QObject>
#include <QTimer>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace accel::launcher {

class GroupReaper;
class MachineRendezvous;
struct RendezvousOutcome;
class RunDirectory;

struct SupervisorOptions {
    int graceMs = 5000;  // SIGTERM → SIGKILL
    bool mirror = false; // copy rank output to the terminal
    int rankUmask = -1;  // umask the ranks get (the supervisor's own stays private); -1 inherits
    // A socket listening on MASTER_PORT (launcher/ports.h PortReservation, kept open by the caller
    // for the whole run): rank 0 inherits it at every start, named by ACCEL_STORE_LISTEN_FD.
    int storeListenFd = -1;
    // c10d on several machines (LaunchSettings::machineRankAtRendezvous): met before every attempt;
    // its outcome sets this machine's rank and the store's address and port. Owned by the caller.
    MachineRendezvous *rendezvous = nullptr;
};

struct RunOutcome {
    QString state;    // succeeded, failed or stopped (runstate)
    int exitCode = 0; // first failing rank's shell code; 0 on success
    int failedRank = -1;
    int restarts = 0;
    QString reason;
    std::vector<RankExit> ranks; // last attempt, by local rank
};
// A rank's log could not be written (full disk): the run fails with this exit code.
inline constexpr int kLogWriteFailedExitCode = 1;

class RunSupervisor : public QObject {
    Q_OBJECT
public:
    // `run` may be null (no run directory: logs are not written); it must outlive the supervisor.
    RunSupervisor(LaunchSettings settings, EnvMap baseEnvironment, RunDirectory *run, SupervisorOptions options,
                  QObject *parent = nullptr);
    ~RunSupervisor() override;

    void start();
    // Stops every rank (SIGTERM, then SIGKILL after the grace period). A second call kills at once.
    // Before start() the run ends "stopped" without starting any rank. A rank that fails after the
    // user's stop request (RunDirectory::stopRequested, written by `accel stop` before its signal)
    // stops the run the same way: it ends "stopped". A rank that failed before the request (or
    // before this call) leaves it "failed", unless restarts remained.
    void stop(const QString &reason);
    bool isFinished() const { return m_finished; }
    const RunOutcome &outcome() const { return m_outcome; }
    std::vector<qint64> rankPids() const;

Q_SIGNALS:
    void rankStarted(int rank, qint64 pid);
    void rankExited(const accel::launcher::RankExit &exit);
    void restarting(int restartCount, const QString &reason);
    void finished(const accel::launcher::RunOutcome &outcome);

private:
    void beginAttempt(); // rendezvous first when there is one, then startAttempt()
    void onRendezvousFinished(const RendezvousOutcome &outcome);
    void startAttempt();
    void onRankStarted(int rank, qint64 pid);
    void onRankExited(const RankExit &exit);
    void onLogWriteFailed(int rank, const QString &error);
    void stopAfterRequest(const QString &reason);
    void beginTeardown(const QString &reason);
    void killAll();
    void checkFolder();
    void attemptDone();
    int endEscapedDescendants();
    void finish(rundir::RunState state, int exitCode, const QString &reason);
    void recordRanks();

    LaunchSettings m_settings;
    EnvMap m_baseEnvironment;
    RunDirectory *m_run = nullptr;
    SupervisorOptions m_options;
    std::unique_ptr<GroupReaper> m_reaper;
    std::string m_runToken; // every rank's ACCEL_RUN_TOKEN: how the reaper finds what left the groups
    std::vector<std::unique_ptr<RankProcess>> m_processes;
    std::map<int, RankExit> m_exits;         // by global rank, this attempt
    std::map<int, quint64> m_rankStartTimes; // by global rank, this attempt
    std::optional<RankExit> m_firstFailure;
    QTimer m_graceTimer;
    // The run folder, open from start() on: once it has no link left (removed under the run),
    // nothing can follow or stop the run any more, so it is stopped (checked every second).
    int m_folderFd = -1;
    QTimer m_folderCheck;
    QString m_storeHookFolder; // a Python rank 0's rendezvous hook (storehook.h), when the port is held
    int m_restartCount = 0;
    bool m_tearingDown = false;
    bool m_stopRequested = false;
    bool m_stopCalled = false; // stop() was called (a signal), not only requested in the run folder
    bool m_finished = false;
    bool m_started = false;
    bool m_meeting = false; // the machines' rendezvous of this attempt is under way
    QString m_stopReason;
    QString m_logFailure; // first log write error: the run fails with it
    RunOutcome m_outcome;
};

} // namespace accel::launcher
