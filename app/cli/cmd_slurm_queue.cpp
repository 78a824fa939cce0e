// accel slurm queue / cancel / follow (cmd_slurm.cpp has submit and the action table).
#include "app/cli/cmd_slurm_common.h"
#include "app/cli/command.h"

#include "launcher/jsonoutput.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QTimer>

#include <algorithm>
#include <cstdio>

namespace accel::cli {

namespace {

using namespace accel::launcher;
using slurm::SlurmJob;

QJsonObject jobJson(const SlurmJob &job)
{
    return QJsonObject{{QStringLiteral("id"), job.id},
                       {QStringLiteral("name"), job.name},
                       {QStringLiteral("state"), job.state},
                       {QStringLiteral("elapsed"), job.elapsed},
                       {QStringLiteral("elapsed_seconds"),
                        job.elapsedSeconds < 0 ? QJsonValue() : QJsonValue(double(job.elapsedSeconds))},
                       {QStringLiteral("nodes"), job.nodes},
                       {QStringLiteral("reason"), job.reason},
                       {QStringLiteral("node_list"), job.nodeList},
                       {QStringLiteral("work_dir"), job.workDir},
                       {QStringLiteral("partition"), job.partition},
                       {QStringLiteral("final"), slurm::isFinalState(job.state)},
                       {QStringLiteral("source"), job.source}};
}

Result<QStringList> jobIdsOf(const std::vector<std::string> &words)
{
    QStringList ids;
    for (const std::string &word : words) {
        for (const QString &part : QString::fromStdString(word).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            if (!slurm::isJobId(part.trimmed()))
                return tl::unexpected(slurm::badJobId(part));
            ids << part.trimmed();
        }
    }
    return ids;
}

void sleepMs(int milliseconds)
{
    QEventLoop loop;
    QTimer::singleShot(milliseconds, &loop, &QEventLoop::quit);
    loop.exec();
}

int pollMsOf(const ArgParser &parser, int *out)
{
    const std::string text = parser.valueOr("poll", "2");
    bool ok = false;
    const double seconds = QString::fromStdString(text).toDouble(&ok);
    if (!ok || !(seconds >= 0.1) || seconds > 600) {
        std::fprintf(stderr, "accel slurm: --poll: expected seconds between 0.1 and 600, got '%s'\n", text.c_str());
        return ExitBadInput;
    }
    *out = static_cast<int>(seconds * 1000);
    return -1;
}

} // namespace

int runSlurmQueue(int argc, char **argv)
{
    ArgParser parser("accel slurm queue", "The SLURM queue on a login node over SSH: squeue (pending, running and "
                                          "recently ended jobs), plus sacct for jobs that ended before.");
    parser.addPositional({"JOBIDS", "only these jobs, comma-separated: 12,13 (default: all of the SSH user's)", true});
    slurmcli::addCommonOptions(parser, "machine-readable output (" +
                                           schemaAndVersion(launcher::SlurmQueueSchema, launcher::SlurmQueueVersion) +
                                           ")");
    parser.setEpilog("Fields are read from squeue --format and sacct --parsable2 with an explicit field list. Exit "
                     "status: 0 listed, 1 failed (host, squeue), 2 bad arguments.");
    if (const int code = slurmcli::parseOrExit(parser, argc, argv, "queue"); code >= 0)
        return code;
    auto ids = jobIdsOf(parser.positional("JOBIDS"));
    if (!ids)
        return slurmcli::reportError("queue", ids.error());
    auto remote = slurmcli::connectRemote(parser);
    if (!remote)
        return slurmcli::reportError("queue", remote.error());
    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    auto report = slurmcli::queryQueue(*remote, *ids);
    if (!report)
        return slurmcli::reportError("queue", report.error());
    if (parser.isSet("json")) {
        QJsonArray jobs;
        for (const SlurmJob &job : report->jobs)
            jobs.append(jobJson(job));
        const QJsonObject body{{QStringLiteral("host"), remote->name},
                               {QStringLiteral("accounting"), report->accounting},
                               {QStringLiteral("accounting_message"), report->accountingMessage},
                               {QStringLiteral("jobs"), jobs}};
        std::fputs(schemaJson(QLatin1String(SlurmQueueSchema), SlurmQueueVersion, body).constData(), stdout);
        return ExitOk;
    }
    int nameWidth = 4;
    for (const SlurmJob &job : report->jobs)
        nameWidth = std::max(nameWidth, static_cast<int>(std::min<qsizetype>(job.name.size(), 24)));
    std::printf("%-10s %-*s %-11s %10s %5s  %s\n", "JOBID", nameWidth, "NAME", "STATE", "ELAPSED", "NODES",
                "REASON / NODES");
    for (const SlurmJob &job : report->jobs) {
        const QString where =
            job.state == QLatin1String("PENDING") || job.nodeList.isEmpty() ? job.reason : job.nodeList;
        std::printf("%-10s %-*s %-11s %10s %5d  %s\n", qPrintable(job.id), nameWidth, qPrintable(job.name.left(24)),
                    qPrintable(job.state), qPrintable(job.elapsed), job.nodes, qPrintable(where));
    }
    if (!report->accountingMessage.isEmpty())
        std::fprintf(stderr, "note: %s\n", qPrintable(report->accountingMessage));
    return ExitOk;
}

int runSlurmCancel(int argc, char **argv)
{
    ArgParser parser("accel slurm cancel", "Cancel a SLURM job over SSH (scancel) and wait for the state it ends in.");
    parser.addPositional({"JOBID", "the job to cancel"});
    slurmcli::addCommonOptions(parser, "machine-readable output (" +
                                           schemaAndVersion(launcher::SlurmCancelSchema, launcher::SlurmCancelVersion) +
                                           ")");
    parser.addValue("wait", "SECONDS", "how long to wait for the job to end (0: do not wait)", "60");
    parser.addValue("poll", "SECONDS", "between two looks at the queue", "2");
    parser.setEpilog("Exit status: 0 the job ended (or was signalled, with --wait 0), 1 it is unknown, had ended "
                     "already, or is still running after --wait, 2 bad arguments.");
    if (const int code = slurmcli::parseOrExit(parser, argc, argv, "cancel"); code >= 0)
        return code;
    const QString jobId = QString::fromStdString(parser.firstPositional("JOBID").value_or(""));
    if (!slurm::isJobId(jobId))
        return slurmcli::reportError("cancel", slurm::badJobId(jobId));
    const std::string waitText = parser.valueOr("wait", "60");
    bool ok = false;
    const double waitSeconds = QString::fromStdString(waitText).toDouble(&ok);
    if (!ok || waitSeconds < 0 || waitSeconds > 86400)
        return slurmcli::reportError(
            "cancel", Error{ErrorCode::InvalidInput, "expected seconds (0-86400), got '" + waitText + "'", "--wait"});
    int pollMs = 0;
    if (const int code = pollMsOf(parser, &pollMs); code >= 0)
        return code;
    auto remote = slurmcli::connectRemote(parser);
    if (!remote)
        return slurmcli::reportError("cancel", remote.error());
    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    auto before = slurmcli::queryJob(*remote, jobId);
    if (!before)
        return slurmcli::reportError("cancel", before.error());
    if (!*before)
        return slurmcli::reportError(
            "cancel",
            Error{ErrorCode::NotFound, "job " + jobId.toStdString() + " is not known to SLURM there (squeue and sacct)",
                  remote->name.toStdString()});
    const SlurmJob first = **before;
    if (slurm::isFinalState(first.state))
        return slurmcli::reportError("cancel", Error{ErrorCode::Failed,
                                                     "job " + jobId.toStdString() + " has ended already (" +
                                                         first.state.toStdString() + "): nothing to cancel",
                                                     remote->name.toStdString()});
    if (auto cancelled = slurmcli::runScript(*remote, slurm::cancelScript(jobId)); !cancelled)
        return slurmcli::reportError("cancel", cancelled.error());
    SlurmJob last = first;
    QElapsedTimer clock;
    clock.start();
    while (waitSeconds > 0 && !slurm::isFinalState(last.state) && clock.elapsed() < waitSeconds * 1000) {
        sleepMs(pollMs);
        auto now = slurmcli::queryJob(*remote, jobId);
        if (!now)
            return slurmcli::reportError("cancel", now.error());
        if (*now)
            last = **now;
    }
    const bool ended = slurm::isFinalState(last.state);
    if (parser.isSet("json")) {
        const QJsonObject body{{QStringLiteral("host"), remote->name},
                               {QStringLiteral("job_id"), jobId},
                               {QStringLiteral("state_before"), first.state},
                               {QStringLiteral("state"), last.state},
                               {QStringLiteral("ended"), ended}};
        std::fputs(schemaJson(QLatin1String(SlurmCancelSchema), SlurmCancelVersion, body).constData(), stdout);
    } else {
        std::printf("job %s: %s -> %s\n", qPrintable(jobId), qPrintable(first.state), qPrintable(last.state));
    }
    if (!ended && waitSeconds > 0) {
        std::fprintf(stderr, "accel slurm cancel: %s: job %s is still %s after %s s\n", qPrintable(remote->name),
                     qPrintable(jobId), qPrintable(last.state), waitText.c_str());
        return ExitFailure;
    }
    return ExitOk;
}

int runSlurmFollow(int argc, char **argv)
{
    ArgParser parser("accel slurm follow", "Follow a SLURM job's run directory over SSH: wait until the job has "
                                           "started it, then `accel tail --follow` it there until the run ends.");
    parser.addPositional({"JOBID", "a job submitted by accel slurm submit (or whose script sets ACCEL_RUN_DIR)"});
    slurmcli::addCommonOptions(parser, "the accel.tail stream of `accel tail --follow --json` (docs/monitor.md)");
    parser.addValue("run_dir", "DIR",
                    "the run directory on the host (default: accel-run-<job id> in the job's working directory; "
                    "for a multi-node job the folder of its node<K> run directories, all of which are followed)");
    parser.addValue("node_wait", "SECONDS",
                    "multi-node job: once one node's run directory is there, how long to wait for the others "
                    "before following those that are",
                    "60");
    parser.addFlag("logs", "rank logs (default)");
    parser.addFlag("metrics", "metrics/*.jsonl");
    parser.addFlag("events", "events.jsonl (launcher events)");
    parser.addValue("rank", "N", "only this rank's file");
    parser.addValue("poll", "SECONDS", "between two looks at the queue while the job waits", "2");
    parser.setEpilog("Rank numbers are global: --rank N follows the node that holds rank N. Exit status: accel "
                     "tail's (0 when the run ended), 1 when the job ended without a run directory, a node's run "
                     "directory never appeared (it is named) or the host failed, 2 bad arguments.");
    if (const int code = slurmcli::parseOrExit(parser, argc, argv, "follow"); code >= 0)
        return code;
    const QString jobId = QString::fromStdString(parser.firstPositional("JOBID").value_or(""));
    if (!slurm::isJobId(jobId))
        return slurmcli::reportError("follow", slurm::badJobId(jobId));
    int pollMs = 0;
    if (const int code = pollMsOf(parser, &pollMs); code >= 0)
        return code;
    const std::string nodeWaitText = parser.valueOr("node_wait", "60");
    bool nodeWaitOk = false;
    const double nodeWaitSeconds = QString::fromStdString(nodeWaitText).toDouble(&nodeWaitOk);
    if (!nodeWaitOk || nodeWaitSeconds < 0 || nodeWaitSeconds > 86400)
        return slurmcli::reportError(
            "follow",
            Error{ErrorCode::InvalidInput, "expected seconds (0-86400), got '" + nodeWaitText + "'", "--node_wait"});
    QStringList tailArguments = {QStringLiteral("tail"), QStringLiteral("--follow")};
    for (const char *flag : {"json", "logs", "metrics", "events"}) {
        if (parser.isSet(flag))
            tailArguments << QStringLiteral("--") + QLatin1String(flag);
    }
    if (auto rank = parser.value("rank")) {
        bool number = false;
        QString::fromStdString(*rank).toUInt(&number);
        if (!number)
            return slurmcli::reportError(
                "follow", Error{ErrorCode::InvalidInput, "expected a rank number, got '" + *rank + "'", "--rank"});
        tailArguments << QStringLiteral("--rank") << QString::fromStdString(*rank);
    }
    auto remote = slurmcli::connectRemote(parser);
    if (!remote)
        return slurmcli::reportError("follow", remote.error());
    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);

    // Wait for run.json in the run directory (every node's, for a multi-node job), while the job has
    // not ended. Once one node's is there, the others get --node_wait seconds.
    QString runDir = QString::fromStdString(parser.valueOr("run_dir", ""));
    QString lastState;
    QStringList missing;
    QElapsedTimer sinceFirstNode;
    QString finalState; // the job's state when the wait for the nodes ended
    for (;;) {
        auto job = slurmcli::queryJob(*remote, jobId);
        if (!job)
            return slurmcli::reportError("follow", job.error());
        if (!*job && runDir.isEmpty())
            return slurmcli::reportError(
                "follow", Error{ErrorCode::NotFound,
                                "job " + jobId.toStdString() +
                                    " is not known to SLURM there (squeue and sacct); give its --run_dir",
                                remote->name.toStdString()});
        const QString state = *job ? (*job)->state : QString();
        if (runDir.isEmpty())
            runDir = slurm::defaultRunDirectory((*job)->workDir, jobId);
        const QStringList manifests = slurm::runManifests(runDir, *job ? (*job)->nodes : 1);
        auto exists = slurmcli::runScript(*remote, slurm::filesExistScript(manifests));
        if (!exists)
            return slurmcli::reportError("follow", exists.error());
        const QList<bool> found = slurm::parseFilesExist(*exists, manifests.size());
        if (found.isEmpty())
            return slurmcli::reportError("follow",
                                         Error{ErrorCode::Failed,
                                               "unexpected answer to the run directory check: '" +
                                                   QString::fromUtf8(exists->trimmed().left(200)).toStdString() + "'",
                                               remote->name.toStdString()});
        missing.clear();
        for (qsizetype i = 0; i < manifests.size(); ++i) {
            if (!found.at(i))
                missing << manifests.at(i);
        }
        if (missing.isEmpty())
            break;
        if (missing.size() < manifests.size()) { // some nodes have started their runs
            if (!sinceFirstNode.isValid())
                sinceFirstNode.start();
            finalState = state;
            if (!*job || slurm::isFinalState(state) || sinceFirstNode.elapsed() >= nodeWaitSeconds * 1000)
                break;
        } else {
            if (!*job)
                return slurmcli::reportError("follow",
                                             Error{ErrorCode::NotFound,
                                                   "job " + jobId.toStdString() + " is not known to SLURM there and " +
                                                       manifests.first().toStdString() + " does not exist",
                                                   remote->name.toStdString()});
            if (slurm::isFinalState(state))
                return slurmcli::reportError("follow", Error{ErrorCode::Failed,
                                                             "job " + jobId.toStdString() + " ended (" +
                                                                 state.toStdString() + ") without a run directory at " +
                                                                 runDir.toStdString() + ": see slurm-" +
                                                                 jobId.toStdString() + ".out in its working directory",
                                                             remote->name.toStdString()});
        }
        if (state != lastState) {
            const QString reason = *job && !(*job)->reason.isEmpty() && (*job)->reason != QLatin1String("None")
                                       ? QStringLiteral(" (%1)").arg((*job)->reason)
                                       : QString();
            std::fprintf(stderr, "job %s is %s%s; waiting for %s\n", qPrintable(jobId), qPrintable(state),
                         qPrintable(reason), qPrintable(missing.join(QStringLiteral(", "))));
            lastState = state;
        }
        sleepMs(pollMs);
    }
    // A node whose run never appeared is named; the others are followed.
    QStringList missingNodes;
    for (const QString &manifest : missing)
        missingNodes << QFileInfo(QFileInfo(manifest).path()).fileName() + QStringLiteral(" (") + manifest +
                            QLatin1Char(')');
    if (!missingNodes.isEmpty()) {
        const QString when = slurm::isFinalState(finalState) || finalState.isEmpty()
                                 ? QStringLiteral("when the job ended")
                                 : QStringLiteral("after %1 s").arg(QString::fromStdString(nodeWaitText));
        std::fprintf(stderr,
                     "accel slurm follow: %s: job %s: no run directory from %s %s; following the other nodes (see "
                     "slurm-%s.out in the job's working directory)\n",
                     qPrintable(remote->name), qPrintable(jobId), qPrintable(missingNodes.join(QStringLiteral(", "))),
                     qPrintable(when), qPrintable(jobId));
    }

    // accel tail --follow there, its output passed on as it arrives.
    HostCommandOptions options;
    options.environment = remote->settings.environment;
    options.keepOutput = false;
    QEventLoop loop;
    AccelOutcome outcome;
    std::unique_ptr<HostCommand> tail = remote->host->start(tailArguments << runDir, options);
    QObject::connect(tail.get(), &HostCommand::outputReceived, &loop, [](const QByteArray &out, const QByteArray &err) {
        std::fwrite(out.constData(), 1, static_cast<size_t>(out.size()), stdout);
        std::fflush(stdout);
        std::fwrite(err.constData(), 1, static_cast<size_t>(err.size()), stderr);
    });
    QObject::connect(tail.get(), &HostCommand::done, &loop, [&outcome, &loop](const AccelOutcome &result) {
        outcome = result;
        loop.quit();
    });
    loop.exec();
    if (!outcome.succeeded()) {
        std::fprintf(stderr, "accel slurm follow: %s: accel tail: %s\n", qPrintable(remote->name),
                     qPrintable(outcome.error.isEmpty() ? outcome.describe() : outcome.error));
        // accel tail's own exit status when it exited; otherwise the host failed (a lost connection
        // has no exit status: it was -1, which the shell saw as 255).
        const bool exited = !outcome.failedToStart && !outcome.timedOut && !outcome.cancelled && outcome.signal == 0 &&
                            outcome.exitCode >= 0;
        return exited ? std::min(outcome.exitCode, 255) : ExitFailure;
    }
    if (auto job = slurmcli::queryJob(*remote, jobId); job && *job && !parser.isSet("json"))
        std::fprintf(stderr, "job %s: %s\n", qPrintable(jobId), qPrintable((*job)->state));
    return missingNodes.isEmpty() ? ExitOk : ExitFailure;
}

} // namespace accel::cli
