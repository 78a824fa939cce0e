// accel stack RUN: the hang autopsy (docs/hang-autopsy.md). Captures every live rank's
// stack — Python ranks with py-spy, accel-worker ranks through their own handler
// (core/worker/stackdump.h: the collective each waits in and its number) — groups identical
// stacks, prints them, and keeps the capture in the run directory (stacks.json, stacks.txt) with a
// `stacks_captured` event. The supervisor runs it by itself when `hang_suspected` fires
// (captureStacksOnHang). Only processes proven to belong to the run are touched, as for
// `accel stop` (core/rundir/processidentity.h). A run supervised on another host is captured
// there: `accel stack` runs on that host over SSH (launcher/hostfactory.h) and its output is
// passed through.
#include "app/cli/argparser.h"
#include "app/cli/command.h"
#include "app/cli/stackreport.h"
#ifdef ACCEL_CLI_HAVE_HOSTS
#include "app/cli/cmd_hosts_common.h"
#endif

#include "core/rundir/privatefiles.h"
#include "core/rundir/processidentity.h"
#include "launcher/hostfactory.h" // kLocalDestination (header only)
#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"
#include "monitor/supervisormonitor.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMap>
#include <QProcess>
#include <QStandardPaths>
#include <QThread>

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace accel::cli {

using namespace accel::launcher;

namespace {

// py-spy is pinned in the project's Python environment (packaging/python-requirements.txt);
// outside it, the one on PATH.
QString pySpyProgram()
{
#ifdef ACCEL_PYTHON_ENV
    const QString pinned = QStringLiteral(ACCEL_PYTHON_ENV "/bin/py-spy");
    if (QFileInfo(pinned).isExecutable())
        return pinned;
#endif
    return QStandardPaths::findExecutable(QStringLiteral("py-spy"));
}

QString pySpyMissing()
{
    QString where;
#ifdef ACCEL_PYTHON_ENV
    where = QStringLiteral(ACCEL_PYTHON_ENV "/bin nor ");
#endif
    return QStringLiteral("py-spy is in neither %1PATH: install it into the project's Python environment "
                          "(packaging/install-deps.sh; pip install py-spy==0.4.3)")
        .arg(where);
}

// What stops py-spy from reading another process, said with the fix.
QString ptraceAdvice(const QString &pySpy)
{
    QString advice = QStringLiteral("py-spy may not attach (ptrace refused)");
    QFile scope(QStringLiteral("/proc/sys/kernel/yama/ptrace_scope"));
    if (scope.open(QIODevice::ReadOnly)) {
        const QString value = QString::fromLatin1(scope.readAll()).trimmed();
        if (value != QLatin1String("0"))
            advice += QStringLiteral(": kernel.yama.ptrace_scope is %1; allow it with `sudo sysctl "
                                     "kernel.yama.ptrace_scope=0`, or")
                          .arg(value);
        else
            advice += QStringLiteral(":");
    } else {
        advice += QStringLiteral(":");
    }
    return advice + QStringLiteral(" give py-spy the capability with `sudo setcap cap_sys_ptrace+ep %1` "
                                   "(in a container: --cap-add SYS_PTRACE)")
                        .arg(pySpy);
}

// The pid tracing `pid` (TracerPid in /proc/<pid>/status), 0 when none.
qint64 tracerOf(qint64 pid)
{
    QFile status(QStringLiteral("/proc/%1/status").arg(pid));
    if (!status.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : status.readAll().split('\n')) {
        if (line.startsWith("TracerPid:"))
            return line.mid(10).trimmed().toLongLong();
    }
    return 0;
}

QString executableName(qint64 pid)
{
    return QFileInfo(QFile::symLinkTarget(QStringLiteral("/proc/%1/exe").arg(pid))).fileName();
}

RankStack pythonStack(const QString &pySpy, qint64 pid, int timeoutMs)
{
    RankStack stack;
    stack.pid = pid;
    stack.kind = QStringLiteral("python");
    if (pySpy.isEmpty()) {
        stack.error = pySpyMissing();
        return stack;
    }
    QProcess process;
    process.start(pySpy,
                  {QStringLiteral("dump"), QStringLiteral("--pid"), QString::number(pid), QStringLiteral("--json")});
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished(1000);
        stack.error = QStringLiteral("%1 did not answer within %2 s").arg(pySpy).arg(timeoutMs / 1000.0);
        return stack;
    }
    const QString errors = QString::fromLocal8Bit(process.readAllStandardError()).trimmed();
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
        const QStringList lines = errors.split(QLatin1Char('\n'));
        auto refused = std::find_if(lines.begin(), lines.end(), [](const QString &line) {
            return line.contains(QLatin1String("ermission"), Qt::CaseInsensitive) ||
                   line.contains(QLatin1String("not permitted"), Qt::CaseInsensitive);
        });
        if (refused == lines.end())
            stack.error = QStringLiteral("py-spy failed: ") + lines.value(0);
        else if (const qint64 tracer = tracerOf(pid); tracer > 0)
            stack.error = QStringLiteral("py-spy cannot attach: the process is traced by pid %1 (a debugger or "
                                         "strace); detach it and ask again")
                              .arg(tracer);
        else
            stack.error = ptraceAdvice(pySpy) + QStringLiteral(" (py-spy: ") + refused->trimmed() + QLatin1Char(')');
        return stack;
    }
    auto parsed = parsePySpyDump(process.readAllStandardOutput(), pid);
    if (!parsed) {
        stack.error = QString::fromStdString(parsed.error().message);
        return stack;
    }
    return *parsed;
}

// Native frames get their source file and line from the objects' line tables (accel-worker and
// the runtime are built with -g1), through binutils' addr2line when it is installed; one call per
// object. Frames it cannot place keep what the worker said.
void addSourceLines(RankStack &stack)
{
    static const QString addr2line = QStandardPaths::findExecutable(QStringLiteral("addr2line"));
    if (addr2line.isEmpty())
        return;
    const QString program = QFile::symLinkTarget(QStringLiteral("/proc/%1/exe").arg(stack.pid));
    QMap<QString, QList<int>> byObject; // object path -> frame indexes
    for (int i = 0; i < stack.frames.size(); ++i) {
        const StackFrame &frame = stack.frames.at(i);
        if (frame.objectOffset.isEmpty() || frame.path.isEmpty())
            continue;
        // The program itself may be named as it was started (argv[0]): its /proc link is exact.
        const QString path = frame.path.startsWith(QLatin1Char('/')) ? frame.path : program;
        if (!path.isEmpty())
            byObject[path].append(i);
    }
    for (auto it = byObject.cbegin(); it != byObject.cend(); ++it) {
        QStringList arguments{QStringLiteral("-C"), QStringLiteral("-f"), QStringLiteral("-e"), it.key()};
        for (int index : it.value())
            arguments << stack.frames.at(index).objectOffset;
        QProcess process;
        process.start(addr2line, arguments);
        if (!process.waitForFinished(10000) || process.exitCode() != 0) {
            process.kill();
            process.waitForFinished(1000);
            continue;
        }
        const QStringList lines = QString::fromLocal8Bit(process.readAllStandardOutput()).split(QLatin1Char('\n'));
        for (int k = 0; k < it.value().size() && 2 * k + 1 < lines.size(); ++k) {
            StackFrame &frame = stack.frames[it.value().at(k)];
            const QString function = lines.at(2 * k), where = lines.at(2 * k + 1);
            if (frame.function.isEmpty() && function != QLatin1String("??"))
                frame.function = function;
            const int colon = where.lastIndexOf(QLatin1Char(':'));
            bool numeric = false;
            const int line = colon > 0 ? where.mid(colon + 1).section(QLatin1Char(' '), 0, 0).toInt(&numeric) : 0;
            if (numeric && line > 0 && !where.startsWith(QLatin1String("??"))) {
                frame.file = where.left(colon);
                frame.line = line;
            }
        }
    }
}

struct Capture {
    QList<RankStack> stacks;
    QString refusal; // the whole run could not be asked (exit code in `code`)
    int code = ExitOk;
};

Capture captureStacks(RunDirectory &run, int timeoutMs)
{
    Capture capture;
    const auto owner = rundir::runDirectoryOwner(QFile::encodeName(run.path()).toStdString());
    if (!owner) {
        capture.refusal = QString::fromStdString(owner.error().toString());
        capture.code = ExitFailure;
        return capture;
    }
    const std::string native = QFile::encodeName(run.path()).toStdString();
    const QString pySpy = pySpyProgram();
    struct Pending {
        int index;
        int rank;
    };
    QList<Pending> natives;
    QList<std::pair<int, qint64>> pythons; // index, pid
    for (const QJsonValue &value : run.manifest().value(QLatin1String(rundir::key::Ranks)).toArray()) {
        const QJsonObject entry = value.toObject();
        if (entry.value(QStringLiteral("result")).toString() != QLatin1String("running"))
            continue;
        RankStack stack;
        stack.rank = entry.value(QStringLiteral("rank")).toInt();
        rundir::ProcessClaim claim;
        claim.pid = static_cast<std::int64_t>(entry.value(QLatin1String(rundir::key::Pid)).toDouble());
        const double start = entry.value(QLatin1String(rundir::key::StartTime)).toDouble();
        claim.startTime = start > 0 && start < 1.8e19 ? static_cast<std::uint64_t>(start) : 0;
        stack.pid = claim.pid;
        auto proven = rundir::ProvenProcess::prove(claim, *owner);
        const QString program = proven ? executableName(claim.pid) : QString();
        if (!proven) {
            stack.kind = QStringLiteral("unknown");
            stack.error =
                QStringLiteral("not proven to belong to the run: ") + QString::fromStdString(proven.error().toString());
        } else if (program.startsWith(QLatin1String("python"))) {
            pythons.append({int(capture.stacks.size()), claim.pid});
        } else if (program == QLatin1String("accel-worker")) {
            stack.kind = QStringLiteral("native");
            const std::string file = rundir::nativeStackFile(stack.rank);
            QFile::remove(run.filePath(QString::fromStdString(file))); // an earlier answer
            if (proven->signal(rundir::nativeStackSignal))
                natives.append({int(capture.stacks.size()), stack.rank});
            else
                stack.error = QStringLiteral("the process exited");
        } else {
            stack.kind = QStringLiteral("unknown");
            stack.error = QStringLiteral("%1 is neither a Python interpreter nor accel-worker").arg(program);
        }
        capture.stacks.append(stack);
    }
    if (capture.stacks.isEmpty()) {
        capture.refusal = QStringLiteral("no rank of run %1 is running").arg(run.id());
        capture.code = ExitFailure;
        return capture;
    }
    // The native ranks write while py-spy reads the Python ones.
    for (const auto &[index, pid] : pythons) {
        const int rank = capture.stacks[index].rank;
        capture.stacks[index] = pythonStack(pySpy, pid, timeoutMs);
        capture.stacks[index].rank = rank;
    }
    const QDeadlineTimer deadline(timeoutMs);
    for (const Pending &pending : natives) {
        RankStack &stack = capture.stacks[pending.index];
        const std::string file = rundir::nativeStackFile(pending.rank);
        for (;;) {
            auto text = rundir::readRunFile(native, file, 1 << 20);
            if (text) {
                auto parsed = parseNativeStack(QByteArray::fromStdString(*text));
                const qint64 pid = stack.pid;
                if (parsed) {
                    stack = *parsed;
                    stack.pid = pid;
                    addSourceLines(stack);
                } else
                    stack.error = QString::fromStdString(parsed.error().message);
                stack.rank = pending.rank;
                stack.pid = pid;
                break;
            }
            if (deadline.hasExpired()) {
                stack.error = QStringLiteral("accel-worker wrote no %1 within %2 s (a worker older than the hang "
                                             "autopsy, or one stopped by a debugger)")
                                  .arg(QString::fromStdString(file))
                                  .arg(timeoutMs / 1000.0);
                break;
            }
            QThread::msleep(20);
        }
    }
    return capture;
}

} // namespace

void captureStacksOnHang(accel::monitor::SupervisorMonitor &monitor, const QString &runDirectory)
{
    // A separate `accel stack` process: py-spy and the wait for native answers never hold up the
    // supervisor's event loop.
    QObject::connect(monitor.hangDetector(), &accel::monitor::HangDetector::hangSuspected, &monitor, [runDirectory] {
        QProcess::startDetached(QCoreApplication::applicationFilePath(),
                                {QStringLiteral("stack"), runDirectory, QStringLiteral("--reason"),
                                 accel::monitor::eventName(accel::rundir::EventKind::HangSuspected),
                                 QStringLiteral("--quiet")});
    });
}

#ifdef ACCEL_CLI_HAVE_HOSTS
// `accel stack arguments` on `destination`, output and exit code passed through (cmd_hosts_common).
static int runStackOn(const QString &destination, const QStringList &arguments)
{
    return hosts::forwardToHost("accel stack", destination, QStringList{QStringLiteral("stack")} + arguments);
}
#endif

static int runStack(int argc, char **argv)
{
    ArgParser parser("accel stack", "Capture every rank's stack (py-spy for Python ranks, accel-worker's own handler "
                                    "for native ranks), grouped by identical stacks; kept in the run directory "
                                    "(stacks.json, stacks.txt).");
    parser.addPositional({"run", "run id (or unique prefix) or run directory"});
    parser.addValue("runs_root", "DIR", "folder holding run directories",
                    RunDirectory::defaultRunsRoot().toStdString());
    parser.addValue("timeout", "SECONDS", "wait this long for each rank's stack", "5");
    parser.addValue("reason", "TEXT", "why the stacks are taken, recorded with them", "on demand");
    parser.addFlag("quiet", "print nothing (the capture is still kept in the run directory)");
    parser.addFlag("json", "machine-readable output (" + schemaAndVersion(StackSchema, StackVersion) + ")");
    parser.addValue("host", "DEST",
                    "where the run's ranks run: an SSH destination (a ~/.ssh/config alias or [user@]host[:port]) "
                    "or \"local\" (default: the host run.json records, over SSH when it is another)");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel stack: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    bool numeric = false;
    const double timeoutS = QString::fromStdString(parser.valueOr("timeout", "5")).toDouble(&numeric);
    if (!numeric || !(timeoutS > 0) || timeoutS > 600) {
        std::fprintf(stderr, "accel stack: --timeout: expected seconds between 0 and 600, got '%s'\n",
                     parser.valueOr("timeout", "").c_str());
        return ExitBadInput;
    }
    const QString host = QString::fromStdString(parser.valueOr("host", "")).trimmed();
    if (parser.isSet("host") && host.isEmpty()) {
        std::fprintf(stderr, "accel stack: --host: expected an SSH destination or \"local\", got ''\n");
        return ExitBadInput;
    }
    const bool elsewhere = !host.isEmpty() && host != QLatin1String(kLocalDestination); // as isLocalDestination
    // What the capture on the run's host is asked for; there the run is local (--host local).
    QStringList forwarded{QStringLiteral("--host"),    QLatin1String(kLocalDestination),
                          QStringLiteral("--timeout"), QString::fromStdString(parser.valueOr("timeout", "5")),
                          QStringLiteral("--reason"),  QString::fromStdString(parser.valueOr("reason", "on demand"))};
    for (const char *flag : {"json", "quiet"}) {
        if (parser.isSet(flag))
            forwarded << QStringLiteral("--") + QLatin1String(flag);
    }
    const QString runArgument = QString::fromStdString(*parser.firstPositional("run"));
    const QString root =
        QString::fromStdString(parser.valueOr("runs_root", RunDirectory::defaultRunsRoot().toStdString()));
#ifdef ACCEL_CLI_HAVE_HOSTS
    // A host named by the user: the run is looked up there, as written.
    if (elsewhere) {
        if (parser.isSet("runs_root"))
            forwarded << QStringLiteral("--runs_root") << root;
        return runStackOn(host, QStringList{runArgument} + forwarded);
    }
#else
    if (elsewhere) {
        std::fprintf(stderr, "accel stack: --host %s: this accel was built without SSH hosts\n",
                     host.toLocal8Bit().constData());
        return ExitBadInput;
    }
#endif
    auto run = RunDirectory::open(runArgument, root);
    if (!run) {
        std::fprintf(stderr, "accel stack: %s\n", run.error().toString().c_str());
        return exitCodeFor(run.error());
    }
    const rundir::SupervisorRecord supervisor = run->supervisor();
    if (host.isEmpty() && rundir::checkSupervisor(supervisor) == rundir::SupervisorCheck::Unknown &&
        !supervisor.host.empty()) {
#ifdef ACCEL_CLI_HAVE_HOSTS
        // The run directory is seen here (a shared file system): the same path on the run's host.
        // Only for a run folder of this user: run.json is the folder owner's word (--host names a
        // host the user chose).
        const auto owner = rundir::runDirectoryOwner(QFile::encodeName(run->path()).toStdString());
        if (!owner || *owner != ::geteuid()) {
            std::fprintf(stderr,
                         "accel stack: run %s runs on host %s, and its folder is not yours: give --host to reach "
                         "that host\n",
                         run->id().toLocal8Bit().constData(), supervisor.host.c_str());
            return ExitBadInput;
        }
        return runStackOn(QString::fromStdString(supervisor.host), QStringList{run->path()} + forwarded);
#else
        std::fprintf(stderr,
                     "accel stack: run %s runs on host %s; run accel stack there (this accel was built without SSH "
                     "hosts)\n",
                     run->id().toLocal8Bit().constData(), supervisor.host.c_str());
        return ExitBadInput;
#endif
    }
    const QString state = run->effectiveState(false);
    if (runstate::isFinal(state)) {
        std::fprintf(stderr, "accel stack: run %s is %s: its ranks are gone%s\n", run->id().toLocal8Bit().constData(),
                     state.toLocal8Bit().constData(),
                     QFileInfo::exists(run->filePath(QLatin1String(rundir::file::StackAutopsyText)))
                         ? (QStringLiteral("; the last capture is ") +
                            run->filePath(QLatin1String(rundir::file::StackAutopsyText)))
                               .toLocal8Bit()
                               .constData()
                         : "");
        return ExitFailure;
    }
    Capture capture = captureStacks(*run, static_cast<int>(timeoutS * 1000));
    if (!capture.refusal.isEmpty()) {
        std::fprintf(stderr, "accel stack: %s\n", capture.refusal.toLocal8Bit().constData());
        return capture.code;
    }
    const QString reason = QString::fromStdString(parser.valueOr("reason", "on demand"));
    const QList<StackGroup> groups = groupStacks(capture.stacks);
    const QString text = stackReportText(groups, run->id(), reason);
    const QJsonObject document = stackReportJson(groups, capture.stacks, run->id(), reason);
    const QByteArray json = schemaJson(document);
    auto kept = run->writeFile(QLatin1String(rundir::file::StackAutopsy), json);
    if (kept)
        kept = run->writeFile(QLatin1String(rundir::file::StackAutopsyText), text.toUtf8());
    if (!kept)
        std::fprintf(stderr, "accel stack: not kept in the run directory: %s\n", kept.error().toString().c_str());
    QJsonArray summaries;
    for (const StackGroup &group : groups)
        summaries.append(rankList(group.ranks) + QLatin1Char(' ') + stackSummary(group.stack));
    (void)run->appendEvent(rundir::EventKind::StacksCaptured,
                           {{QStringLiteral("reason"), reason},
                            {QStringLiteral("groups"), summaries},
                            {QStringLiteral("file"), QLatin1String(rundir::file::StackAutopsy)}});
    if (parser.isSet("json"))
        std::printf("%s", json.constData());
    else if (!parser.isSet("quiet"))
        std::printf("%s", text.toLocal8Bit().constData());
    const bool any = std::any_of(capture.stacks.begin(), capture.stacks.end(),
                                 [](const RankStack &stack) { return stack.error.isEmpty(); });
    return any ? ExitOk : ExitFailure;
}

static Registrar registrar({"stack", "capture every rank's stack, grouped (the hang autopsy)", &runStack});

} // namespace accel::cli
