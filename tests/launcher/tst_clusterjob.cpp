// Real distributed jobs across two "hosts" over SSH: two network namespaces (NetnsTestbed), each
// with its own sshd, `accel hosts launch` starting 2 nodes x 2 ranks of
// - the runtime's self-test (rendezvous through node 0's address across the bridge, all-reduce,
//   broadcast, gather, one DDP step checked against a single process);
// - a plain Python Accelerate script (tests/launcher/cluster_train.py) in the project's Python
//   environment: 4 gloo CPU ranks train with DDP, each rank's printed metrics reach the monitor's
//   parser, and every rank on both nodes ends with the same parameters.
// Both nodes' runs must end succeeded.
#include "monitor/stdoutmetricsparser.h"
#include "tests/helpers/netnssshnodes.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

class tst_ClusterJob : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void selfTestRunsOnTwoNodesOverSsh();
    void pythonScriptTrainsOnTwoNodesOverSsh();
};

namespace {

// Waits for the node's run.json to reach an end state; "" when it succeeded, else the state and
// the tails of its logs.
QString waitForSuccess(const QString &runDir)
{
    const QString runJson = QDir(runDir).filePath("run.json");
    auto state = [&runJson] {
        QFile file(runJson);
        return file.open(QIODevice::ReadOnly)
                   ? QJsonDocument::fromJson(file.readAll()).object().value("state").toString()
                   : QString();
    };
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < 180000 && state() != QLatin1String("succeeded") && state() != QLatin1String("failed") &&
           state() != QLatin1String("stopped"))
        QTest::qWait(100);
    if (state() == QLatin1String("succeeded"))
        return {};
    QDir logs(QDir(runDir).filePath("logs"));
    QString text;
    for (const QString &log : logs.entryList(QDir::Files)) {
        QFile file(logs.filePath(log));
        if (file.open(QIODevice::ReadOnly))
            text += log + ":\n" + QString::fromUtf8(file.readAll().right(1500)) + "\n";
    }
    return QStringLiteral("%1: %2\n%3").arg(runJson, state().isEmpty() ? "no end state" : state(), text);
}

// `accel hosts launch node0,node1` of the testbed with this build's accel on both nodes, run
// directories under `data`, one torch thread per rank; `remoteEnv` and `launchArgs` add to it.
accel::test::ProcessResult launchOnNodes(const accel::test::NetnsSshNodes &testbed, const QTemporaryDir &data, int port,
                                         const QStringList &remoteEnv, const QStringList &launchArgs)
{
    QStringList arguments = {"hosts",
                             "launch",
                             "node0,node1",
                             "--json",
                             "--record",
                             data.filePath(QStringLiteral("cluster.json")),
                             "--main_process_port",
                             QString::number(port),
                             "--remote_env",
                             "XDG_DATA_HOME=" + data.path(),
                             "--remote_env",
                             "OMP_NUM_THREADS=1"};
    for (const QString &variable : remoteEnv)
        arguments << QStringLiteral("--remote_env") << variable;
    arguments << QStringLiteral("--") << launchArgs;
    return accel::test::runAccel(arguments, 120000, {},
                                 {QStringLiteral("ACCEL_SSH_DIR=") + testbed.clientDirectory(),
                                  QStringLiteral("ACCEL_REMOTE_BIN=") + QDir(accel::test::binDir()).filePath("accel"),
                                  QStringLiteral("SSH_AUTH_SOCK")});
}

} // namespace

void tst_ClusterJob::selfTestRunsOnTwoNodesOverSsh()
{
    if (const QString reason = accel::test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    const QString bin = accel::test::binDir();
    QVERIFY2(QFile::exists(QDir(bin).filePath(QStringLiteral("accel-worker"))), "build the accel-worker target");
    accel::test::NetnsSshNodes testbed(2);
    if (const QString reason = testbed.makeNetwork(); !reason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no network namespaces here: ") + reason));
    const QString error = testbed.startServers();
    QVERIFY2(error.isEmpty(), qPrintable(error));

    QTemporaryDir data;
    const QString job = data.filePath(QStringLiteral("selftest.yaml"));
    {
        QFile file(job);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("recipe: selftest\nname: cluster-selftest\nseed: 42\ntraining:\n  timeout_s: 120\n");
    }
    const auto launched = launchOnNodes(testbed, data, 29533, {}, {"--num_processes", "4", "--job", job});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonArray nodes = QJsonDocument::fromJson(launched.out.toUtf8()).object().value("nodes").toArray();
    QCOMPARE(nodes.size(), 2);
    // Each node's supervisor writes its run's final state into its own run.json.
    for (const QJsonValue &node : nodes) {
        const QString failure = waitForSuccess(node.toObject().value("run_dir").toString());
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }
    QFile rank0(QDir(nodes.at(0).toObject().value("run_dir").toString()).filePath("logs/rank0.log"));
    QVERIFY(rank0.open(QIODevice::ReadOnly));
    QVERIFY2(rank0.readAll().contains("Test is a success!"), "rank 0 did not report success");
}

void tst_ClusterJob::pythonScriptTrainsOnTwoNodesOverSsh()
{
    if (const QString reason = accel::test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (python.isEmpty() || !QFileInfo(python).isExecutable())
        QSKIP("the project's Python environment is missing (run packaging/install-deps.sh)");
    accel::test::NetnsSshNodes testbed(2);
    if (const QString reason = testbed.makeNetwork(); !reason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no network namespaces here: ") + reason));
    const QString error = testbed.startServers();
    QVERIFY2(error.isEmpty(), qPrintable(error));

    QTemporaryDir data;
    const QString script = QDir(accel::test::sourceDir()).filePath("tests/launcher/cluster_train.py");
    const auto launched =
        launchOnNodes(testbed, data, 29534, {"PYTHON_EXEC=" + python}, {"--cpu", "--num_processes", "4", script});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonArray nodes = QJsonDocument::fromJson(launched.out.toUtf8()).object().value("nodes").toArray();
    QCOMPARE(nodes.size(), 2);

    QStringList digests;
    QSet<int> ranks;
    bool worldSeen = false;
    for (const QJsonValue &node : nodes) {
        const QString runDir = node.toObject().value("run_dir").toString();
        const QString failure = waitForSuccess(runDir);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        const QDir logs(QDir(runDir).filePath("logs"));
        const QStringList files = logs.entryList({QStringLiteral("rank*.log")}, QDir::Files);
        QCOMPARE(files.size(), 2); // two ranks on each node
        for (const QString &name : files) {
            QFile file(logs.filePath(name));
            QVERIFY(file.open(QIODevice::ReadOnly));
            const QString text = QString::fromUtf8(file.readAll());
            worldSeen |= text.contains(QStringLiteral("world: 4 processes, DistributedType.MULTI_CPU"));
            // The monitor's parser for printed metrics reads the script's 12 steps from the log.
            accel::monitor::StdoutMetricsParser parser;
            accel::monitor::MetricBatch batch;
            int rows = 0;
            for (const QString &line : text.split(QLatin1Char('\n')))
                rows += parser.parseLine(line, 0.0, batch);
            QVERIFY2(rows == 12, qPrintable(QStringLiteral("%1: %2 metric rows\n%3").arg(name).arg(rows).arg(text)));
            const QRegularExpression digest(QStringLiteral("rank (\\d+) parameters ([0-9a-f]{64})"));
            const auto match = digest.match(text);
            QVERIFY2(match.hasMatch(), qPrintable(text));
            ranks.insert(match.captured(1).toInt());
            digests << match.captured(2);
        }
    }
    QVERIFY(worldSeen);
    QCOMPARE(ranks, (QSet<int>{0, 1, 2, 3}));
    // Data parallel across the nodes: every rank ends with the same parameters.
    QCOMPARE(digests.size(), 4);
    QCOMPARE(digests.count(digests.first()), 4);
}

QTEST_GUILESS_MAIN(tst_ClusterJob)
#include "tst_clusterjob.moc"
