// `accel config cluster` as a user runs it: the real binary writes node-<rank>.yaml for every
// host, or exits 2 with the lint's messages and writes nothing.
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using accel::test::runAccel;

namespace {

QString readAll(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return QStringLiteral("<missing %1>").arg(path);
    return QString::fromUtf8(file.readAll());
}

} // namespace

class tst_ConfigCluster : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void writesEveryNodesConfig()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("cluster"));
        // Documentation addresses (TEST-NET-3): never this machine, so the port is checked at launch.
        auto result = runAccel({QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--hosts"),
                                QStringLiteral("203.0.113.1,203.0.113.2"), QStringLiteral("--procs_per_host"),
                                QStringLiteral("2"), QStringLiteral("--main_host"), QStringLiteral("203.0.113.1"),
                                QStringLiteral("--port"), QStringLiteral("29511"), QStringLiteral("--out_dir"), out});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QCOMPARE(result.out, QStringLiteral("wrote %1/node-0.yaml (203.0.113.1, machine_rank 0)\n"
                                            "wrote %1/node-1.yaml (203.0.113.2, machine_rank 1)\n"
                                            "launch on every node over SSH (with this folder at the same path "
                                            "there): accel launch --hosts 203.0.113.1,203.0.113.2 --config_dir %1 "
                                            "SCRIPT\n")
                                 .arg(out));
        QVERIFY(result.err.contains(
            QStringLiteral("port 29511 will be checked on 203.0.113.1 at launch (the main host is not this machine)")));
        const QString node1 = readAll(out + QStringLiteral("/node-1.yaml"));
        QVERIFY(node1.contains(QStringLiteral("distributed_type: MULTI_CPU\n")));
        QVERIFY(node1.contains(QStringLiteral("machine_rank: 1\n")));
        QVERIFY(node1.contains(QStringLiteral("main_process_ip: 203.0.113.1\n")));
        QVERIFY(node1.contains(QStringLiteral("main_process_port: 29511\n")));
        QVERIFY(node1.contains(QStringLiteral("num_machines: 2\n")));
        QVERIFY(node1.contains(QStringLiteral("num_processes: 4\n")));
        // Every written file is valid for the config checker.
        result = runAccel({QStringLiteral("config"), QStringLiteral("validate"), out + QStringLiteral("/node-0.yaml")});
        QCOMPARE(result.exitCode, 0);
    }

    void jsonAndBase()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("fsdp"));
        const auto result =
            runAccel({QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--hosts"),
                      QStringLiteral("203.0.113.1, 203.0.113.2, 203.0.113.3"), QStringLiteral("--procs_per_host=8"),
                      QStringLiteral("--base"), test::dataPath(QStringLiteral("configs/fsdp2.yaml")),
                      QStringLiteral("--out_dir"), out, QStringLiteral("--json")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QVERIFY(
            result.out.startsWith(QStringLiteral("{\n  \"schema\": \"accel.config.cluster\",\n  \"version\": 1,\n")));
        const QJsonObject json = QJsonDocument::fromJson(result.out.toUtf8()).object();
        QCOMPARE(json.value(QStringLiteral("ok")).toBool(), true);
        QCOMPARE(json.value(QStringLiteral("main_host")).toString(), QStringLiteral("203.0.113.1"));
        QCOMPARE(json.value(QStringLiteral("num_processes")).toInt(), 24);
        const QJsonArray nodes = json.value(QStringLiteral("nodes")).toArray();
        QCOMPARE(nodes.size(), 3);
        QCOMPARE(nodes[2].toObject().value(QStringLiteral("file")).toString(), out + QStringLiteral("/node-2.yaml"));
        const QString node2 = readAll(out + QStringLiteral("/node-2.yaml"));
        QVERIFY(node2.contains(QStringLiteral("distributed_type: FSDP\n")));
        QVERIFY(node2.contains(QStringLiteral("  fsdp_version: 2\n")));
        QVERIFY(node2.contains(QStringLiteral("machine_rank: 2\n")));
        QVERIFY(node2.contains(QStringLiteral("num_processes: 24\n")));
    }

    void lintErrorsWriteNothing()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("bad"));
        auto result = runAccel({QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--hosts"),
                                QStringLiteral("203.0.113.1,203.0.113.2,203.0.113.1"), QStringLiteral("--main_host"),
                                QStringLiteral("203.0.113.9"), QStringLiteral("--out_dir"), out});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("error: hosts: host '203.0.113.1' is listed twice (positions 1 and "
                                                    "3); each node needs its own host\n")),
                 qPrintable(result.err));
        QVERIFY(result.err.contains(QStringLiteral(
            "error: main_host: '203.0.113.9' is not one of the hosts (203.0.113.1, 203.0.113.2, 203.0.113.1)\n")));
        QVERIFY(result.err.endsWith(QStringLiteral("accel config cluster: nothing written; fix the errors above\n")));
        QVERIFY(!QDir(out).exists());

        // The main host is this machine: the port must be free here.
        QTcpServer server;
        QVERIFY(server.listen(QHostAddress::Any, 0));
        const QString port = QString::number(server.serverPort());
        result = runAccel({QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--hosts"),
                           QStringLiteral("127.0.0.1"), QStringLiteral("--port"), port, QStringLiteral("--out_dir"),
                           out, QStringLiteral("--json")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(
            result.err.contains(QStringLiteral("error: port: port %1 is already in use on this machine").arg(port)),
            qPrintable(result.err));
        QCOMPARE(QJsonDocument::fromJson(result.out.toUtf8()).object().value(QStringLiteral("ok")).toBool(), false);
        QVERIFY(!QDir(out).exists());
        server.close();
        result =
            runAccel({QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--hosts"),
                      QStringLiteral("127.0.0.1"), QStringLiteral("--port"), port, QStringLiteral("--out_dir"), out});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QVERIFY(QFile::exists(out + QStringLiteral("/node-0.yaml")));
    }

    void loopbackMainHostIsRefusedForSeveralNodes()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("lo"));
        const auto result = runAccel({QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--hosts"),
                                      QStringLiteral("localhost,203.0.113.2"), QStringLiteral("--out_dir"), out});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("error: main_host: the main host's address 127.0.0.1 is a loopback "
                                                    "address; the other nodes cannot reach it\n")),
                 qPrintable(result.err));
        QVERIFY(!QDir(out).exists());
    }

    void usage()
    {
        auto result = runAccel({QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--help")});
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.startsWith(QStringLiteral("usage: accel config cluster")));
        result = runAccel({QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--hosts"),
                           QStringLiteral("a"), QStringLiteral("--procs_per_host"), QStringLiteral("two"),
                           QStringLiteral("--out_dir"), QStringLiteral("/tmp/x")});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err,
                 QStringLiteral("accel config cluster: option '--procs_per_host': expected a whole number; got two\n"));
        result = runAccel(
            {QStringLiteral("config"), QStringLiteral("cluster"), QStringLiteral("--hosts"), QStringLiteral("a")});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err, QStringLiteral("accel config cluster: --hosts and --out_dir are required\n"));
    }
};

QTEST_GUILESS_MAIN(tst_ConfigCluster)
#include "tst_configcluster.moc"
