// A real distributed job across two "hosts" over SSH: two network namespaces (NetnsTestbed), each
// with its own sshd, `accel hosts launch` starting 2 nodes x 2 ranks of the runtime's self-test
// (rendezvous through node 0's address across the bridge, all-reduce, broadcast, gather, one DDP
// step checked against a single process). Both nodes' runs must end succeeded.
#include "tests/helpers/netnssshnodes.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

class tst_ClusterJob : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void selfTestRunsOnTwoNodesOverSsh();
};

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
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const auto launched = accel::test::runAccel(
        {"hosts", "launch", "node0,node1", "--json", "--record", record, "--main_process_port", "29533", "--remote_env",
         "XDG_DATA_HOME=" + data.path(), "--remote_env", "OMP_NUM_THREADS=1", "--", "--num_processes", "4", "--job",
         job},
        120000, {},
        {QStringLiteral("ACCEL_SSH_DIR=") + testbed.clientDirectory(),
         QStringLiteral("ACCEL_REMOTE_BIN=") + QDir(bin).filePath("accel"), QStringLiteral("SSH_AUTH_SOCK")});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonArray nodes = QJsonDocument::fromJson(launched.out.toUtf8()).object().value("nodes").toArray();
    QCOMPARE(nodes.size(), 2);
    // Each node's supervisor writes its run's final state into its own run.json.
    for (const QJsonValue &node : nodes) {
        const QString runJson = QDir(node.toObject().value("run_dir").toString()).filePath("run.json");
        auto state = [&runJson] {
            QFile file(runJson);
            return file.open(QIODevice::ReadOnly)
                       ? QJsonDocument::fromJson(file.readAll()).object().value("state").toString()
                       : QString();
        };
        QTRY_VERIFY_WITH_TIMEOUT(state() == QLatin1String("succeeded") || state() == QLatin1String("failed") ||
                                     state() == QLatin1String("stopped"),
                                 180000);
        if (state() != QLatin1String("succeeded")) {
            QDir logs(QDir(node.toObject().value("run_dir").toString()).filePath("logs"));
            QString text;
            for (const QString &log : logs.entryList(QDir::Files)) {
                QFile file(logs.filePath(log));
                if (file.open(QIODevice::ReadOnly))
                    text += log + ":\n" + QString::fromUtf8(file.readAll().right(1500)) + "\n";
            }
            QFAIL(qPrintable(QStringLiteral("%1: %2\n%3").arg(runJson, state(), text)));
        }
    }
    QFile rank0(QDir(nodes.at(0).toObject().value("run_dir").toString()).filePath("logs/rank0.log"));
    QVERIFY(rank0.open(QIODevice::ReadOnly));
    QVERIFY2(rank0.readAll().contains("Test is a success!"), "rank 0 did not report success");
}

QTEST_GUILESS_MAIN(tst_ClusterJob)
#include "tst_clusterjob.moc"
