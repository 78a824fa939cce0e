// accel stop RUN: records the stop request in the run folder (rundir::file::StopRequest: a rank that
// fails from then on, having lost a peer that was stopped first, is the stop's consequence and the
// run ends "stopped"; --request_only does only this, for `accel hosts stop`, which asks every node
// before it signals any), then asks the run's supervisor to stop (SIGINT, which makes it SIGTERM the ranks and
// SIGKILL them after its grace period), then escalates to SIGTERM and SIGKILL on the supervisor,
// whose ranks die with it. A run whose supervisor is already gone has its ranks' process groups
// killed. Only processes proven to belong to the run are signalled (core/rundir/processidentity.h):
// pid in range, the recorded start time, the process group and session the run created, and
// every uid of the process is the owner of the run directory (whoever wrote run.json can copy the
// rest from /proc of any process).
#include "app/cli/argparser.h"
#include "app/cli/command.h"
#ifdef ACCEL_CLI_HAVE_HOSTS
#include "app/cli/cmd_hosts_common.h"
#endif

#include "core/rundir/privatefiles.h"
#include "core/rundir/processidentity.h"
#include "launcher/clusterrecord.h"
#include "launcher/hostfactory.h" // kLocalDestination (header only)
#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace accel::cli {

using namespace accel::launcher;

namespace {

// The ranks of a run whose supervisor is gone: each rank leads its own process group and
// session, so a proven rank's group is killed. Returns what was done, for the report.
QString killProvenRankGroups(const RunDirectory &run, std::uint32_t owner)
{
    int killed = 0;
    QStringList refused;
    for (const QJsonValue &value : run.manifest().value(QLatin1String(rundir::key::Ranks)).toArray()) {
        const QJsonObject rank = value.toObject();
        if (rank.value(QStringLiteral("result")).toString() != QLatin1String("running"))
            continue; // it exited; its leftovers were killed by the supervisor or its reaper
        rundir::ProcessClaim claim;
        claim.pid = static_cast<std::int64_t>(rank.value(QLatin1String(rundir::key::Pid)).toDouble());
        const double start = rank.value(QLatin1String(rundir::key::StartTime)).toDouble();
        claim.startTime = start > 0 && start < 1.8e19 ? static_cast<std::uint64_t>(start) : 0;
        auto proven = rundir::ProvenProcess::prove(claim, owner);
        if (proven && proven->signalGroup(SIGKILL)) {
            ++killed;
        } else if (!proven && proven.error().code != ErrorCode::NotFound) {
            refused << QStringLiteral("rank %1: %2")
                           .arg(rank.value(QStringLiteral("rank")).toInt())
                           .arg(QString::fromStdString(proven.error().toString()));
        }
    }
    QString how = QStringLiteral("supervisor was gone; killed %1 remaining rank process group(s)").arg(killed);
    if (!refused.isEmpty())
        how +=
            QStringLiteral("; not signalled (not proven to belong to the run): ") + refused.join(QStringLiteral("; "));
    return how;
}

// Whether `target` is for `accel hosts stop`: a record of `accel hosts launch`, or a file that is no
// run (a run is a folder) and that its one reader, readClusterRecord, then says what is wrong with.
bool isClusterRecord(const QString &target, const QString &runsRoot)
{
    if (!QFileInfo(target).isFile())
        return false;
    return readClusterRecord(target).has_value() || !RunDirectory::open(target, runsRoot).has_value();
}

} // namespace

#ifdef ACCEL_CLI_HAVE_HOSTS
int runHostsStop(int argc, char **argv); // cmd_hosts_launch.cpp
#endif

static int runStop(int argc, char **argv)
{
    ArgParser parser("accel stop", "Stop a run: SIGINT to its supervisor, then SIGTERM, then SIGKILL.");
    parser.addPositional({"run", "run id (or unique prefix) or run directory; or the record of `accel hosts launch`, "
                                 "whose every node is stopped over SSH (`accel hosts stop RECORD`)"});
    parser.addValue("runs_root", "DIR", "folder holding run directories",
                    RunDirectory::defaultRunsRoot().toStdString());
    parser.addValue("timeout", "SECONDS", "wait this long after each signal before escalating", "15");
    parser.addFlag("json", "machine-readable output (accel.stop)");
    parser.addFlag("request_only",
                   "only record the stop request in the run folder and signal nothing (`accel hosts stop` does this "
                   "on every node before it signals any, so that a rank that loses its peer on another node ends "
                   "\"stopped\", not \"failed\")");
    parser.addValue("host", "DEST",
                    "where the run's supervisor runs: an SSH destination (a ~/.ssh/config alias or "
                    "[user@]host[:port]), or \"local\" for this machine whatever run.json records (default: the "
                    "host run.json records, over SSH when it is another)");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel stop: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const QString target = QString::fromStdString(*parser.firstPositional("run"));
    const QString root =
        QString::fromStdString(parser.valueOr("runs_root", RunDirectory::defaultRunsRoot().toStdString()));
    if (isClusterRecord(target, root)) {
#ifdef ACCEL_CLI_HAVE_HOSTS
        return runHostsStop(argc, argv);
#else
        std::fprintf(stderr, "accel stop: %s is a cluster record, and this accel was built without SSH hosts\n",
                     target.toLocal8Bit().constData());
        return ExitFailure;
#endif
    }
    const QString host = QString::fromStdString(parser.valueOr("host", "")).trimmed();
    if (parser.isSet("host") && host.isEmpty()) {
        std::fprintf(stderr, "accel stop: --host: expected an SSH destination or \"local\", got ''\n");
        return ExitBadInput;
    }
    const bool local = host == QLatin1String(launcher::kLocalDestination);
    // What accel stop on the run's host is asked for; there the run is local.
    QStringList forwarded{QStringLiteral("--host"), QLatin1String(launcher::kLocalDestination),
                          QStringLiteral("--timeout"), QString::fromStdString(parser.valueOr("timeout", "15"))};
    const bool requestOnly = parser.isSet("request_only");
    if (parser.isSet("json"))
        forwarded << QStringLiteral("--json");
    if (requestOnly)
        forwarded << QStringLiteral("--request_only");
    if (parser.isSet("runs_root"))
        forwarded << QStringLiteral("--runs_root") << QString::fromStdString(*parser.value("runs_root"));
#ifdef ACCEL_CLI_HAVE_HOSTS
    if (!host.isEmpty() && !local) // a host named by the user: the run is looked up there, as written
        return hosts::forwardToHost("accel stop", host, QStringList{QStringLiteral("stop"), target} + forwarded);
#else
    if (!host.isEmpty() && !local) {
        std::fprintf(stderr, "accel stop: --host %s: this accel was built without SSH hosts\n",
                     host.toLocal8Bit().constData());
        return ExitBadInput;
    }
#endif
    auto run = RunDirectory::open(target, root);
    if (!run) {
        std::fprintf(stderr, "accel stop: %s\n", run.error().toString().c_str());
        return exitCodeFor(run.error());
    }
    const int timeoutMs = static_cast<int>(std::atof(parser.valueOr("timeout", "15").c_str()) * 1000);
    const rundir::SupervisorRecord supervisor = run->supervisor();
    const QString before = run->effectiveState(false);
    // Whose processes the run's may be: the owner of the folder that holds run.json.
    const auto owner = rundir::runDirectoryOwner(QFile::encodeName(run->path()).toStdString());
    QString how;
    if (runstate::isFinal(before) && before != QLatin1String(runstate::Lost)) {
        how = QStringLiteral("already ") + before;
    } else {
        // --host local: run.json's supervisor is taken as this machine's (accel stop sent over SSH).
        switch (local ? rundir::checkSupervisor(supervisor, supervisor.host) : rundir::checkSupervisor(supervisor)) {
        case rundir::SupervisorCheck::Unknown:
            if (supervisor.host.empty()) {
                std::fprintf(stderr,
                             "accel stop: %s: run.json records no supervisor host; cannot prove which processes "
                             "belong to the run, nothing signalled\n",
                             run->filePath(QLatin1String(rundir::file::Manifest)).toLocal8Bit().constData());
                return ExitFailure;
            }
#ifdef ACCEL_CLI_HAVE_HOSTS
            // Supervised on another host: accel stop runs there over SSH, on the same run folder
            // (a shared file system), and its output and exit code come back. Only for a run folder
            // of this user: run.json is the folder owner's word, not another user's.
            if (owner && *owner == ::geteuid())
                return hosts::forwardToHost("accel stop", QString::fromStdString(supervisor.host),
                                            QStringList{QStringLiteral("stop"), run->path()} + forwarded);
#endif
            std::fprintf(stderr, "accel stop: run %s is supervised on host %s; run accel stop there\n",
                         run->id().toLocal8Bit().constData(), supervisor.host.c_str());
            return ExitBadInput;
        case rundir::SupervisorCheck::NotStarted:
            std::fprintf(stderr, "accel stop: %s: no supervisor pid recorded yet; nothing signalled\n",
                         run->filePath(QLatin1String(rundir::file::Manifest)).toLocal8Bit().constData());
            return ExitFailure;
        case rundir::SupervisorCheck::Gone:
            if (requestOnly) { // no supervisor to read the request; the stop itself kills what is left
                how = QStringLiteral("supervisor is gone; nothing requested");
                break;
            }
            how = owner ? killProvenRankGroups(*run, *owner)
                        : QStringLiteral("supervisor was gone; no rank signalled: ") +
                              QString::fromStdString(owner.error().toString());
            (void)run->effectiveState(true);
            break;
        case rundir::SupervisorCheck::Alive: {
            if (!owner) {
                std::fprintf(stderr, "accel stop: the recorded supervisor is not signalled: %s\n",
                             owner.error().toString().c_str());
                return ExitFailure;
            }
            auto proven = rundir::ProvenProcess::prove(
                {supervisor.pid, supervisor.startTime, supervisor.processGroup, supervisor.session}, *owner);
            if (!proven) {
                std::fprintf(stderr, "accel stop: %s: the recorded supervisor is not signalled: %s\n",
                             run->filePath(QLatin1String(rundir::file::Manifest)).toLocal8Bit().constData(),
                             proven.error().toString().c_str());
                return ExitFailure;
            }
            // The request first, the signal after: a rank that ends badly from now on (its peer on
            // another node stopped first) is the stop's consequence (RunSupervisor::stop). Only
            // after the proof, so only into a run folder whose supervisor is the folder owner's.
            if (auto requested = run->requestStop(QStringLiteral("accel stop")); !requested) {
                if (requestOnly) {
                    std::fprintf(stderr, "accel stop: the stop request is not recorded: %s\n",
                                 requested.error().toString().c_str());
                    return ExitFailure;
                }
                std::fprintf(stderr, "accel stop: warning: the stop request is not recorded (%s); signalling anyway\n",
                             requested.error().toString().c_str());
            }
            if (requestOnly) {
                how = QStringLiteral("stop requested; nothing signalled");
                break;
            }
            const std::pair<int, const char *> steps[] = {
                {SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGKILL, "SIGKILL"}};
            bool gone = false;
            for (const auto &[signal, name] : steps) {
                proven->signal(signal);
                how = QStringLiteral("supervisor stopped after ") + QString::fromLatin1(name);
                if ((gone = proven->waitExited(signal == SIGKILL ? 5000 : timeoutMs)))
                    break;
            }
            if (!gone) {
                std::fprintf(stderr, "accel stop: supervisor pid %lld did not exit\n",
                             static_cast<long long>(supervisor.pid));
                return ExitFailure;
            }
            break;
        }
        }
    }
    (void)run->reloadManifest();
    const QString state = run->effectiveState(true);
    if (parser.isSet("json")) {
        const QJsonObject object{{QStringLiteral("schema"), QStringLiteral("accel.stop")},
                                 {QStringLiteral("version"), 1},
                                 {QStringLiteral("id"), run->id()},
                                 {QStringLiteral("state"), state},
                                 {QStringLiteral("detail"), how}};
        std::printf("%s", schemaJson(object).constData());
    } else {
        std::printf("%s: %s (%s)\n", run->id().toLocal8Bit().constData(), state.toLocal8Bit().constData(),
                    how.toLocal8Bit().constData());
    }
    return ExitOk;
}

static Registrar registrar({"stop", "stop a run (SIGINT, SIGTERM, SIGKILL)", &runStop});

} // namespace accel::cli
