// `accel launch` under signals, limits and hostile input, through the real accel binary: a
// Ctrl-C that arrives before the handler exists and an inherited ignored SIGINT both end
// "stopped"; a run whose folder is removed under it stops; SIGKILL of the supervisor's whole
// process group leaves no rank's grandchild; run directories are private under umask 022 and
// run.json holds no secret from argv; --dry-run validates the job, quotes commands and names the
// config file; a script named "-x.py"; native launches started together each get their own
// rendezvous port; a rank's child that called setsid() ends with the run.
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <arpa/inet.h>
#include <csignal>
#include <memory>
#include <netinet/in.h>
#include <optional>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using accel::test::newMarker;
using accel::test::processesWithMarker;
using accel::test::runAccel;
using accel::test::waitFor;

namespace {

QString fakechild()
{
    return accel::test::binDir() + QStringLiteral("/fakechild");
}

QString accelProgram()
{
    return accel::test::binDir() + QStringLiteral("/accel");
}

// A build without the libtorch runtime (ACCEL_BUILD_TORCH=OFF, e.g. the ThreadSanitizer build) has
// no accel-worker: its native jobs cannot run.
bool haveWorker()
{
    return QFileInfo(accel::test::binDir() + QStringLiteral("/accel-worker")).isExecutable();
}

QJsonObject manifestOf(const QString &runDir)
{
    QFile file(runDir + QStringLiteral("/run.json"));
    return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
}

mode_t modeOf(const QString &path)
{
    struct stat info {};
    return ::lstat(QFile::encodeName(path).constData(), &info) == 0 ? (info.st_mode & 07777) : 0;
}

QString writeFile(const QString &path, const QByteArray &content)
{
    QFile file(path);
    if (file.open(QIODevice::WriteOnly))
        file.write(content);
    return path;
}

QStringList hangingLaunch(const QString &runDir, const QString &marker, int ranks = 1)
{
    return {QStringLiteral("launch"),          QStringLiteral("--cpu"),
            QStringLiteral("--num_processes"), QString::number(ranks),
            QStringLiteral("--run_dir"),       runDir,
            QStringLiteral("--grace_period"),  QStringLiteral("2"),
            QStringLiteral("--no_python"),     fakechild(),
            QStringLiteral("--marker"),        marker,
            QStringLiteral("--grandchild"),    QStringLiteral("--hang")};
}

} // namespace

namespace {

// Runs `script` (sh -c; $0, $1, ... are `arguments`) in a private user and mount namespace, where
// it may mount a tmpfs; nullopt where such namespaces are not available here.
std::optional<accel::test::ProcessResult> inMountNamespace(const QString &script, const QStringList &arguments,
                                                           int timeoutMs)
{
    const QString unshare = QStandardPaths::findExecutable(QStringLiteral("unshare"));
    const QStringList namespaces = {QStringLiteral("--user"), QStringLiteral("--map-root-user"),
                                    QStringLiteral("--mount")};
    QTemporaryDir probe;
    if (unshare.isEmpty() ||
        accel::test::runProgram(unshare,
                                namespaces + QStringList{QStringLiteral("sh"), QStringLiteral("-c"),
                                                         QStringLiteral("mount -t tmpfs tmpfs \"$0\""), probe.path()})
                .exitCode != 0)
        return std::nullopt;
    return accel::test::runProgram(
        unshare, namespaces + QStringList{QStringLiteral("sh"), QStringLiteral("-c"), script} + arguments, timeoutMs);
}

// A port free on 127.0.0.1 right now (the kernel's choice for port 0).
int freeLoopbackPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0;
    if (fd >= 0)
        ::close(fd);
    return ok ? ntohs(address.sin_port) : 0;
}

} // namespace

class tst_LaunchHardening : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(QFile::exists(fakechild()), "build the fakechild target");
        QVERIFY2(QFile::exists(accelProgram()), "build the accel target");
    }

    // Regression: a Ctrl-C in the first milliseconds killed the supervisor before its handler was
    // installed (state stayed "starting"). The SIGINT here is sent at once and held pending by an
    // inherited blocked mask, exactly as a signal that arrives before the handler exists.
    void ctrlCBeforeHandlerStopsCleanly()
    {
        QTemporaryDir dir;
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const QString marker = newMarker();
        QProcess launch;
        launch.setChildProcessModifier([] {
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, SIGINT);
            ::sigprocmask(SIG_BLOCK, &set, nullptr);
        });
        launch.start(accelProgram(), hangingLaunch(runDir, marker));
        QVERIFY(launch.waitForStarted());
        QVERIFY(::kill(static_cast<pid_t>(launch.processId()), SIGINT) == 0);
        QVERIFY(launch.waitForFinished(20000));
        QCOMPARE(launch.exitStatus(), QProcess::NormalExit);
        QCOMPARE(launch.exitCode(), 130);
        QCOMPARE(manifestOf(runDir).value(QStringLiteral("state")).toString(), QStringLiteral("stopped"));
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).isEmpty(); }, 5000));
    }

    // Regression: with SIGINT ignored by the parent (nohup, `cmd &` in a script) a stop request
    // was dropped.
    void inheritedIgnoredSigintStillStops()
    {
        QTemporaryDir dir;
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const QString marker = newMarker();
        QProcess launch;
        launch.setChildProcessModifier([] { ::signal(SIGINT, SIG_IGN); });
        launch.start(accelProgram(), hangingLaunch(runDir, marker));
        QVERIFY(launch.waitForStarted());
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).size() == 2; }, 15000));
        QVERIFY(::kill(static_cast<pid_t>(launch.processId()), SIGINT) == 0);
        QVERIFY(launch.waitForFinished(20000));
        QCOMPARE(launch.exitCode(), 130);
        QCOMPARE(manifestOf(runDir).value(QStringLiteral("state")).toString(), QStringLiteral("stopped"));
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).isEmpty(); }, 5000));
    }

    // Regression: SIGKILL to the supervisor's process group (`kill -9 %1`) also killed the reaper,
    // so the ranks' children survived (10 of 10 cycles). A child that left its rank's session
    // (setsid) is in no group the reaper kills and, with the supervisor dead, goes to init: the
    // reaper finds it by the run token in its environment (without that sweep both stay).
    void supervisorGroupKillLeavesNoGrandchild_data()
    {
        QTest::addColumn<QStringList>("childArguments");
        QTest::newRow("child in the rank's group")
            << QStringList{QStringLiteral("--grandchild"), QStringLiteral("--hang")};
        QTest::newRow("child in a session of its own")
            << QStringList{QStringLiteral("--setsid-grandchild"), QStringLiteral("--sleep"), QStringLiteral("600000")};
    }
    void supervisorGroupKillLeavesNoGrandchild()
    {
        QFETCH(QStringList, childArguments);
        QTemporaryDir dir;
        const QString marker = newMarker();
        QProcess launch;
        launch.setChildProcessModifier([] { ::setpgid(0, 0); }); // a job of its own, as a shell makes it
        launch.start(accelProgram(),
                     QStringList{QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                                 QStringLiteral("2"), QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("run")),
                                 QStringLiteral("--quiet"), QStringLiteral("--no_python"), fakechild(),
                                 QStringLiteral("--marker"), marker} +
                         childArguments);
        QVERIFY(launch.waitForStarted());
        // Two ranks and their children.
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).size() == 4; }, 15000));
        QVERIFY(::killpg(static_cast<pid_t>(launch.processId()), SIGKILL) == 0);
        QVERIFY(launch.waitForFinished(5000));
        const auto left = [&] {
            QStringList pids;
            for (qint64 pid : processesWithMarker(marker, QStringLiteral("fakechild")))
                pids << QString::number(pid);
            return pids;
        };
        QVERIFY2(waitFor([&] { return left().isEmpty(); }, 10000),
                 qPrintable(QStringLiteral("survived SIGKILL of the supervisor's process group: ") +
                            left().join(QLatin1Char(' '))));
    }

    // A rank's child that leaves the rank's session (its own setsid()) is out of reach of every
    // killpg; it used to outlive the run (a documented limit). The supervisor is now its subreaper:
    // when the rank ends, it is the supervisor's child, and the supervisor ends it with the attempt:
    // after a stop and after ranks that exit on their own.
    void childThatCalledSetsidEndsWithTheRun_data()
    {
        QTest::addColumn<bool>("stopped");
        QTest::newRow("stopped") << true;
        QTest::newRow("ranks exit") << false;
    }
    void childThatCalledSetsidEndsWithTheRun()
    {
        QFETCH(bool, stopped);
        QTemporaryDir dir;
        const QString marker = newMarker();
        const QString run = dir.filePath(QStringLiteral("run"));
        QProcess launch;
        launch.start(accelProgram(),
                     {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                      QStringLiteral("2"), QStringLiteral("--run_dir"), run, QStringLiteral("--quiet"),
                      QStringLiteral("--no_python"), fakechild(), QStringLiteral("--marker"), marker,
                      QStringLiteral("--setsid-grandchild"), QStringLiteral("--sleep"),
                      QString::fromLatin1(stopped ? "600000" : "1500")});
        QVERIFY(launch.waitForStarted());
        // Two ranks and their escaped children, each in a session of its own.
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).size() == 4; }, 15000));
        if (stopped) {
            const auto stop = runAccel({QStringLiteral("stop"), run});
            QVERIFY2(stop.exitCode == 0, qPrintable(stop.err));
        }
        QVERIFY(launch.waitForFinished(30000));
        QCOMPARE(manifestOf(run).value(QStringLiteral("state")).toString(),
                 QString::fromLatin1(stopped ? "stopped" : "succeeded"));
        const QStringList left = [&] {
            QStringList pids;
            for (qint64 pid : processesWithMarker(marker, QStringLiteral("fakechild")))
                pids << QString::number(pid);
            return pids;
        }();
        QVERIFY2(left.isEmpty(), qPrintable(QStringLiteral("left running: ") + left.join(QLatin1Char(' '))));
        QFile events(run + QStringLiteral("/events.jsonl"));
        QVERIFY(events.open(QIODevice::ReadOnly));
        QVERIFY(events.readAll().contains("\"escaped_processes_killed\""));
    }

    // A run whose folder is removed under it (rm -rf of the runs folder, a cleanup script) could
    // no longer be followed or stopped by anyone: `accel stop` answers "no run". Its supervisor
    // now notices within a second, stops the ranks and their children, and says why.
    void removedRunFolderStopsTheRun()
    {
        QTemporaryDir dir;
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const QString marker = newMarker();
        QProcess launch;
        launch.start(accelProgram(), hangingLaunch(runDir, marker, 2));
        QVERIFY(launch.waitForStarted());
        // Two ranks, each with a grandchild.
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).size() == 4; }, 15000));
        // As `rm -rf` would, again while the run writes a new file into the folder being emptied.
        QVERIFY(waitFor(
            [&] {
                QDir(runDir).removeRecursively();
                return !QFileInfo::exists(runDir);
            },
            5000));
        QVERIFY2(launch.waitForFinished(20000), "the launch went on after its run folder was removed");
        QCOMPARE(launch.exitCode(), 130); // stopped
        const QString err = QString::fromUtf8(launch.readAllStandardError());
        QVERIFY2(err.contains(QStringLiteral("the run folder %1 was removed").arg(runDir)), qPrintable(err));
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).isEmpty(); }, 5000));
        QVERIFY(!QFileInfo::exists(runDir)); // nothing recreated
    }

    // Regression: on a full disk the rank logs were silently truncated, the launch reported
    // success and run.json stayed "running". A real full file system: a 256 KiB tmpfs mounted in a
    // private user and mount namespace (skipped where those are not available).
    void fullDiskFailsTheRunWithFinalState()
    {
        QTemporaryDir dir;
        // Inside: mount, launch a rank that prints ~1 MB, then show the final run.json (the tmpfs
        // goes away with the namespace).
        const QString script = QStringLiteral(
            "mount -t tmpfs -o size=256k tmpfs \"$1\" || exit 90; "
            "\"$0\" launch --cpu --num_processes 1 --no_mirror --system_sample_hz 0 --run_dir \"$1/run\" "
            "--no_python \"$2\" --lines 100000 --hang 2>/dev/null; code=$?; cat \"$1/run/run.json\"; exit $code");
        const auto ran = inMountNamespace(script, {accelProgram(), dir.path(), fakechild()}, 60000);
        if (!ran)
            QSKIP("cannot mount a tmpfs in a user namespace here; tst_runsupervisor covers a file-size limit");
        const auto &result = *ran;
        QCOMPARE(result.exitCode, 1);
        const QJsonObject manifest = QJsonDocument::fromJson(result.out.toUtf8()).object();
        QCOMPARE(manifest.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        const QString detail = manifest.value(QStringLiteral("states"))
                                   .toArray()
                                   .last()
                                   .toObject()
                                   .value(QStringLiteral("detail"))
                                   .toString();
        QVERIFY2(detail.contains(QStringLiteral("rank 0 log")) && detail.contains(QStringLiteral("No space left")),
                 qPrintable(detail));
    }

    // Regression (issue 33, item 5): a run folder under a folder that other users may write
    // without the sticky bit could be renamed away and replaced by theirs; launch refuses it.
    void runFolderOthersCouldSwapIsRefused()
    {
        QTemporaryDir dir;
        const QString shared = dir.filePath(QStringLiteral("shared"));
        QVERIFY(QDir().mkpath(shared));
        QCOMPARE(::chmod(QFile::encodeName(shared).constData(), 0777), 0);
        for (const QStringList &how : {QStringList(), QStringList{QStringLiteral("--detach")}}) {
            const auto result = accel::test::runProgram(
                accelProgram(),
                QStringList{QStringLiteral("launch")} + how +
                    QStringList{QStringLiteral("--cpu"), QStringLiteral("--num_processes"), QStringLiteral("1"),
                                QStringLiteral("--run_dir"), shared + QStringLiteral("/run"),
                                QStringLiteral("--no_python"), fakechild(), QStringLiteral("--print")},
                30000);
            QCOMPARE(result.exitCode, 2);
            QVERIFY2(result.err.contains(shared +
                                         QStringLiteral(" may be written by other users (mode 0777, no sticky bit)")),
                     qPrintable(result.err));
            QVERIFY(!QFile::exists(shared + QStringLiteral("/run"))); // nothing created there
        }
    }

    // Regression (issue 33, item 7): a full disk during a DDP checkpoint save aborted rank 0
    // (libtorch's archive writer threw from its destructor while writing optimizer.bin) and
    // run.json stayed "running" in 2 of 3 runs. A real full tmpfs (in a user and mount namespace):
    // the free space left holds the first checkpoint and the second's model, not its optimizer.
    void checkpointSaveOnAFullDiskFailsTheRun()
    {
        if (!haveWorker())
            QSKIP("this build has no libtorch runtime (accel-worker): native jobs cannot run");
        QTemporaryDir dir;
        QByteArray corpus;
        for (int i = 0; i < 400; ++i)
            corpus += "the cat sat on the mat. ";
        writeFile(dir.filePath(QStringLiteral("corpus.txt")), corpus);
        QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("mnt"))));
        // Checkpoints of this model: model.safetensors 89 KB, optimizer.bin 201 KB.
        const QString script = QStringLiteral(
            "mount -t tmpfs -o size=4m tmpfs \"$1\" || exit 90; "
            "printf 'recipe: gpt\\noutput_dir: %s/out\\nmodel: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32}\\n"
            "data: {corpus: %s}\\ntraining: {max_steps: 10, batch_size: 4, checkpoint_every: 5, log_every: 5}\\n' "
            "\"$1\" \"$2\" > \"$1/job.yaml\"; "
            "avail=$(df --output=avail -B1 \"$1\" | tail -1); fallocate -l $((avail - 560000)) \"$1/filler\" || exit "
            "91; "
            "\"$0\" launch --cpu --num_processes 2 --no_mirror --system_sample_hz 0 --run_dir \"$1/run\" "
            "--job \"$1/job.yaml\" 2>/dev/null; code=$?; cat \"$1/run/run.json\"; echo; "
            "cat \"$1/run/logs/rank0.log\" >&2; ls \"$1/out/checkpoints\" >&2; exit $code");
        const auto ran = inMountNamespace(
            script, {accelProgram(), dir.filePath(QStringLiteral("mnt")), dir.filePath(QStringLiteral("corpus.txt"))},
            120000);
        if (!ran)
            QSKIP("cannot mount a tmpfs in a user namespace here");
        const auto &result = *ran;
        QCOMPARE(result.exitCode, 1);
        const QJsonObject manifest = QJsonDocument::fromJson(result.out.toUtf8()).object();
        QCOMPARE(manifest.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        // Rank 0 ends by its own error, or by the supervisor's SIGTERM when a rank log could not be
        // written on the full disk first; never by an abort (signal 6, before).
        const QString ended = manifest.value(QStringLiteral("ranks"))
                                  .toArray()
                                  .first()
                                  .toObject()
                                  .value(QStringLiteral("result"))
                                  .toString();
        QVERIFY2(ended == QLatin1String("exit 1") || ended == QLatin1String("signal 15 (SIGTERM)"),
                 qPrintable(ended + QLatin1Char('\n') + result.err));
        const QString detail = manifest.value(QStringLiteral("states"))
                                   .toArray()
                                   .last()
                                   .toObject()
                                   .value(QStringLiteral("detail"))
                                   .toString();
        QVERIFY2(
            result.err.contains(QStringLiteral("checkpoint_1.partial/optimizer.bin: write failed: No space left")) ||
                detail.contains(QStringLiteral("No space left")),
            qPrintable(detail + QLatin1Char('\n') + result.err));
        QVERIFY2(result.err.contains(QStringLiteral("checkpoint_0\n")), qPrintable(result.err)); // kept whole
    }

    // Regression: run directories, logs and run.json were world-readable under umask 022, and
    // run.json recorded argv verbatim (an --aws_secret_access_key landed in it).
    void runDirectoryIsPrivateAndHoldsNoSecret()
    {
        QTemporaryDir dir;
        const QString runDir = dir.filePath(QStringLiteral("run"));
        QProcess launch;
        launch.setChildProcessModifier([] { ::umask(022); });
        launch.start(accelProgram(),
                     {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                      QStringLiteral("1"), QStringLiteral("--run_dir"), runDir, QStringLiteral("--no_python"),
                      fakechild(), QStringLiteral("--print"), QStringLiteral("--aws_secret_access_key=SeCrEt123"),
                      QStringLiteral("--marker"), QStringLiteral("HF_TOKEN=TokEn456"), QStringLiteral("--marker"),
                      QStringLiteral("Bearer AbCdEf0123456789"), QStringLiteral("--marker"),
                      QStringLiteral("postgres://u:PaSsWoRd99@db:5432/x"), QStringLiteral("--metrics"),
                      QStringLiteral("2")});
        QVERIFY(launch.waitForFinished(30000));
        QVERIFY2(launch.exitCode() == 0, launch.readAllStandardError().constData());
        for (const char *folder : {"", "/logs", "/metrics", "/checkpoints"})
            QCOMPARE(modeOf(runDir + QLatin1String(folder)), mode_t(0700));
        // What the supervisor writes is 0600; what ranks write keeps the user's umask, inside 0700 folders.
        for (const char *file : {"/run.json", "/events.jsonl", "/logs/rank0.log"})
            QCOMPARE(modeOf(runDir + QLatin1String(file)), mode_t(0600));
        if (QFile::exists(runDir + QStringLiteral("/metrics/system.jsonl")))
            QCOMPARE(modeOf(runDir + QStringLiteral("/metrics/system.jsonl")), mode_t(0600));
        QFile manifest(runDir + QStringLiteral("/run.json"));
        QVERIFY(manifest.open(QIODevice::ReadOnly));
        const QByteArray text = manifest.readAll();
        QVERIFY(!text.contains("SeCrEt123"));
        QVERIFY(!text.contains("TokEn456"));
        // Regression (hardening round 3): redaction went by the flag's name only, so an Authorization
        // header's credential and a URL's password under innocent names were recorded.
        QVERIFY(!text.contains("AbCdEf0123456789"));
        QVERIFY(!text.contains("PaSsWoRd99"));
        const QJsonObject object = QJsonDocument::fromJson(text).object();
        QVERIFY(object.value(QStringLiteral("argv"))
                    .toArray()
                    .contains(QStringLiteral("--aws_secret_access_key=<redacted>")));
        const QJsonArray command =
            object.value(QStringLiteral("plan")).toArray().at(0).toObject().value(QStringLiteral("command")).toArray();
        QVERIFY(command.contains(QStringLiteral("HF_TOKEN=<redacted>")));
        QVERIFY(command.contains(QStringLiteral("Bearer <redacted>")));
        QVERIFY(command.contains(QStringLiteral("postgres://u:<redacted>@db:5432/x")));
    }

    // Regression: two launches started together both saw the default port 29500 free and chose it
    // (a rank loads for about a second before it listens); a rank of one job then joined the
    // other's store and both failed with a gloo size mismatch. The launcher now holds the port on
    // loopback from its choice until rank 0's store takes the socket over (ACCEL_STORE_LISTEN_FD).
    void nativeLaunchesStartedTogetherEachGetTheirPort()
    {
        if (!haveWorker())
            QSKIP("this build has no libtorch runtime (accel-worker): native jobs cannot run");
        QTemporaryDir dir;
        const QString job = writeFile(dir.filePath(QStringLiteral("selftest.yaml")), "recipe: selftest\n");
        const int launches = 3;
        std::vector<std::unique_ptr<QProcess>> processes;
        for (int i = 0; i < launches; ++i) {
            auto process = std::make_unique<QProcess>();
            process->start(accelProgram(),
                           {QStringLiteral("launch"), QStringLiteral("--num_processes"), QStringLiteral("2"),
                            QStringLiteral("--quiet"), QStringLiteral("--run_dir"),
                            dir.filePath(QStringLiteral("run%1").arg(i)), QStringLiteral("--job"), job});
            processes.push_back(std::move(process));
        }
        QSet<int> ports;
        for (int i = 0; i < launches; ++i) {
            QProcess &process = *processes[size_t(i)];
            QVERIFY(process.waitForFinished(180000));
            QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0,
                     qPrintable(QString::number(i) + ": " + process.readAllStandardError()));
            const QJsonObject manifest = manifestOf(dir.filePath(QStringLiteral("run%1").arg(i)));
            QCOMPARE(manifest.value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"));
            ports.insert(manifest.value(QStringLiteral("settings"))
                             .toObject()
                             .value(QStringLiteral("main_process_port"))
                             .toInt());
        }
        QCOMPARE(ports.size(), launches);
        QVERIFY(!ports.contains(0));
    }

    // Regression (issue 33, item 12): two Python launches on one port both found it free while
    // their ranks loaded torch; a rank of one joined the other's process group (3 of 3 rounds).
    // The port is held from the launcher's choice on and a Python rank 0 hosts its store on that
    // socket (the rendezvous hook), so the second launch is refused and no group mixes runs.
    void pythonLaunchesOnOnePortNeverMeet()
    {
        const QString python = qEnvironmentVariable("ACCEL_PYTHON");
        if (python.isEmpty() || !QFileInfo(python).isExecutable())
            QSKIP("the project's Python environment is missing (run packaging/install-deps.sh)");
        const QString script =
            QDir(accel::test::sourceDir()).filePath(QStringLiteral("tests/launcher/tagged_group.py"));
        const int port = freeLoopbackPort();
        QVERIFY(port > 0);
        QTemporaryDir dir;
        std::vector<std::unique_ptr<QProcess>> launches;
        for (int i = 1; i <= 2; ++i) {
            auto launch = std::make_unique<QProcess>();
            QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
            environment.insert(QStringLiteral("PYTHON_EXEC"), python);
            launch->setProcessEnvironment(environment);
            launch->start(accelProgram(),
                          {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                           QStringLiteral("2"), QStringLiteral("--main_process_port"), QString::number(port),
                           QStringLiteral("--no_mirror"), QStringLiteral("--run_dir"),
                           dir.filePath(QStringLiteral("run%1").arg(i)), script, QString::number(i)});
            launches.push_back(std::move(launch));
        }
        int succeeded = 0, refused = 0;
        for (auto &launch : launches) {
            QVERIFY(launch->waitForFinished(120000));
            const QString err = QString::fromLocal8Bit(launch->readAllStandardError());
            if (launch->exitCode() == 0) {
                ++succeeded;
            } else {
                QVERIFY2(launch->exitCode() == 2 &&
                             err.contains(QStringLiteral("main_process_port: port %1 is in use").arg(port)),
                         qPrintable(err));
                ++refused;
            }
        }
        QCOMPARE(succeeded, 1);
        QCOMPARE(refused, 1);
        // The run that ran hosted its store on the held socket: the hook is on rank 0's path only.
        const QString ran = QFileInfo::exists(dir.filePath(QStringLiteral("run1/run.json"))) ? QStringLiteral("run1")
                                                                                             : QStringLiteral("run2");
        QVERIFY(QFileInfo::exists(dir.filePath(ran + QStringLiteral("/rendezvous/sitecustomize.py"))));
    }

    // Regression: `accel launch --job X --dry-run` accepted any job (exit 0 for `recipe: nonsense`).
    void dryRunValidatesTheJob()
    {
        QTemporaryDir dir;
        const QString nonsense = writeFile(dir.filePath(QStringLiteral("nonsense.yaml")), "recipe: nonsense\n");
        auto result = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--job"), nonsense,
                                QStringLiteral("--dry-run")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(nonsense) && result.err.contains(QStringLiteral("recipe")),
                 qPrintable(result.err));
        const QString badField =
            writeFile(dir.filePath(QStringLiteral("gpt.yaml")), "recipe: gpt\nmodel:\n  n_layer: 0\n");
        result = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--job"), badField,
                           QStringLiteral("--dry-run")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(badField) && result.err.contains(QStringLiteral("model.n_layer")),
                 qPrintable(result.err));
        const QString good = writeFile(dir.filePath(QStringLiteral("good.yaml")), "recipe: selftest\n");
        result = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--job"), good,
                           QStringLiteral("--dry-run")});
        if (!haveWorker())
            QSKIP("this build has no libtorch runtime (accel-worker): a valid job cannot be launched");
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
    }

    // Regression (hardening round 3): job files were not guarded like config files: an alias bomb
    // of 644 bytes ran for 30 s, one of 819 bytes took 2.2 GB and then trained. This one expands to
    // 1,000,000 values (the old reader took it in about a second); the guard stops at 100,000.
    void jobAliasBombIsRefused()
    {
        QTemporaryDir dir;
        const QString bomb =
            writeFile(dir.filePath(QStringLiteral("bomb.yaml")), accel::test::yamlAliasBomb(6, "recipe: selftest\n"));
        const auto result = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--job"), bomb,
                                      QStringLiteral("--dry-run")},
                                     30000);
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(bomb + QStringLiteral(": line ")) &&
                     result.err.contains(QStringLiteral(": more than 100000 values once YAML aliases (*name) are "
                                                        "expanded (the limit for a job file)")),
                 qPrintable(result.err));
    }

    // Regression: in a build without the libtorch runtime `accel launch --job` checked nothing (its
    // job reader was built only with the runtime: `recipe: nonsense` passed --dry-run) and a valid
    // job was launched with ranks that could never start. Now the job is checked in every build,
    // and without accel-worker the launch fails before anything starts, saying why.
    void jobWithoutTheRuntimeIsCheckedAndRefused()
    {
        QTemporaryDir dir;
        const QStringList noWorker{QStringLiteral("ACCEL_WORKER_PROGRAM=") + dir.filePath(QStringLiteral("none"))};
        const QString nonsense = writeFile(dir.filePath(QStringLiteral("nonsense.yaml")), "recipe: nonsense\n");
        auto result = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--job"), nonsense,
                                QStringLiteral("--dry-run")},
                               60000, {}, noWorker);
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(nonsense) && result.err.contains(QStringLiteral("recipe")),
                 qPrintable(result.err));
        const QString good = writeFile(dir.filePath(QStringLiteral("good.yaml")), "recipe: selftest\n");
        const QString runDir = dir.filePath(QStringLiteral("run"));
        for (const QString &mode : {QStringLiteral("--dry-run"), QStringLiteral("--quiet")}) {
            result = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--run_dir"), runDir,
                               QStringLiteral("--job"), good, mode},
                              60000, {}, noWorker);
            QVERIFY2(result.exitCode == 1, qPrintable(mode + QStringLiteral(": ") + result.err));
            QVERIFY2(result.err.contains(dir.filePath(QStringLiteral("none"))) &&
                         result.err.contains(QStringLiteral("no libtorch runtime")),
                     qPrintable(result.err));
            QVERIFY(!QFileInfo::exists(runDir));
        }
    }

    // Regression: --dry-run printed commands unquoted, so they could not be pasted into a shell.
    void dryRunQuotesCommands()
    {
        const auto result =
            runAccel({QStringLiteral("launch"), QStringLiteral("--dry-run"), QStringLiteral("--cpu"),
                      QStringLiteral("--num_processes"), QStringLiteral("1"), QStringLiteral("--no_python"),
                      QStringLiteral("/bin/echo"), QStringLiteral("a b"), QStringLiteral("it's")});
        QCOMPARE(result.exitCode, 0);
        QVERIFY2(result.out.contains(QStringLiteral("/bin/echo 'a b' 'it'\\''s'")), qPrintable(result.out));
    }

    // Regression: a script named "-x.py" was handed to Python as an option.
    void scriptStartingWithDashRuns()
    {
        const QString python = QStandardPaths::findExecutable(QStringLiteral("python3"));
        if (python.isEmpty())
            QSKIP("python3 is not installed");
        QTemporaryDir dir;
        writeFile(dir.filePath(QStringLiteral("-x.py")), "print('dash script ran')\n");
        const QString runDir = dir.filePath(QStringLiteral("run"));
        QProcess launch;
        launch.setWorkingDirectory(dir.path());
        launch.start(accelProgram(),
                     {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                      QStringLiteral("1"), QStringLiteral("--run_dir"), runDir, QStringLiteral("--"),
                      QStringLiteral("-x.py")});
        QVERIFY(launch.waitForFinished(30000));
        QVERIFY2(launch.exitCode() == 0, launch.readAllStandardError().constData());
        QFile log(runDir + QStringLiteral("/logs/rank0.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QVERIFY(log.readAll().contains("dash script ran"));
    }

    // Regression: errors about values from a config file did not name the file.
    void configValueErrorNamesTheConfigFile()
    {
        QTemporaryDir dir;
        const QString config = writeFile(dir.filePath(QStringLiteral("two-nodes.yaml")),
                                         "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\n"
                                         "num_machines: 2\nnum_processes: 2\nmachine_rank: 0\nuse_cpu: true\n");
        const auto result =
            runAccel({QStringLiteral("launch"), QStringLiteral("--config_file"), config, QStringLiteral("--dry-run"),
                      QStringLiteral("--no_python"), QStringLiteral("/bin/true")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(config), qPrintable(result.err));
    }
};

QTEST_GUILESS_MAIN(tst_LaunchHardening)
#include "tst_launchhardening.moc"
