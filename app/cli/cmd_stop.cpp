// accel stop RUN: asks the run's supervisor to stop (SIGINT, which makes it SIGTERM the ranks and
// SIGKILL them after its grace period), then escalates to SIGTERM and SIGKILL on the supervisor,
// whose ranks die with it. A run whose supervisor is already gone has its ranks' process groups killed.
#include "app/cli/argparser.h"
#include "app/cli/command.h"

#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSysInfo>
#include <QThread>

#include <csignal>
#include <cstdio>

namespace accel::cli {

using namespace accel::launcher;

namespace {

bool waitGone(qint64 pid, quint64 start, int timeoutMs)
{
    QElapsedTimer clock;
    clock.start();
    while (processMatches(pid, start)) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QThread::msleep(20);
    }
    return true;
}

} // namespace

static int runStop(int argc, char **argv)
{
    ArgParser parser("accel stop", "Stop a run: SIGINT to its supervisor, then SIGTERM, then SIGKILL.");
    parser.addPositional({"run", "run id (or unique prefix) or run directory"});
    parser.addValue("runs_root", "DIR", "folder holding run directories",
                    RunDirectory::defaultRunsRoot().toStdString());
    parser.addValue("timeout", "SECONDS", "wait this long after each signal before escalating", "15");
    parser.addFlag("json", "machine-readable output (accel.stop)");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel stop: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const QString root =
        QString::fromStdString(parser.valueOr("runs_root", RunDirectory::defaultRunsRoot().toStdString()));
    auto run = RunDirectory::open(QString::fromStdString(*parser.firstPositional("run")), root);
    if (!run) {
        std::fprintf(stderr, "accel stop: %s\n", run.error().toString().c_str());
        return exitCodeFor(run.error());
    }
    const int timeoutMs = static_cast<int>(std::atof(parser.valueOr("timeout", "15").c_str()) * 1000);
    const QJsonObject supervisor = run->manifest().value(QStringLiteral("supervisor")).toObject();
    const qint64 pid = supervisor.value(QStringLiteral("pid")).toInteger();
    const quint64 start = static_cast<quint64>(supervisor.value(QStringLiteral("start_time")).toInteger());
    const QString host = supervisor.value(QStringLiteral("host")).toString();
    if (!host.isEmpty() && host != QSysInfo::machineHostName()) {
        std::fprintf(stderr, "accel stop: run %s is supervised on host %s; run accel stop there\n",
                     run->id().toLocal8Bit().constData(), host.toLocal8Bit().constData());
        return ExitBadInput;
    }
    const QString before = run->effectiveState(false);
    QString how;
    if (runstate::isFinal(before) && before != QLatin1String(runstate::Lost)) {
        how = QStringLiteral("already ") + before;
    } else if (before == QLatin1String(runstate::Lost) || !processMatches(pid, start)) {
        // Supervisor gone: kill whatever is left of the ranks' process groups.
        for (const QJsonValue &rank : run->manifest().value(QStringLiteral("ranks")).toArray()) {
            const qint64 rankPid = rank.toObject().value(QStringLiteral("pid")).toInteger();
            if (rankPid > 0)
                ::killpg(static_cast<pid_t>(rankPid), SIGKILL);
        }
        (void)run->effectiveState(true);
        how = QStringLiteral("supervisor was gone; killed remaining rank process groups");
    } else {
        const std::pair<int, const char *> steps[] = {{SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGKILL, "SIGKILL"}};
        for (const auto &[signal, name] : steps) {
            ::kill(static_cast<pid_t>(pid), signal);
            how = QStringLiteral("supervisor stopped after ") + QString::fromLatin1(name);
            if (waitGone(pid, start, signal == SIGKILL ? 5000 : timeoutMs))
                break;
        }
        if (processMatches(pid, start)) {
            std::fprintf(stderr, "accel stop: supervisor pid %lld did not exit\n", static_cast<long long>(pid));
            return ExitFailure;
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
