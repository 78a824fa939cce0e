// `accel launch`, `accel runs`, `accel stop` and `accel tail` end to end, through the real accel
// binary: a standard-library Python script with 2 ranks, the supervisor killed -9, a busy port,
// failure exit codes and the summary, --detach with runs/tail/stop, and a config file.
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUuid>
#include <QtTest>

#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using accel::test::processesWithMarker;
using accel::test::runAccel;

namespace {

QString fakechild()
{
    return accel::test::binDir() + QStringLiteral("/fakechild");
}

QString newMarker()
{
    return QStringLiteral("marker-") + QUuid::createUuid().toString(QUuid::Id128);
}

bool waitFor(const std::function<bool()> &condition, int timeoutMs)
{
    QElapsedTimer clock;
    clock.start();
    while (!condition()) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QThread::msleep(10);
    }
    return true;
}

// A TCP port the kernel reports free right now.
QString freePort()
{
    const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    socklen_t length = sizeof(address);
    const bool bound = ::bind(probe, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0 &&
                       ::getsockname(probe, reinterpret_cast<sockaddr *>(&address), &length) == 0;
    ::close(probe);
    return bound ? QString::number(ntohs(address.sin_port)) : QString();
}

QJsonObject parseObject(const QString &text)
{
    return QJsonDocument::fromJson(text.toUtf8()).object();
}

const char *kRendezvousScript = R"PY(
import json, os, socket, sys, time
out = sys.argv[1]
rank = int(os.environ["RANK"])
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "ACCELERATE_USE_CPU", "ACCELERATE_MIXED_PRECISION", "ACCEL_RUN_DIR", "ACCEL_METRICS_FILE",
        "TORCHELASTIC_USE_AGENT_STORE", "OMP_NUM_THREADS"]
seen = {k: os.environ.get(k) for k in keys}
seen["argv"] = sys.argv[1:]
seen["unbuffered"] = "-u" in getattr(sys, "orig_argv", ["-u"])
# A miniature rendezvous on MASTER_ADDR:MASTER_PORT, as rank 0 hosting the TCPStore would: on the
# listening socket accel launch holds on that port and hands to rank 0 (the rendezvous hook gives
# it to torch's store; this script has no torch, so it finds the socket among its descriptors).
address = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
def held_socket():
    for name in os.listdir("/proc/self/fd"):
        try:
            candidate = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue
        try:
            if candidate.getsockname()[1] == address[1]:
                return candidate
        except (OSError, IndexError, TypeError):
            pass
        candidate.close()
    return None
if rank == 0:
    server = held_socket()
    seen["held"] = server is not None
    if server is None:
        server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(address); server.listen(4)
    connection, _ = server.accept(); seen["peer"] = connection.recv(16).decode()
else:
    for attempt in range(200):
        try:
            client = socket.create_connection(address); client.sendall(b"rank%d" % rank); break
        except OSError:
            time.sleep(0.05)
with open(os.environ["ACCEL_METRICS_FILE"], "a") as metrics:
    metrics.write(json.dumps({"v": 1, "time": time.time(), "rank": rank, "step": 1, "loss": 1.5}) + "\n")
with open(os.path.join(out, "rank%d.json" % rank), "w") as f:
    json.dump(seen, f)
print("hello from rank", rank, flush=True)
)PY";

} // namespace

class tst_LaunchCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(QFile::exists(accel::test::binDir() + QStringLiteral("/accel")));
        QVERIFY(QFile::exists(fakechild()));
    }

    void helpAndBadInput()
    {
        const auto help = runAccel({QStringLiteral("launch"), QStringLiteral("--help")});
        QCOMPARE(help.exitCode, 0);
        QVERIFY(help.out.contains(QStringLiteral("--num_processes")));
        const auto bad = runAccel(
            {QStringLiteral("launch"), QStringLiteral("--num-procesess"), QStringLiteral("2"), QStringLiteral("x.py")});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.startsWith(QStringLiteral("accel launch: ")) &&
                     bad.err.contains(QStringLiteral("num_processes")),
                 qPrintable(bad.err));
        const auto both = runAccel(
            {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--use_fsdp"), QStringLiteral("x.py")});
        QCOMPARE(both.exitCode, 2);
        const auto none = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu")});
        QCOMPARE(none.exitCode, 2);
    }

    void dryRunJsonPrintsEveryRank()
    {
        const auto result = runAccel({QStringLiteral("launch"), QStringLiteral("--dry-run"), QStringLiteral("--json"),
                                      QStringLiteral("--cpu"), QStringLiteral("--num-processes"), QStringLiteral("3"),
                                      QStringLiteral("--main_process_port"), QStringLiteral("0"),
                                      QStringLiteral("train.py"), QStringLiteral("--epochs"), QStringLiteral("2")});
        QCOMPARE(result.exitCode, 0);
        QVERIFY2(result.out.startsWith(QStringLiteral("{\n    \"schema\": \"accel.launch-plan\",\n    \"version\": 1")),
                 qPrintable(result.out));
        const QJsonObject plan = parseObject(result.out);
        const QJsonArray ranks = plan.value(QStringLiteral("ranks")).toArray();
        QCOMPARE(ranks.size(), 3);
        const QJsonObject rank2 = ranks.at(2).toObject();
        QCOMPARE(rank2.value(QStringLiteral("command")).toArray(),
                 (QJsonArray{QStringLiteral("python3"), QStringLiteral("-u"), QStringLiteral("train.py"),
                             QStringLiteral("--epochs"), QStringLiteral("2")}));
        const QJsonObject env = rank2.value(QStringLiteral("env")).toObject();
        QCOMPARE(env.value(QStringLiteral("RANK")).toString(), QStringLiteral("2"));
        QCOMPARE(env.value(QStringLiteral("WORLD_SIZE")).toString(), QStringLiteral("3"));
        QVERIFY(env.value(QStringLiteral("MASTER_PORT")).toString().toInt() > 0);
        QVERIFY(!plan.value(QStringLiteral("notes")).toArray().isEmpty());
    }

    void pythonScriptRunsWithTwoRanks()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("python3")).isEmpty())
            QSKIP("python3 is not installed");
        QTemporaryDir dir;
        QFile script(dir.filePath(QStringLiteral("train.py")));
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write(kRendezvousScript);
        script.close();
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const auto result =
            runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                      QStringLiteral("2"), QStringLiteral("--main_process_port"), QStringLiteral("0"),
                      QStringLiteral("--run-dir"), runDir, script.fileName(), dir.path()},
                     60000);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QVERIFY(result.out.contains(QStringLiteral("[rank 0] hello from rank 0")));
        QVERIFY(result.out.contains(QStringLiteral("[rank 1] hello from rank 1")));
        for (int rank = 0; rank < 2; ++rank) {
            QFile file(dir.filePath(QStringLiteral("rank%1.json").arg(rank)));
            QVERIFY(file.open(QIODevice::ReadOnly));
            const QJsonObject seen = QJsonDocument::fromJson(file.readAll()).object();
            QCOMPARE(seen.value(QStringLiteral("RANK")).toString(), QString::number(rank));
            QCOMPARE(seen.value(QStringLiteral("LOCAL_RANK")).toString(), QString::number(rank));
            QCOMPARE(seen.value(QStringLiteral("WORLD_SIZE")).toString(), QStringLiteral("2"));
            QCOMPARE(seen.value(QStringLiteral("LOCAL_WORLD_SIZE")).toString(), QStringLiteral("2"));
            QCOMPARE(seen.value(QStringLiteral("MASTER_ADDR")).toString(), QStringLiteral("127.0.0.1"));
            QCOMPARE(seen.value(QStringLiteral("ACCELERATE_USE_CPU")).toString(), QStringLiteral("True"));
            QCOMPARE(seen.value(QStringLiteral("ACCELERATE_MIXED_PRECISION")).toString(), QStringLiteral("no"));
            QCOMPARE(seen.value(QStringLiteral("TORCHELASTIC_USE_AGENT_STORE")).toString(), QStringLiteral("False"));
            QCOMPARE(seen.value(QStringLiteral("ACCEL_RUN_DIR")).toString(), runDir);
            QCOMPARE(seen.value(QStringLiteral("ACCEL_METRICS_FILE")).toString(),
                     runDir + QStringLiteral("/metrics/rank%1.jsonl").arg(rank));
            QCOMPARE(seen.value(QStringLiteral("argv")).toArray(), QJsonArray{dir.path()});
            QVERIFY(seen.value(QStringLiteral("unbuffered")).toBool());
            if (rank == 0) {
                QCOMPARE(seen.value(QStringLiteral("peer")).toString(), QStringLiteral("rank1"));
                QVERIFY(seen.value(QStringLiteral("held")).toBool()); // the port was held for it
            }
            QVERIFY(QFile::exists(runDir + QStringLiteral("/metrics/rank%1.jsonl").arg(rank)));
        }
        QFile manifest(runDir + QStringLiteral("/run.json"));
        QVERIFY(manifest.open(QIODevice::ReadOnly));
        const QJsonObject run = QJsonDocument::fromJson(manifest.readAll()).object();
        QCOMPARE(run.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.run"));
        QCOMPARE(run.value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"));
        QCOMPARE(run.value(QStringLiteral("plan")).toArray().size(), 2);
        QFile log(runDir + QStringLiteral("/logs/rank1.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QVERIFY(log.readAll().contains("hello from rank 1"));
    }

    void failingRankSetsExitCodeAndPrintsSummary()
    {
        QTemporaryDir dir;
        const auto result = runAccel(
            {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"), QStringLiteral("2"),
             QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("run")), QStringLiteral("--no_python"),
             fakechild(), QStringLiteral("--print"), QStringLiteral("last words"), QStringLiteral("--if-rank"),
             QStringLiteral("1"), QStringLiteral("--exit"), QStringLiteral("3"), QStringLiteral("--hang")});
        QCOMPARE(result.exitCode, 3);
        QVERIFY2(result.err.contains(QStringLiteral("exit 3")) && result.err.contains(QStringLiteral("| last words")) &&
                     result.err.contains(QStringLiteral("first failure: rank 1")),
                 qPrintable(result.err));
        const auto quiet =
            runAccel({QStringLiteral("launch"), QStringLiteral("-q"), QStringLiteral("--cpu"),
                      QStringLiteral("--no_python"), fakechild(), QStringLiteral("--exit"), QStringLiteral("4")});
        QCOMPARE(quiet.exitCode, 1);
    }

    void supervisorKilledLeavesNoRank()
    {
        QTemporaryDir dir;
        const QString marker = newMarker();
        QProcess accel;
        accel.setProgram(accel::test::binDir() + QStringLiteral("/accel"));
        accel.setArguments({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                            QStringLiteral("2"), QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("run")),
                            QStringLiteral("--no_python"), fakechild(), QStringLiteral("--marker"), marker,
                            QStringLiteral("--ignore-term"), QStringLiteral("--grandchild"), QStringLiteral("--hang")});
        accel.start();
        QVERIFY(accel.waitForStarted());
        // 2 ranks + 2 grandchildren.
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).size() == 4; }, 10000));
        ::kill(static_cast<pid_t>(accel.processId()), SIGKILL);
        QVERIFY(accel.waitForFinished(5000));
        QVERIFY2(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 2000),
                 "a rank or its child survived the supervisor");
        // The run is reported lost, not running.
        const auto runs =
            runAccel({QStringLiteral("runs"), QStringLiteral("--json"), QStringLiteral("--runs_root"), dir.path()});
        const QJsonArray list = parseObject(runs.out).value(QStringLiteral("runs")).toArray();
        QCOMPARE(list.size(), 1);
        QCOMPARE(list.at(0).toObject().value(QStringLiteral("state")).toString(), QStringLiteral("lost"));
    }

    void sigtermToSupervisorStopsEverything()
    {
        QTemporaryDir dir;
        const QString marker = newMarker();
        QProcess accel;
        accel.setProgram(accel::test::binDir() + QStringLiteral("/accel"));
        accel.setArguments({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                            QStringLiteral("2"), QStringLiteral("--grace_period"), QStringLiteral("0.5"),
                            QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("run")),
                            QStringLiteral("--no_python"), fakechild(), QStringLiteral("--marker"), marker,
                            QStringLiteral("--grandchild"), QStringLiteral("--if-rank"), QStringLiteral("1"),
                            QStringLiteral("--ignore-term"), QStringLiteral("--hang")});
        accel.start();
        QVERIFY(accel.waitForStarted());
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).size() == 4; }, 10000));
        ::kill(static_cast<pid_t>(accel.processId()), SIGTERM);
        QVERIFY(accel.waitForFinished(5000));
        QCOMPARE(accel.exitCode(), 130);
        QVERIFY(QString::fromUtf8(accel.readAllStandardError()).contains(QStringLiteral("SIGTERM received")));
        QVERIFY2(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 2000), "a process of the job survived");
        QFile manifest(dir.filePath(QStringLiteral("run/run.json")));
        QVERIFY(manifest.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(manifest.readAll()).object().value(QStringLiteral("state")).toString(),
                 QStringLiteral("stopped"));
    }

    void twoMachinesOnOneHost()
    {
        // Machine 0 and machine 1 of a 2 x 2 job, both on this host: global ranks 0-3, one port.
        QTemporaryDir dir;
        const QString port = freePort();
        QVERIFY(!port.isEmpty());
        std::vector<std::unique_ptr<QProcess>> machines;
        for (int machine = 0; machine < 2; ++machine) {
            auto process = std::make_unique<QProcess>();
            process->start(
                accel::test::binDir() + QStringLiteral("/accel"),
                {QStringLiteral("launch"), QStringLiteral("--multi_gpu"), QStringLiteral("--num_machines"),
                 QStringLiteral("2"), QStringLiteral("--num_processes"), QStringLiteral("4"),
                 QStringLiteral("--machine_rank"), QString::number(machine), QStringLiteral("--main_process_ip"),
                 QStringLiteral("127.0.0.1"), QStringLiteral("--main_process_port"), port, QStringLiteral("--run_dir"),
                 dir.filePath(QStringLiteral("m%1").arg(machine)), QStringLiteral("--no_python"), fakechild(),
                 QStringLiteral("--env-json"), dir.filePath(QStringLiteral("env-{rank}.json"))});
            machines.push_back(std::move(process));
        }
        for (const auto &process : machines) {
            QVERIFY(process->waitForFinished(30000));
            QVERIFY2(process->exitCode() == 0, process->readAllStandardError().constData());
        }
        for (int rank = 0; rank < 4; ++rank) {
            QFile file(dir.filePath(QStringLiteral("env-%1.json").arg(rank)));
            QVERIFY(file.open(QIODevice::ReadOnly));
            const QJsonObject env = QJsonDocument::fromJson(file.readAll()).object();
            QCOMPARE(env.value(QStringLiteral("RANK")).toString(), QString::number(rank));
            QCOMPARE(env.value(QStringLiteral("LOCAL_RANK")).toString(), QString::number(rank % 2));
            QCOMPARE(env.value(QStringLiteral("GROUP_RANK")).toString(), QString::number(rank / 2));
            QCOMPARE(env.value(QStringLiteral("WORLD_SIZE")).toString(), QStringLiteral("4"));
            QCOMPARE(env.value(QStringLiteral("MASTER_PORT")).toString(), port);
            QVERIFY(QFile::exists(dir.filePath(QStringLiteral("m%1/logs/rank%2.log").arg(rank / 2).arg(rank))));
        }
    }

    // Two machines started with the same command and no --machine_rank (--rdzv_backend c10d) agree
    // on machine ranks at the rendezvous; every rank fails in the first attempt, so --max_restarts 1
    // meets again (attempt 1) before the ranks start anew. Both machines on this host: the first to
    // bind the endpoint hosts the meeting.
    void c10dMachinesAgreeOnRanksAndMeetAgainAfterARestart()
    {
        QTemporaryDir dir;
        const QString port = freePort();
        QVERIFY(!port.isEmpty());
        std::vector<std::unique_ptr<QProcess>> machines;
        for (int machine = 0; machine < 2; ++machine) {
            auto process = std::make_unique<QProcess>();
            process->start(accel::test::binDir() + QStringLiteral("/accel"),
                           {QStringLiteral("launch"),
                            QStringLiteral("--cpu"),
                            QStringLiteral("--num_machines"),
                            QStringLiteral("2"),
                            QStringLiteral("--num_processes"),
                            QStringLiteral("4"),
                            QStringLiteral("--rdzv_backend"),
                            QStringLiteral("c10d"),
                            QStringLiteral("--rdzv_endpoint"),
                            QStringLiteral("127.0.0.1:") + port,
                            QStringLiteral("--rdzv_conf"),
                            QStringLiteral("join_timeout=20"),
                            QStringLiteral("--max_restarts"),
                            QStringLiteral("1"),
                            QStringLiteral("--run_dir"),
                            dir.filePath(QStringLiteral("m%1").arg(machine)),
                            QStringLiteral("--no_python"),
                            fakechild(),
                            QStringLiteral("--if-attempt-below"),
                            QStringLiteral("1"),
                            QStringLiteral("--exit"),
                            QStringLiteral("3"),
                            QStringLiteral("--env-json"),
                            dir.filePath(QStringLiteral("env-{rank}.json"))});
            machines.push_back(std::move(process));
        }
        for (const auto &process : machines) {
            QVERIFY(process->waitForFinished(30000));
            QVERIFY2(process->exitCode() == 0, process->readAllStandardError().constData());
        }
        QSet<int> machineRanks;
        QString masterPort;
        for (int machine = 0; machine < 2; ++machine) {
            const QString run = dir.filePath(QStringLiteral("m%1").arg(machine));
            QFile manifestFile(run + QStringLiteral("/run.json"));
            QVERIFY(manifestFile.open(QIODevice::ReadOnly));
            const QJsonObject manifest = QJsonDocument::fromJson(manifestFile.readAll()).object();
            QCOMPARE(manifest.value(QStringLiteral("restarts")).toInt(), 1);
            const QJsonObject rendezvous = manifest.value(QStringLiteral("rendezvous")).toObject();
            QCOMPARE(rendezvous.value(QStringLiteral("attempt")).toInt(), 1);
            QCOMPARE(rendezvous.value(QStringLiteral("machines")).toArray().size(), 2);
            const int rank = rendezvous.value(QStringLiteral("machine_rank")).toInt(-1);
            machineRanks.insert(rank);
            QCOMPARE(rendezvous.value(QStringLiteral("hosted")).toBool(), rank == 0);
            masterPort = QString::number(rendezvous.value(QStringLiteral("master_port")).toInt());
            QVERIFY(QFile::exists(run + QStringLiteral("/logs/rank%1.log").arg(rank * 2)));
            // run.json's settings and plan say what this machine ran, not the placeholder machine 0.
            QCOMPARE(
                manifest.value(QStringLiteral("settings")).toObject().value(QStringLiteral("machine_rank")).toInt(),
                rank);
            const QJsonObject planned = manifest.value(QStringLiteral("plan")).toArray().at(1).toObject();
            QCOMPARE(planned.value(QStringLiteral("rank")).toInt(), rank * 2 + 1);
            QCOMPARE(planned.value(QStringLiteral("env")).toObject().value(QStringLiteral("RANK")).toString(),
                     QString::number(rank * 2 + 1));
            // One meeting per attempt.
            QFile events(run + QStringLiteral("/events.jsonl"));
            QVERIFY(events.open(QIODevice::ReadOnly));
            QList<int> attempts;
            for (const QByteArray &line : events.readAll().split('\n')) {
                const QJsonObject event = QJsonDocument::fromJson(line).object();
                if (event.value(QStringLiteral("event")).toString() == QLatin1String("rendezvous"))
                    attempts << event.value(QStringLiteral("attempt")).toInt();
            }
            QCOMPARE(attempts, (QList<int>{0, 1}));
        }
        QCOMPARE(machineRanks, (QSet<int>{0, 1}));
        QCOMPARE(masterPort, port); // rank 0's store takes the meeting's port over
        for (int rank = 0; rank < 4; ++rank) {
            QFile file(dir.filePath(QStringLiteral("env-%1.json").arg(rank)));
            QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(file.fileName()));
            const QJsonObject env = QJsonDocument::fromJson(file.readAll()).object();
            QCOMPARE(env.value(QStringLiteral("GROUP_RANK")).toString(), QString::number(rank / 2));
            QCOMPARE(env.value(QStringLiteral("WORLD_SIZE")).toString(), QStringLiteral("4"));
            QCOMPARE(env.value(QStringLiteral("TORCHELASTIC_RESTART_COUNT")).toString(), QStringLiteral("1"));
            QCOMPARE(env.value(QStringLiteral("MASTER_ADDR")).toString(), QStringLiteral("127.0.0.1"));
            QCOMPARE(env.value(QStringLiteral("MASTER_PORT")).toString(), masterPort);
        }
    }

    void busyPortIsReportedWithHolder()
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)), 0);
        QCOMPARE(::listen(fd, 1), 0);
        socklen_t length = sizeof(address);
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
        const QString port = QString::number(ntohs(address.sin_port));
        const auto result = runAccel({QStringLiteral("launch"), QStringLiteral("--dry-run"), QStringLiteral("--cpu"),
                                      QStringLiteral("--num_processes"), QStringLiteral("2"),
                                      QStringLiteral("--main_process_port"), port, QStringLiteral("x.py")});
        ::close(fd);
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(
                     QStringLiteral("port %1 is in use by pid %2").arg(port).arg(QCoreApplication::applicationPid())),
                 qPrintable(result.err));
    }

    void detachRunsTailStop()
    {
        QTemporaryDir dir;
        const QString marker = newMarker();
        const auto detached = runAccel(
            {QStringLiteral("launch"), QStringLiteral("--detach"), QStringLiteral("--json"), QStringLiteral("--cpu"),
             QStringLiteral("--num_processes"), QStringLiteral("2"), QStringLiteral("--system_sample_hz"),
             QStringLiteral("10"), QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("r1")),
             QStringLiteral("--no_python"), fakechild(), QStringLiteral("--marker"), marker, QStringLiteral("--print"),
             QStringLiteral("started"), QStringLiteral("--metrics"), QStringLiteral("2"), QStringLiteral("--hang")});
        QVERIFY2(detached.exitCode == 0, qPrintable(detached.err));
        // Whatever fails below, the detached run must not outlive the test.
        struct StopOnExit {
            QString path;
            ~StopOnExit()
            {
                runAccel({QStringLiteral("stop"), path, QStringLiteral("--timeout"), QStringLiteral("2")});
            }
        } guard{dir.filePath(QStringLiteral("r1"))};
        const QJsonObject info = parseObject(detached.out);
        QCOMPARE(info.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.launch-detached"));
        QCOMPARE(info.value(QStringLiteral("id")).toString(), QStringLiteral("r1"));
        QVERIFY(waitFor([&] { return processesWithMarker(marker, QStringLiteral("fakechild")).size() == 2; }, 10000));

        const QStringList root = {QStringLiteral("--runs_root"), dir.path()};
        QVERIFY(waitFor(
            [&] {
                const auto runs = runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("--json")} + root);
                const QJsonObject first =
                    parseObject(runs.out).value(QStringLiteral("runs")).toArray().at(0).toObject();
                return first.value(QStringLiteral("state")).toString() == QLatin1String("running");
            },
            5000));
        QVERIFY(waitFor(
            [&] {
                return runAccel(QStringList{QStringLiteral("tail"), QStringLiteral("r1")} + root)
                    .out.contains(QStringLiteral("[rank 1] started"));
            },
            5000));
        const auto metrics = runAccel(QStringList{QStringLiteral("tail"), QStringLiteral("r1"),
                                                  QStringLiteral("--metrics"), QStringLiteral("--json")} +
                                      root);
        QCOMPARE(parseObject(metrics.out).value(QStringLiteral("lines")).toArray().size(), 4);

        // The detached supervisor samples both ranks' processes (docs/metrics.md).
        QVERIFY(waitFor(
            [&] {
                QFile system(dir.filePath(QStringLiteral("r1/metrics/system.jsonl")));
                const QByteArray samples = system.open(QIODevice::ReadOnly) ? system.readAll() : QByteArray();
                return samples.contains("\"rank\":0,\"kind\":\"system\",\"pid\":") &&
                       samples.contains("\"rank\":1,\"kind\":\"system\",\"pid\":");
            },
            5000));

        // A follower started now ends by itself once the run is stopped.
        QProcess follower;
        follower.start(accel::test::binDir() + QStringLiteral("/accel"),
                       QStringList{QStringLiteral("tail"), QStringLiteral("r1"), QStringLiteral("--events"),
                                   QStringLiteral("--follow"), QStringLiteral("--json")} +
                           root);
        QVERIFY(follower.waitForStarted());
        const auto stop =
            runAccel(QStringList{QStringLiteral("stop"), QStringLiteral("r1"), QStringLiteral("--json")} + root);
        QCOMPARE(stop.exitCode, 0);
        QCOMPARE(parseObject(stop.out).value(QStringLiteral("state")).toString(), QStringLiteral("stopped"));
        QVERIFY(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 2000));
        QVERIFY(follower.waitForFinished(5000));
        const QByteArray streamed = follower.readAllStandardOutput();
        // The accel.tail stream (docs/monitor.md): events.jsonl text chunks, JSON-escaped.
        QVERIFY(streamed.startsWith("{\"schema\":\"accel.tail\",\"version\":1"));
        QVERIFY2(streamed.contains("{\"file\":\"events.jsonl\",\"text\":") &&
                     streamed.contains("\\\"event\\\":\\\"finished\\\""),
                 streamed.constData());
        const auto again = runAccel(QStringList{QStringLiteral("stop"), QStringLiteral("r1")} + root);
        QCOMPARE(again.exitCode, 0);
        QVERIFY(again.out.contains(QStringLiteral("already stopped")));
        const auto missing = runAccel(QStringList{QStringLiteral("tail"), QStringLiteral("nope")} + root);
        QCOMPARE(missing.exitCode, 2);
    }

    // A run that failed before the stop was requested stays "failed": rank 1 exits 3 at once and
    // rank 0 ignores SIGTERM, so the supervisor is still in the failure's grace period when accel
    // stop comes. (Before, a stop during that teardown recorded "stopped".)
    void failureBeforeTheStopStaysFailed()
    {
        QTemporaryDir dir;
        const QString marker = newMarker();
        const QString run = dir.filePath(QStringLiteral("r1"));
        const auto detached = runAccel({QStringLiteral("launch"),          QStringLiteral("--detach"),
                                        QStringLiteral("--json"),          QStringLiteral("--cpu"),
                                        QStringLiteral("--num_processes"), QStringLiteral("2"),
                                        QStringLiteral("--grace_period"),  QStringLiteral("2"),
                                        QStringLiteral("--run_dir"),       run,
                                        QStringLiteral("--no_python"),     fakechild(),
                                        QStringLiteral("--marker"),        marker,
                                        QStringLiteral("--if-rank"),       QStringLiteral("1"),
                                        QStringLiteral("--exit"),          QStringLiteral("3"),
                                        QStringLiteral("--ignore-term"),   QStringLiteral("--hang")});
        QVERIFY2(detached.exitCode == 0, qPrintable(detached.err));
        QVERIFY(waitFor(
            [&] {
                QFile events(QDir(run).filePath(QStringLiteral("events.jsonl")));
                return events.open(QIODevice::ReadOnly) && events.readAll().contains("\"event\":\"stopping_ranks\"");
            },
            10000));
        const auto stop = runAccel({QStringLiteral("stop"), run, QStringLiteral("--json")});
        QCOMPARE(stop.exitCode, 0);
        QCOMPARE(parseObject(stop.out).value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
        QFile manifest(QDir(run).filePath(QStringLiteral("run.json")));
        QVERIFY(manifest.open(QIODevice::ReadOnly));
        const QJsonObject json = parseObject(QString::fromUtf8(manifest.readAll()));
        QCOMPARE(json.value(QStringLiteral("exit_code")).toInt(), 3);
        const QString detail =
            json.value(QStringLiteral("states")).toArray().last().toObject().value(QStringLiteral("detail")).toString();
        QVERIFY2(detail.contains(QStringLiteral("rank 1 exit 3 (before the stop was requested)")), qPrintable(detail));
        QVERIFY(waitFor([&] { return processesWithMarker(marker).isEmpty(); }, 5000));
    }

    void configFileIsMerged()
    {
        QTemporaryDir dir;
        QFile config(dir.filePath(QStringLiteral("cfg.yaml")));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nmixed_precision: bf16\n"
                     "num_processes: 3\nnum_machines: 1\nmachine_rank: 0\nuse_cpu: true\nenable_cpu_affinity: true\n");
        config.close();
        const auto result =
            runAccel({QStringLiteral("launch"), QStringLiteral("--config_file"), config.fileName(),
                      QStringLiteral("--dry-run"), QStringLiteral("--json"), QStringLiteral("--mixed_precision"),
                      QStringLiteral("fp16"), QStringLiteral("t.py")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        const QJsonObject plan = parseObject(result.out);
        const QJsonArray ranks = plan.value(QStringLiteral("ranks")).toArray();
        QCOMPARE(ranks.size(), 3);
        const QJsonObject env = ranks.at(0).toObject().value(QStringLiteral("env")).toObject();
        QCOMPARE(env.value(QStringLiteral("ACCELERATE_MIXED_PRECISION")).toString(),
                 QStringLiteral("fp16")); // flag wins
        QCOMPARE(env.value(QStringLiteral("ACCELERATE_USE_CPU")).toString(), QStringLiteral("True"));
        QCOMPARE(env.value(QStringLiteral("ACCELERATE_CPU_AFFINITY")).toString(), QStringLiteral("1"));
        bool affinityNote = false;
        for (const QJsonValue &note : plan.value(QStringLiteral("notes")).toArray())
            affinityNote = affinityNote || note.toString().contains(QStringLiteral("enable_cpu_affinity"));
        QVERIFY(affinityNote);

        QFile broken(dir.filePath(QStringLiteral("bad.yaml")));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write("distributed_type: MULTI_CPU\nnum_processes: 2\nnot_a_key: 1\n");
        broken.close();
        const auto bad = runAccel({QStringLiteral("launch"), QStringLiteral("--config_file"), broken.fileName(),
                                   QStringLiteral("--dry-run"), QStringLiteral("t.py")});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains(QStringLiteral("not_a_key")), qPrintable(bad.err));
    }
};

QTEST_GUILESS_MAIN(tst_LaunchCli)
#include "tst_launchcli.moc"
