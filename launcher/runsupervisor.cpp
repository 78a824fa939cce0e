#include "launcher/runsupervisor.h"

#include "core/common/loopbacksocket.h"

#include "launcher/envbuilder.h"
#include "launcher/groupreaper.h"
#include "launcher/launchplan.h"
#include "launcher/machinerendezvous.h"
#include "launcher/ports.h"
#include "launcher/rundirectory.h"
#include "launcher/storehook.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>

#include "core/rundir/privatefiles.h"
#include "core/rundir/processidentity.h"
#include "core/rundir/shmsegments.h"

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>

namespace accel::launcher {

namespace {
QJsonObject exitJson(const RankExit &exit)
{
    QJsonObject object{
        {QStringLiteral("rank"), exit.rank},
        {QStringLiteral("pid"), exit.pid},
        {QStringLiteral("exit_code"), exit.signal || exit.failedToStart ? QJsonValue() : QJsonValue(exit.exitCode)},
        {QStringLiteral("signal"), exit.signal ? QJsonValue(exit.signal) : QJsonValue()},
        {QStringLiteral("runtime_s"), exit.runtimeSeconds},
        {QStringLiteral("result"), exit.describe()}};
    return object;
}
} // namespace

RunSupervisor::RunSupervisor(LaunchSettings settings, EnvMap baseEnvironment, RunDirectory *run,
                             SupervisorOptions options, QObject *parent)
    : QObject(parent), m_settings(std::move(settings)), m_baseEnvironment(std::move(baseEnvironment)), m_run(run),
      m_options(options)
{
    m_graceTimer.setSingleShot(true);
    connect(&m_graceTimer, &QTimer::timeout, this, [this] {
        killAll();
        if (m_run)
            (void)m_run->appendEvent(rundir::EventKind::Killed,
                                     {{QStringLiteral("after_grace_ms"), m_options.graceMs}});
    });
    connect(&m_folderCheck, &QTimer::timeout, this, &RunSupervisor::checkFolder);
}

RunSupervisor::~RunSupervisor()
{
    if (!m_finished)
        killAll(); // after finish() the groups are gone; their ids may belong to others by now
    m_processes.clear();
    m_reaper.reset();
    if (m_folderFd >= 0)
        ::close(m_folderFd);
    if (m_run && m_started)
        rundir::releaseRunDirectory(QFile::encodeName(m_run->path()).toStdString());
}

std::vector<qint64> RunSupervisor::rankPids() const
{
    std::vector<qint64> pids;
    for (const auto &process : m_processes)
        pids.push_back(process->pid());
    return pids;
}

void RunSupervisor::start()
{
    if (m_started || m_finished)
        return; // stopped before it started: nothing to start
    m_started = true;
    // Orphans of the ranks' descendants become this process's children instead of init's, also
    // those that left their rank's process group and session (their own setsid()), which no
    // killpg reaches: attemptDone() ends them with the attempt.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    m_runToken = newRunToken();
    m_reaper = std::make_unique<GroupReaper>(m_runToken);
    if (m_run) {
        // From now on this process writes the run's files through a descriptor of the folder,
        // whatever is later put at its path (the parents were checked when it was created).
        (void)rundir::holdRunDirectory(QFile::encodeName(m_run->path()).toStdString());
        m_folderFd = ::open(QFile::encodeName(m_run->path()).constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (m_folderFd >= 0)
            m_folderCheck.start(1000);
        QJsonObject manifest = m_run->manifest();
        manifest[QLatin1String(rundir::key::Supervisor)] =
            RunDirectory::supervisorJson(rundir::currentSupervisorRecord());
        (void)m_run->writeManifest(manifest);
        (void)m_run->appendEvent(
            rundir::EventKind::Started,
            {{QStringLiteral("ranks"), m_settings.processesPerNode()},
             {QStringLiteral("launcher"), QString::fromLatin1(launcherKindName(m_settings.launcher))}});
    }
    if (m_options.storeListenFd >= 0 && m_settings.program.kind != ProgramSpec::Kind::Job &&
        takesHeldPort(m_settings.program.kind)) {
        // Without the hook, a Python rank 0 could not host its store: the port is held.
        auto hook = m_run ? writeStoreHook(m_run->path())
                          : Result<QString>(makeError(ErrorCode::Failed, "no run directory to hold the hook"));
        if (!hook) {
            finish(rundir::RunState::Failed, 1,
                   QStringLiteral("cannot install the rendezvous hook: ") +
                       QString::fromStdString(hook.error().toString()));
            return;
        }
        m_storeHookFolder = *hook;
    }
    if (m_options.rendezvous)
        connect(m_options.rendezvous, &MachineRendezvous::finished, this, &RunSupervisor::onRendezvousFinished);
    beginAttempt();
}

void RunSupervisor::beginAttempt()
{
    if (!m_options.rendezvous) {
        startAttempt();
        if (m_run && !m_finished)
            (void)m_run->setState(rundir::RunState::Running);
        return;
    }
    m_meeting = true;
    if (m_run)
        (void)m_run->appendEvent(rundir::EventKind::RendezvousStarted,
                                 {{QStringLiteral("endpoint"), m_options.rendezvous->endpoint()},
                                  {QStringLiteral("attempt"), m_restartCount}});
    m_options.rendezvous->start(m_restartCount);
}

void RunSupervisor::onRendezvousFinished(const RendezvousOutcome &outcome)
{
    if (!m_meeting || m_finished)
        return;
    m_meeting = false;
    if (m_stopRequested) {
        finish(rundir::RunState::Stopped, 130, m_stopReason);
        return;
    }
    if (!outcome.ok) {
        if (m_run)
            (void)m_run->appendEvent(rundir::EventKind::RendezvousFailed, {{QStringLiteral("attempt"), m_restartCount},
                                                                           {QStringLiteral("error"), outcome.error}});
        if (m_run && m_run->stopRequested()) { // the other machines were stopped first
            m_stopRequested = true;
            m_stopReason = QStringLiteral("the rendezvous failed after the stop was requested: ") + outcome.error;
            finish(rundir::RunState::Stopped, 130, m_stopReason);
            return;
        }
        finish(rundir::RunState::Failed, 1, outcome.error);
        return;
    }
    m_settings.machineRank = outcome.machineRank;
    m_settings.mainProcessIp = outcome.masterAddress.toStdString();
    m_settings.mainProcessPort = outcome.masterPort;
    if (m_run) {
        const QJsonObject fields{{QStringLiteral("attempt"), m_restartCount},
                                 {QStringLiteral("machine_rank"), outcome.machineRank},
                                 {QStringLiteral("master_addr"), outcome.masterAddress},
                                 {QStringLiteral("master_port"), outcome.masterPort},
                                 {QStringLiteral("hosted"), outcome.hosted},
                                 {QStringLiteral("machines"), QJsonArray::fromStringList(outcome.machines)}};
        (void)m_run->appendEvent(rundir::EventKind::Rendezvous, fields);
        QJsonObject manifest = manifestAfterRendezvous(m_run->manifest(), m_settings, m_baseEnvironment);
        manifest[QStringLiteral("rendezvous")] = fields;
        (void)m_run->writeManifest(manifest);
    }
    startAttempt();
    if (m_run && !m_finished)
        (void)m_run->setState(rundir::RunState::Running);
}

void RunSupervisor::startAttempt()
{
    m_processes.clear();
    m_exits.clear();
    m_rankStartTimes.clear();
    m_firstFailure.reset();
    m_tearingDown = false;
    const int perNode = m_settings.processesPerNode();
    const std::vector<std::string> command = buildRankCommand(m_settings, m_baseEnvironment);
    QStringList commandList;
    for (const std::string &part : command)
        commandList << QString::fromStdString(part);
    for (int local = 0; local < perNode; ++local) {
        const int rank = globalRank(m_settings, local);
        RankProcess::Spec spec;
        spec.rank = rank;
        spec.command = commandList;
        EnvMap environment = buildRankEnvironment(m_settings, m_baseEnvironment, {local, m_restartCount});
        environment[kRunTokenVariable] = m_runToken; // replaces a token inherited from an enclosing run
        for (const auto &[name, value] : environment)
            spec.environment << QString::fromStdString(name + "=" + value);
        if (rank == 0 && m_options.storeListenFd >= 0) {
            spec.inheritFd = m_options.storeListenFd;
            spec.environment
                << QStringLiteral("%1=%2").arg(QLatin1String(kStoreListenFdVariable)).arg(m_options.storeListenFd);
            // A Python rank 0 takes the socket over through the rendezvous hook (storehook.h), last
            // on its PYTHONPATH (after the trackers' hook, which runs the next sitecustomize).
            if (!m_storeHookFolder.isEmpty()) {
                bool found = false;
                for (QString &entry : spec.environment) {
                    if (entry.startsWith(QLatin1String("PYTHONPATH="))) {
                        entry += (entry.size() > 11 ? QStringLiteral(":") : QString()) + m_storeHookFolder;
                        found = true;
                    }
                }
                if (!found)
                    spec.environment << QStringLiteral("PYTHONPATH=") + m_storeHookFolder;
            }
        }
        spec.workingDirectory = QString::fromStdString(m_settings.workingDirectory);
        spec.mirror = m_options.mirror;
        spec.umask = m_options.rankUmask;
        if (m_run) {
            spec.runDirectory = m_run->path();
            spec.logFile = QString::fromStdString(rundir::logFile(rank));
            std::vector<std::string> lines;
            if (m_restartCount > 0)
                lines.push_back("==== accel: restart " + std::to_string(m_restartCount) + " ====");
            else if (rank == 0 && m_settings.program.kind == ProgramSpec::Kind::Job)
                // A job's log starts with what accel launch noted of its config (docs/native-keys.md),
                // so the studio's log shows it next to the ranks' own notes.
                for (const std::string &note : m_settings.notes)
                    lines.push_back("accel launch: note: " + note);
            for (const std::string &line : lines) {
                if (auto ok = rundir::appendRunLine(m_run->path().toStdString(), spec.logFile.toStdString(), line);
                    !ok) {
                    QTimer::singleShot(0, this, [this, rank, error = ok.error().toString()] {
                        onLogWriteFailed(rank, QString::fromStdString(error));
                    });
                    break;
                }
            }
        }
        auto process = std::make_unique<RankProcess>(std::move(spec));
        connect(process.get(), &RankProcess::started, this, &RunSupervisor::onRankStarted);
        connect(process.get(), &RankProcess::exited, this, &RunSupervisor::onRankExited, Qt::QueuedConnection);
        connect(process.get(), &RankProcess::logWriteFailed, this, &RunSupervisor::onLogWriteFailed,
                Qt::QueuedConnection);
        m_processes.push_back(std::move(process));
    }
    for (const auto &process : m_processes)
        process->start();
    recordRanks();
}

void RunSupervisor::onRankStarted(int rank, qint64 pid)
{
    if (m_reaper)
        m_reaper->watch(pid);
    m_rankStartTimes[rank] = rundir::processStartTime(pid);
    if (m_run)
        (void)m_run->appendEvent(rundir::EventKind::RankStarted, {{QStringLiteral("rank"), rank},
                                                                  {QStringLiteral("pid"), pid},
                                                                  {QStringLiteral("attempt"), m_restartCount}});
    Q_EMIT rankStarted(rank, pid);
}

void RunSupervisor::onRankExited(const RankExit &exit)
{
    m_exits[exit.rank] = exit;
    if (m_run) {
        QJsonObject fields = exitJson(exit);
        fields[QStringLiteral("attempt")] = m_restartCount;
        (void)m_run->appendEvent(rundir::EventKind::RankExited, fields);
    }
    Q_EMIT rankExited(exit);
    if (!exit.succeeded() && !m_firstFailure && !m_stopRequested) {
        if (m_run && m_run->stopRequested()) {
            // Ended after the user's stop was requested (its signal has not come yet): the
            // stop's consequence, e.g. a pipeline stage whose peer on another node was stopped.
            const QString reason =
                QStringLiteral("rank %1 ended after the stop was requested (%2)").arg(exit.rank).arg(exit.describe());
            std::fprintf(stderr, "accel launch: %s; stopping all ranks\n", reason.toLocal8Bit().constData());
            stopAfterRequest(reason);
        } else {
            m_firstFailure = exit;
            beginTeardown(QStringLiteral("rank %1 %2").arg(exit.rank).arg(exit.describe()));
        }
    }
    recordRanks();
    if (m_exits.size() == m_processes.size())
        attemptDone();
}

void RunSupervisor::onLogWriteFailed(int rank, const QString &error)
{
    if (m_finished || !m_logFailure.isEmpty())
        return;
    m_logFailure = QStringLiteral("rank %1 log: %2").arg(rank).arg(error);
    std::fprintf(stderr, "accel launch: %s; stopping the run\n", m_logFailure.toLocal8Bit().constData());
    if (m_run)
        (void)m_run->appendEvent(rundir::EventKind::LogWriteFailed,
                                 {{QStringLiteral("rank"), rank}, {QStringLiteral("error"), error}});
    beginTeardown(m_logFailure);
}

void RunSupervisor::beginTeardown(const QString &reason)
{
    if (m_tearingDown)
        return;
    m_tearingDown = true;
    if (m_run)
        (void)m_run->appendEvent(rundir::EventKind::StoppingRanks,
                                 {{QStringLiteral("reason"), reason}, {QStringLiteral("grace_ms"), m_options.graceMs}});
    // Every group, including ranks that already exited: their children may still run.
    for (const auto &process : m_processes)
        process->signalGroup(SIGTERM);
    m_graceTimer.start(m_options.graceMs);
}

void RunSupervisor::killAll()
{
    for (const auto &process : m_processes)
        process->signalGroup(SIGKILL);
}

void RunSupervisor::checkFolder()
{
    struct stat folder {};
    if (m_finished || m_stopRequested || m_tearingDown || ::fstat(m_folderFd, &folder) != 0 || folder.st_nlink > 0)
        return;
    // No link left. A file system that reports no links for a live folder still has it at its path.
    struct stat atPath {};
    if (::stat(QFile::encodeName(m_run->path()).constData(), &atPath) == 0 && atPath.st_dev == folder.st_dev &&
        atPath.st_ino == folder.st_ino)
        return;
    m_folderCheck.stop();
    const QString reason = QStringLiteral("the run folder %1 was removed").arg(m_run->path());
    std::fprintf(stderr, "accel launch: %s; stopping the run (nothing could follow or stop it any more)\n",
                 reason.toLocal8Bit().constData());
    stop(reason);
}

void RunSupervisor::stop(const QString &reason)
{
    if (m_finished)
        return;
    if (!m_started) {
        // Ctrl-C before any rank started: nothing to tear down.
        m_stopRequested = true;
        m_stopReason = reason;
        finish(rundir::RunState::Stopped, 130, reason);
        return;
    }
    if (std::exchange(m_stopCalled, true)) {
        killAll(); // asked twice: do not wait for the grace period
        return;
    }
    if (m_stopRequested)
        return; // already stopping: a rank ended after the stop request, whose signal this is
    stopAfterRequest(reason);
}

void RunSupervisor::stopAfterRequest(const QString &reason)
{
    m_stopRequested = true;
    m_stopReason = reason;
    if (m_meeting) {
        // Between attempts, meeting the other machines: no rank runs.
        m_meeting = false;
        m_options.rendezvous->cancel();
        finish(rundir::RunState::Stopped, 130, reason);
        return;
    }
    if (m_run)
        (void)m_run->setState(rundir::RunState::Stopping, reason);
    m_tearingDown = false;
    beginTeardown(reason);
}

// The ranks' descendants that left their rank's session (setsid()) and outlived it: orphans, so
// this subreaper's children now, in a session that is neither this process's nor a running rank's.
// Each is killed and reaped; whatever it forked is adopted in turn and found by the next round.
int RunSupervisor::endEscapedDescendants()
{
    const std::int64_t self = ::getpid();
    const auto own = rundir::readProcessStat(self);
    const qint64 helper = m_reaper ? m_reaper->helperPid() : 0;
    int ended = 0;
    for (int round = 0; round < 100 && own; ++round) {
        std::vector<std::int64_t> escaped;
        for (const std::int64_t pid : rundir::childProcesses(self)) {
            const auto stat = rundir::readAnyProcessStat(pid);
            bool rank = false;
            for (const auto &process : m_processes)
                rank = rank || (process->isRunning() && process->pid() == pid);
            if (stat && pid != helper && !rank && stat->session != own->session)
                escaped.push_back(pid);
        }
        if (escaped.empty())
            break;
        for (const std::int64_t pid : escaped) {
            ::kill(static_cast<pid_t>(pid), SIGKILL);
            ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
            ++ended;
        }
    }
    return ended;
}

void RunSupervisor::attemptDone()
{
    m_graceTimer.stop();
    killAll(); // leftovers the ranks forked
    if (const int ended = endEscapedDescendants(); ended > 0 && m_run)
        (void)m_run->appendEvent(rundir::EventKind::EscapedProcessesKilled, {{QStringLiteral("count"), ended}});
    // A rank killed while it held a shared-memory segment it had not unlinked yet leaves it behind.
    for (const auto &process : m_processes) {
        if (const int removed = rundir::removeSegmentsOf(process->pid()); removed > 0 && m_run)
            (void)m_run->appendEvent(rundir::EventKind::SharedMemoryRemoved,
                                     {{QStringLiteral("pid"), process->pid()}, {QStringLiteral("segments"), removed}});
    }
    if (!m_logFailure.isEmpty()) {
        finish(rundir::RunState::Failed, kLogWriteFailedExitCode, m_logFailure);
        return;
    }
    // A rank that failed before any stop was asked for (m_firstFailure is only set then) failed the
    // run, unless a restart remained, which the stop cancels.
    if (m_stopRequested && !(m_firstFailure && m_restartCount >= m_settings.maxRestarts)) {
        finish(rundir::RunState::Stopped, m_firstFailure ? m_firstFailure->shellCode() : 130, m_stopReason);
        return;
    }
    if (m_firstFailure) {
        QString reason = QStringLiteral("rank %1 %2").arg(m_firstFailure->rank).arg(m_firstFailure->describe());
        if (m_stopRequested)
            reason += QStringLiteral(" (before the stop was requested)");
        if (m_restartCount < m_settings.maxRestarts) {
            ++m_restartCount;
            if (m_run) {
                (void)m_run->appendEvent(rundir::EventKind::Restarting, {{QStringLiteral("restart"), m_restartCount},
                                                                         {QStringLiteral("reason"), reason}});
                (void)m_run->setState(rundir::RunState::Restarting, reason);
            }
            Q_EMIT restarting(m_restartCount, reason);
            QTimer::singleShot(0, this, [this] {
                if (m_stopRequested) {
                    finish(rundir::RunState::Stopped, 130, m_stopReason);
                    return;
                }
                beginAttempt();
            });
            return;
        }
        finish(rundir::RunState::Failed, m_firstFailure->shellCode(), reason);
        return;
    }
    finish(rundir::RunState::Succeeded, 0, {});
}

void RunSupervisor::finish(rundir::RunState runState, int exitCode, const QString &reason)
{
    const QString state = QString::fromLatin1(rundir::toString(runState));
    if (m_finished)
        return;
    m_finished = true;
    m_folderCheck.stop();
    m_reaper.reset(); // every group was killed in attemptDone(); the helper leaves quietly
    m_outcome.state = state;
    m_outcome.exitCode = exitCode;
    m_outcome.failedRank = m_firstFailure ? m_firstFailure->rank : -1;
    m_outcome.restarts = m_restartCount;
    m_outcome.reason = reason;
    m_outcome.ranks.clear();
    for (const auto &[rank, exit] : m_exits)
        m_outcome.ranks.push_back(exit);
    if (m_run) {
        recordRanks();
        QJsonObject manifest = m_run->manifest();
        manifest[QStringLiteral("exit_code")] = exitCode;
        manifest[QStringLiteral("failed_rank")] = m_outcome.failedRank;
        (void)m_run->writeManifest(manifest);
        (void)m_run->appendEvent(rundir::EventKind::Finished, {{QStringLiteral("state"), state},
                                                               {QStringLiteral("exit_code"), exitCode},
                                                               {QStringLiteral("reason"), reason}});
        (void)m_run->setState(runState, reason);
    }
    Q_EMIT finished(m_outcome);
}

void RunSupervisor::recordRanks()
{
    if (!m_run)
        return;
    QJsonArray ranks;
    for (const auto &process : m_processes) {
        auto it = m_exits.find(process->rank());
        QJsonObject entry = it != m_exits.end() ? exitJson(it->second)
                                                : QJsonObject{{QStringLiteral("rank"), process->rank()},
                                                              {QStringLiteral("pid"), process->pid()},
                                                              {QStringLiteral("result"), QStringLiteral("running")}};
        // With the pid, the start time lets `accel stop` prove a process is this rank.
        const auto start = m_rankStartTimes.find(process->rank());
        entry[QLatin1String(rundir::key::StartTime)] =
            start != m_rankStartTimes.end() ? static_cast<qint64>(start->second) : 0;
        ranks.append(entry);
    }
    QJsonObject manifest = m_run->manifest();
    manifest[QStringLiteral("ranks")] = ranks;
    manifest[QStringLiteral("restarts")] = m_restartCount;
    (void)m_run->writeManifest(manifest);
}

} // namespace accel::launcher
