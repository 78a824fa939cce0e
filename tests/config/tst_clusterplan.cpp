// The multi-node cluster planner: a good cluster becomes one config per node (ranks, totals,
// main address and port in every file, each file read back by the config reader unchanged);
// each lint error carries its exact message and stops anything from being written.
#include "core/config/clusterplan.h"
#include "core/config/configio.h"
#include "core/config/questionflow.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel::config;

namespace {

ClusterConfig multiGpuBase()
{
    auto base = QuestionFlow::standard().build(
        {{"machine_type", "MULTI_GPU"}, {"num_processes", "2"}, {"mixed_precision", "bf16"}});
    return base ? *base : ClusterConfig{};
}

// This machine as the tests describe it: "node0" with two interfaces; "node1" and "node2" are
// other machines; the resolver knows every name.
LocalMachine fakeLocal(std::string busyPortProblem = {})
{
    LocalMachine local;
    local.names = {"localhost", "node0"};
    local.addresses = {"127.0.0.1", "10.0.0.10", "::1"};
    local.resolve = [](const std::string &name) -> std::vector<std::string> {
        if (name == "node0")
            return {"10.0.0.10"};
        if (name == "node1")
            return {"10.0.0.11"};
        if (name == "node2")
            return {"10.0.0.12"};
        if (name == "localhost")
            return {"127.0.0.1"};
        return {};
    };
    local.portProblem = [busyPortProblem](int) { return busyPortProblem; };
    return local;
}

ClusterPlanInput goodInput()
{
    ClusterPlanInput input;
    input.hosts = {{"node0", 4}, {"node1", std::nullopt}, {"node2", 8}};
    input.processesPerHost = 4;
    input.mainHost = "node0";
    input.port = 29500;
    input.base = multiGpuBase();
    return input;
}

QStringList errorTexts(const ClusterPlan &plan)
{
    QStringList list;
    for (const Diagnostic &d : plan.messages)
        if (d.severity == Severity::Error)
            list << QString::fromStdString(d.toString());
    return list;
}

} // namespace

class tst_ClusterPlan : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void goodClusterWritesEveryNode()
    {
        const ClusterPlan plan = planCluster(goodInput(), fakeLocal());
        QVERIFY2(plan.ok(), qPrintable(errorTexts(plan).join(QLatin1Char('\n'))));
        QVERIFY(plan.mainIsLocal);
        QCOMPARE(plan.mainAddress, std::string("10.0.0.10"));
        QCOMPARE(plan.nodes.size(), size_t(3));
        for (size_t rank = 0; rank < plan.nodes.size(); ++rank) {
            const ClusterConfig &node = plan.nodes[rank];
            QCOMPARE(*node.machineRank, std::int64_t(rank));
            QCOMPARE(*node.numMachines, std::int64_t(3));
            QCOMPARE(*node.numProcesses, std::int64_t(12)); // all nodes together, as Accelerate expects
            QCOMPARE(*node.mainProcessIp, std::string("10.0.0.10"));
            QCOMPARE(*node.mainProcessPort, std::int64_t(29500));
            QCOMPARE(*node.sameNetwork, true);
            QCOMPARE(node.distributedType, DistributedType::MultiGpu);
            QCOMPARE(*node.mixedPrecision, MixedPrecision::Bf16);
        }

        QTemporaryDir dir;
        const std::string folder = dir.filePath(QStringLiteral("cluster/a")).toStdString();
        auto written = writeClusterPlan(plan, folder);
        QVERIFY2(written.has_value(), written ? "" : written.error().toString().c_str());
        QCOMPARE(written->size(), size_t(3));
        for (size_t rank = 0; rank < written->size(); ++rank) {
            QCOMPARE((*written)[rank], folder + "/node-" + std::to_string(rank) + ".yaml");
            auto loaded = loadConfigFile((*written)[rank]);
            QVERIFY2(loaded.has_value(), loaded ? "" : loaded.error().toString().c_str());
            QCOMPARE(serializeConfig(*loaded, ConfigFormat::Yaml),
                     serializeConfig(plan.nodes[rank], ConfigFormat::Yaml));
            QCOMPARE(*loaded->machineRank, std::int64_t(rank));
        }
        QFile first(QString::fromStdString((*written)[1]));
        QVERIFY(first.open(QIODevice::ReadOnly));
        const QByteArray text = first.readAll();
        QVERIFY(text.contains("machine_rank: 1\n"));
        QVERIFY(text.contains("main_process_ip: 10.0.0.10\n"));
        QVERIFY(text.contains("num_machines: 3\n"));
        QVERIFY(text.contains("num_processes: 12\n"));
    }

    void remoteMainHostDefersThePortCheck()
    {
        ClusterPlanInput input = goodInput();
        input.mainHost = "node1";
        const ClusterPlan plan = planCluster(input, fakeLocal("port 29500 is already in use on this machine"));
        QVERIFY(plan.ok());
        QVERIFY(!plan.mainIsLocal);
        QCOMPARE(plan.mainAddress, std::string("10.0.0.11"));
        QCOMPARE(plan.messages.size(), size_t(1));
        QCOMPARE(plan.messages[0].toString(),
                 std::string("port: warning: port 29500 will be checked on node1 at launch (the main host is not this "
                             "machine)"));
    }

    void lintErrors_data()
    {
        QTest::addColumn<int>("variant");
        QTest::addColumn<QString>("expected");
        QTest::newRow("no hosts") << 0 << "hosts: at least one host is required";
        QTest::newRow("duplicate") << 1
                                   << "hosts: host 'NODE1' is listed twice (positions 2 and 4); each node needs its "
                                      "own host";
        QTest::newRow("procs < 1") << 2 << "procs_per_host: expected at least 1 process per host; got 0";
        QTest::newRow("above devices") << 3
                                       << "procs_per_host: host 'node0' has 4 device(s) but 6 processes per host "
                                          "were asked";
        QTest::newRow("port range") << 4 << "port: expected a port from 1 to 65535; got 70000";
        QTest::newRow("port busy") << 5 << "port: port 29500 is already in use on this machine";
        QTest::newRow("main not a host") << 6 << "main_host: 'node9' is not one of the hosts (node0, node1, node2)";
        QTest::newRow("main address not local")
            << 7
            << "main_host: 'node0' resolves to 192.168.7.7, which is none of this machine's interface addresses "
               "(127.0.0.1, 10.0.0.10, ::1)";
        QTest::newRow("loopback main") << 8
                                       << "main_host: the main host's address 127.0.0.1 is a loopback address; the "
                                          "other nodes cannot reach it";
        QTest::newRow("single-machine type")
            << 9
            << "distributed_type: the base config's distributed_type NO cannot run on a cluster; use MULTI_CPU, "
               "MULTI_GPU (or another MULTI_ type), DEEPSPEED, FSDP or MEGATRON_LM";
    }

    void lintErrors()
    {
        QFETCH(int, variant);
        QFETCH(QString, expected);
        ClusterPlanInput input = goodInput();
        LocalMachine local = fakeLocal();
        switch (variant) {
        case 0:
            input.hosts.clear();
            input.mainHost = "node0";
            break;
        case 1:
            input.hosts.push_back({"NODE1", std::nullopt});
            break;
        case 2:
            input.processesPerHost = 0;
            break;
        case 3:
            input.processesPerHost = 6;
            break;
        case 4:
            input.port = 70000;
            break;
        case 5:
            local = fakeLocal("port 29500 is already in use on this machine");
            break;
        case 6:
            input.mainHost = "node9";
            break;
        case 7:
            local.resolve = [](const std::string &) { return std::vector<std::string>{"192.168.7.7"}; };
            break;
        case 8:
            input.mainHost = "localhost";
            input.hosts[0].name = "localhost";
            break;
        case 9:
            input.base = *QuestionFlow::standard().build({});
            break;
        }
        const ClusterPlan plan = planCluster(input, local);
        QVERIFY(!plan.ok());
        QVERIFY(plan.nodes.empty());
        const QStringList errors = errorTexts(plan);
        QVERIFY2(errors.contains(expected), qPrintable(errors.join(QLatin1Char('\n'))));

        // Nothing is written.
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("out"));
        auto written = writeClusterPlan(plan, folder.toStdString());
        QVERIFY(!written.has_value());
        QCOMPARE(written.error().code, accel::ErrorCode::InvalidInput);
        QVERIFY(QString::fromStdString(written.error().message).contains(QStringLiteral("nothing written")));
        QVERIFY(!QDir(folder).exists());
    }

    void inconsistentBaseIsCaughtByTheConfigRules()
    {
        // A base whose FSDP2-only block does not fit: the per-node validation names the file.
        ClusterPlanInput input = goodInput();
        input.base.parallelism.dpShardSize = 2;
        const ClusterPlan plan = planCluster(input, fakeLocal());
        QVERIFY(!plan.ok());
        QVERIFY(plan.nodes.empty());
        QVERIFY(errorTexts(plan).first().startsWith(QStringLiteral("node-0.yaml: ")));
    }

    void hostListsSplit()
    {
        QCOMPARE(splitHostList(" a, b,,c ,"), (std::vector<std::string>{"a", "b", "c"}));
        QCOMPARE(nodeFileName(3), std::string("node-3.yaml"));
    }

    void probesThisMachine()
    {
        const LocalMachine local = localMachine();
        QVERIFY(!local.names.empty());
        QVERIFY(std::find(local.addresses.begin(), local.addresses.end(), "127.0.0.1") != local.addresses.end());
        QVERIFY(local.portProblem);
        QVERIFY(local.portProblem(0).empty()); // port 0 always binds
    }
};

QTEST_GUILESS_MAIN(tst_ClusterPlan)
#include "tst_clusterplan.moc"
