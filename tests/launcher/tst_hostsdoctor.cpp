// `accel hosts doctor` (the network pre-flight) and `accel launch --hosts` end to end on three
// network-namespace nodes, each with its own sshd (NetnsSshNodes); the remote accel is this build's.
// A ProxyJump alias reaches node 2 through node 0 once this machine has no route to node 2.
// Faults are made in the nodes' own network: machine 0's main port dropped by a policy-routing
// blackhole (as a firewall's DROP), the port held by another program, node 2's route to machine 0
// made unreachable, GLOO_SOCKET_IFNAME naming an interface a node lacks, and every port of
// machine 0 but sshd's and the main one dropped (the reach check passes, the all-reduce cannot).
#include "tests/helpers/netnssshnodes.h"
#include "tests/helpers/slurmtestcluster.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QProcess>
#include <QSet>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QUuid>

#include <memory>
#include <sys/stat.h>

namespace {

QJsonObject parse(const accel::test::ProcessResult &result)
{
    return QJsonDocument::fromJson(result.out.toUtf8()).object();
}

QJsonObject verdictOf(const QJsonObject &report, const QString &check, const QString &host)
{
    for (const QJsonValue &value : report.value(QStringLiteral("checks")).toArray()) {
        const QJsonObject v = value.toObject();
        if (v.value(QStringLiteral("check")).toString() == check && v.value(QStringLiteral("host")).toString() == host)
            return v;
    }
    return {};
}

// `ip ARGS`; the error text, or empty.
QString ip(const QStringList &arguments)
{
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(QStringLiteral("ip"), arguments);
    if (!process.waitForFinished(10000) || process.exitCode() != 0)
        return QStringLiteral("ip %1: %2")
            .arg(arguments.join(QLatin1Char(' ')), QString::fromLocal8Bit(process.readAll()));
    return {};
}

// Runs `ip` steps now and their undo steps when it goes out of scope (also when a check fails).
class NetworkChange {
public:
    NetworkChange(const QList<QStringList> &steps, const QList<QStringList> &undo) : m_undo(undo)
    {
        for (const QStringList &step : steps) {
            if (m_error.isEmpty())
                m_error = ip(step);
        }
    }
    ~NetworkChange()
    {
        for (const QStringList &step : m_undo)
            ip(step);
    }
    QString error() const { return m_error; }

private:
    QList<QStringList> m_undo;
    QString m_error;
};

// What fakechild rank `rank` wrote of its environment (--env-json into `data`), once it has; empty
// when it did not within 20 s.
QJsonObject rankEnvironment(const QTemporaryDir &data, int rank)
{
    const QString path = data.filePath(QStringLiteral("env-%1.json").arg(rank));
    accel::test::waitFor([&path] { return QFileInfo(path).size() > 0; }, 20000);
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
}

// Writes `text` into `name` inside `folder`; the path, or empty when it could not.
QString writeTestFile(const QTemporaryDir &folder, const QString &name, const QByteArray &text)
{
    const QString path = folder.filePath(name);
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(text) == text.size() ? path : QString();
}

ino_t netnsInode(const QString &path)
{
    struct stat st {};
    return ::stat(QFile::encodeName(path).constData(), &st) == 0 ? st.st_ino : 0;
}

} // namespace

class tst_HostsDoctor : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void badArgumentsExitWithTwo();
    void launchHelpDocumentsHosts();
    void everyCheckPassesOnThreeNodes();
    void droppedMainPortIsNamed();
    void mainPortHeldByAnotherProgramIsNamed();
    void nodeWithoutRouteToMachineZeroIsNamed();
    void wrongInterfaceIsNamed();
    void allReduceRunsTheRuntimeSelfTestOnEveryNode();
    void allReduceFailsWhenOnlyTheMainPortIsOpen();
    void launchWithHostsStartsEveryNode();
    void launchWithHostsStartsNothingWhenThePreflightFails();
    void launchWithTheNodeConfigsOfConfigCluster();
    void jumpHostReachesANodeThisMachineCannot();
    void c10dLaunchesWithoutMachineRanksFormOneWorldAndTrain();
    void c10dNamesTheMachineThatNeverCame();
    void hostfileErrorsNameFileAndLine();
    void deepspeedHostfileWithFilterLaunchesOnTheHostsLeft();
    void accelerateMultiCpuSlurmExampleLineLaunchesOverTheMpiHostfile();

private:
    // Makes the three nodes on first use; false (and the test skipped or failed) when it cannot.
    bool nodes();
    accel::test::ProcessResult accel(const QStringList &arguments, const QStringList &extraEnv = {});
    std::unique_ptr<NetworkChange> dropMainPort(int port) const;
    std::unique_ptr<QProcess> launchInNode(int node, const QStringList &arguments) const;
    void expectRanksInNodesThenStop(const QString &marker, const QList<int> &nodes, const QString &record);

    std::unique_ptr<accel::test::NetnsSshNodes> m_nodes;
    QString m_skip;
    QString m_accel;
};

void tst_HostsDoctor::initTestCase()
{
    m_accel = QDir(accel::test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFile::exists(m_accel), "build the accel target");
    qunsetenv("SSH_AUTH_SOCK");
}

bool tst_HostsDoctor::nodes()
{
    if (m_nodes)
        return true;
    if (!m_skip.isEmpty())
        return false;
    auto testbed = std::make_unique<accel::test::NetnsSshNodes>(3);
    if (const QString reason = testbed->makeNetwork(); !reason.isEmpty()) {
        m_skip = QStringLiteral("no network namespaces here: ") + reason;
        return false;
    }
    if (const QString error = testbed->startServers(); !error.isEmpty()) {
        m_skip = error;
        return false;
    }
    m_nodes = std::move(testbed);
    return true;
}

#define REQUIRE_NODES()                                                                                                \
    do {                                                                                                               \
        if (!nodes())                                                                                                  \
            QSKIP(qPrintable(m_skip));                                                                                 \
    } while (false)

accel::test::ProcessResult tst_HostsDoctor::accel(const QStringList &arguments, const QStringList &extraEnv)
{
    QStringList env = {QStringLiteral("ACCEL_REMOTE_BIN=") + m_accel, QStringLiteral("SSH_AUTH_SOCK")};
    if (m_nodes)
        env << QStringLiteral("ACCEL_SSH_DIR=") + m_nodes->clientDirectory();
    return accel::test::runAccel(arguments, 120000, {}, env + extraEnv);
}

// Machine 0 drops TCP SYNs to `port` arriving on eth0, as a firewall's DROP rule would: a
// policy-routing blackhole for that port, looked up before the local table (moved from preference
// 0 to 20). sshd's port 22 still answers. Undone when the result goes out of scope.
std::unique_ptr<NetworkChange> tst_HostsDoctor::dropMainPort(int port) const
{
    const QString ns = m_nodes->nodeNamespace(0);
    const QStringList rule = {"iif", "eth0", "ipproto", "tcp", "dport", QString::number(port), "blackhole"};
    return std::make_unique<NetworkChange>(
        QList<QStringList>{QStringList{"-n", ns, "rule", "add", "pref", "10"} + rule,
                           {"-n", ns, "rule", "add", "pref", "20", "lookup", "local"},
                           {"-n", ns, "rule", "del", "pref", "0"}},
        QList<QStringList>{{"-n", ns, "rule", "add", "pref", "0", "lookup", "local"},
                           {"-n", ns, "rule", "del", "pref", "20"},
                           QStringList{"-n", ns, "rule", "del", "pref", "10"} + rule});
}

void tst_HostsDoctor::badArgumentsExitWithTwo()
{
    QCOMPARE(accel({"hosts", "doctor"}).exitCode, 2);
    const auto port = accel({"hosts", "doctor", "node0,node1", "--main_process_port", "70000"});
    QCOMPARE(port.exitCode, 2);
    QVERIFY2(port.err.contains(QStringLiteral("--main_process_port")) && port.err.contains(QStringLiteral("'70000'")),
             qPrintable(port.err));
    const auto timeout =
        accel({"hosts", "doctor", "node0,node1", "--main_process_ip", "10.0.0.1", "--connect_timeout", "soon"});
    QCOMPARE(timeout.exitCode, 2);
    QVERIFY2(timeout.err.contains(QStringLiteral("--connect_timeout")) &&
                 timeout.err.contains(QStringLiteral("'soon'")),
             qPrintable(timeout.err));
    const auto help = accel({"hosts", "doctor", "--help"});
    QCOMPARE(help.exitCode, 0);
    QVERIFY2(help.out.contains(QStringLiteral("reaches the main address")), qPrintable(help.out));
    QVERIFY2(accel({"hosts", "--help"}).out.contains(QStringLiteral("doctor H1,H2")), "accel hosts --help: doctor");
}

void tst_HostsDoctor::launchHelpDocumentsHosts()
{
    const auto help = accel({"launch", "--help"});
    QCOMPARE(help.exitCode, 0);
    QVERIFY2(help.out.contains(QStringLiteral("--hosts H1,H2,...")) &&
                 help.out.contains(QStringLiteral("accel hosts launch H1,H2")),
             qPrintable(help.out));
    const auto machines = accel({"launch", "--hosts", "node0,node1", "--num_machines", "3", "train.py"});
    QCOMPARE(machines.exitCode, 2);
    QVERIFY2(machines.err.contains(QStringLiteral("--num_machines: is 3 but --hosts names 2 host(s)")),
             qPrintable(machines.err));
    const auto nothing = accel({"launch", "--hosts", "node0,node1", "--num_processes", "2"});
    QCOMPARE(nothing.exitCode, 2);
    QVERIFY2(nothing.err.contains(QStringLiteral("nothing to launch")), qPrintable(nothing.err));
    const auto owned = accel({"launch", "--hosts", "node0", "--machine_rank", "1", "train.py"});
    QCOMPARE(owned.exitCode, 2);
    QVERIFY2(owned.err.contains(QStringLiteral("--machine_rank is set for each node")), qPrintable(owned.err));
}

void tst_HostsDoctor::everyCheckPassesOnThreeNodes()
{
    REQUIRE_NODES();
    QElapsedTimer clock;
    clock.start();
    const auto result = accel({"hosts", "doctor", "node0,node1,node2", "--json", "--main_process_port", "29611"});
    const qint64 elapsed = clock.elapsed();
    QVERIFY2(result.exitCode == 0, qPrintable(result.out + result.err));
    const QJsonObject report = parse(result);
    QCOMPARE(report.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.doctor"));
    QCOMPARE(report.value(QStringLiteral("version")).toInt(), 1);
    QCOMPARE(report.value(QStringLiteral("ok")).toBool(), true);
    QCOMPARE(report.value(QStringLiteral("main_process_ip")).toString(), m_nodes->nodeAddress(0));
    QCOMPARE(report.value(QStringLiteral("main_process_port")).toInt(), 29611);
    for (int node = 0; node < 3; ++node) {
        const QString host = QStringLiteral("node%1").arg(node);
        QCOMPARE(verdictOf(report, "accel", host).value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
        const QJsonObject interface = verdictOf(report, "interface", host);
        QCOMPARE(interface.value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
        QCOMPARE(interface.value(QStringLiteral("details")).toObject().value(QStringLiteral("interface")).toString(),
                 QStringLiteral("eth0"));
        if (node == 0)
            continue;
        // Each node connected from its own address, over the bridge.
        const QJsonObject reach = verdictOf(report, "reach", host);
        QCOMPARE(reach.value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
        QCOMPARE(reach.value(QStringLiteral("details")).toObject().value(QStringLiteral("local_address")).toString(),
                 m_nodes->nodeAddress(node));
    }
    QCOMPARE(verdictOf(report, "listen", "node0").value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
    qInfo("accel hosts doctor on 3 nodes: %lld ms (%s in the report)", static_cast<long long>(elapsed),
          qPrintable(QString::number(report.value(QStringLiteral("elapsed_ms")).toDouble())));
    QVERIFY2(elapsed < 60000, qPrintable(QString::number(elapsed)));

    const auto text = accel({"hosts", "doctor", "node0,node1,node2", "--main_process_port", "29611"});
    QVERIFY2(text.exitCode == 0, qPrintable(text.out + text.err));
    QVERIFY2(text.out.contains(QStringLiteral("doctor: every check passed on 3 host(s)")), qPrintable(text.out));
    QVERIFY2(text.out.contains(QStringLiteral("node2 reaches %1:29611").arg(m_nodes->nodeAddress(0))),
             qPrintable(text.out));
}

void tst_HostsDoctor::droppedMainPortIsNamed()
{
    REQUIRE_NODES();
    const int port = 29612;
    const auto firewall = dropMainPort(port);
    QVERIFY2(firewall->error().isEmpty(), qPrintable(firewall->error()));
    const auto result = accel({"hosts", "doctor", "node0,node1,node2", "--json", "--main_process_port",
                               QString::number(port), "--connect_timeout", "2"});
    QCOMPARE(result.exitCode, 1);
    const QJsonObject report = parse(result);
    QCOMPARE(report.value(QStringLiteral("ok")).toBool(), false);
    QCOMPARE(verdictOf(report, "listen", "node0").value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
    const QString target = QStringLiteral("%1:%2").arg(m_nodes->nodeAddress(0)).arg(port);
    for (const QString &host : {QStringLiteral("node1"), QStringLiteral("node2")}) {
        const QJsonObject reach = verdictOf(report, "reach", host);
        QCOMPARE(reach.value(QStringLiteral("status")).toString(), QStringLiteral("fail"));
        QCOMPARE(reach.value(QStringLiteral("details")).toObject().value(QStringLiteral("error_kind")).toString(),
                 QStringLiteral("timeout"));
        const QString message = reach.value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(host + QStringLiteral(" cannot reach ") + target + QStringLiteral(" (node0")),
                 qPrintable(message));
        const QString fix = reach.value(QStringLiteral("fix")).toString();
        QVERIFY2(fix.contains(QStringLiteral("firewall")) && fix.contains(QStringLiteral("port %1").arg(port)),
                 qPrintable(fix));
    }
    const auto text = accel({"hosts", "doctor", "node0,node1,node2", "--main_process_port", QString::number(port),
                             "--connect_timeout", "2"});
    QCOMPARE(text.exitCode, 1);
    QVERIFY2(text.out.contains(QStringLiteral("doctor: 2 check(s) failed: reach on node1, reach on node2")),
             qPrintable(text.out));
}

void tst_HostsDoctor::mainPortHeldByAnotherProgramIsNamed()
{
    REQUIRE_NODES();
    const int port = 29613;
    const QString python = QStandardPaths::findExecutable(QStringLiteral("python3"));
    if (python.isEmpty())
        QSKIP("no python3 here to hold the port");
    QProcess holder; // another program listening on machine 0's main port
    holder.start(QStringLiteral("ip"),
                 {"netns", "exec", m_nodes->nodeNamespace(0), python, "-c",
                  QStringLiteral("import socket, time\ns = socket.socket()\ns.bind(('0.0.0.0', %1))\ns.listen()\n"
                                 "print('listening', flush=True)\ntime.sleep(120)\n")
                      .arg(port)});
    QVERIFY(holder.waitForStarted());
    QByteArray said;
    while (!said.contains("listening") && holder.waitForReadyRead(20000))
        said += holder.readAllStandardOutput();
    QVERIFY2(said.contains("listening"), holder.readAllStandardError().constData());
    const auto result =
        accel({"hosts", "doctor", "node0,node1,node2", "--json", "--main_process_port", QString::number(port)});
    holder.kill();
    holder.waitForFinished();
    QCOMPARE(result.exitCode, 1);
    const QJsonObject report = parse(result);
    const QJsonObject listen = verdictOf(report, "listen", "node0");
    QCOMPARE(listen.value(QStringLiteral("status")).toString(), QStringLiteral("fail"));
    const QString message = listen.value(QStringLiteral("message")).toString();
    QVERIFY2(message.contains(QStringLiteral("on node0: port %1 is in use by pid").arg(port)) &&
                 message.contains(QStringLiteral("python3")),
             qPrintable(message));
    QVERIFY2(listen.value(QStringLiteral("fix")).toString().contains(QStringLiteral("--main_process_port")),
             qPrintable(listen.value(QStringLiteral("fix")).toString()));
    QCOMPARE(verdictOf(report, "reach", "node1").value(QStringLiteral("status")).toString(), QStringLiteral("skipped"));
}

void tst_HostsDoctor::nodeWithoutRouteToMachineZeroIsNamed()
{
    REQUIRE_NODES();
    const QString route = m_nodes->nodeAddress(0) + QStringLiteral("/32");
    const QString ns = m_nodes->nodeNamespace(2);
    const NetworkChange unreachable({{"-n", ns, "route", "add", "unreachable", route}},
                                    {{"-n", ns, "route", "del", "unreachable", route}});
    QVERIFY2(unreachable.error().isEmpty(), qPrintable(unreachable.error()));
    const auto result = accel({"hosts", "doctor", "node0,node1,node2", "--json", "--main_process_port", "29614"});
    QCOMPARE(result.exitCode, 1);
    const QJsonObject report = parse(result);
    QCOMPARE(verdictOf(report, "reach", "node1").value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
    const QJsonObject reach = verdictOf(report, "reach", "node2");
    QCOMPARE(reach.value(QStringLiteral("status")).toString(), QStringLiteral("fail"));
    QCOMPARE(reach.value(QStringLiteral("details")).toObject().value(QStringLiteral("error_kind")).toString(),
             QStringLiteral("unreachable"));
    QVERIFY2(reach.value(QStringLiteral("fix"))
                 .toString()
                 .contains(QStringLiteral("node2 has no route to ") + m_nodes->nodeAddress(0)),
             qPrintable(reach.value(QStringLiteral("fix")).toString()));
}

void tst_HostsDoctor::wrongInterfaceIsNamed()
{
    REQUIRE_NODES();
    const auto missing = accel({"hosts", "doctor", "node0,node1", "--json", "--main_process_port", "29615",
                                "--remote_env", "GLOO_SOCKET_IFNAME=nonexistent"});
    QCOMPARE(missing.exitCode, 1);
    for (const QString &host : {QStringLiteral("node0"), QStringLiteral("node1")}) {
        const QJsonObject interface = verdictOf(parse(missing), "interface", host);
        QCOMPARE(interface.value(QStringLiteral("status")).toString(), QStringLiteral("fail"));
        QVERIFY2(interface.value(QStringLiteral("message"))
                     .toString()
                     .contains(QStringLiteral("GLOO_SOCKET_IFNAME=nonexistent names no interface of ") + host),
                 qPrintable(interface.value(QStringLiteral("message")).toString()));
        QVERIFY2(interface.value(QStringLiteral("fix")).toString().contains(QStringLiteral("eth0")),
                 qPrintable(interface.value(QStringLiteral("fix")).toString()));
    }
    const auto loopback = accel(
        {"hosts", "doctor", "node0,node1", "--main_process_port", "29615", "--remote_env", "GLOO_SOCKET_IFNAME=lo"});
    QCOMPARE(loopback.exitCode, 1);
    QVERIFY2(loopback.out.contains(QStringLiteral("names node1's loopback interface lo")), qPrintable(loopback.out));
}

void tst_HostsDoctor::allReduceRunsTheRuntimeSelfTestOnEveryNode()
{
    REQUIRE_NODES();
    if (!QFile::exists(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))))
        QSKIP("no accel-worker in this build: the all-reduce needs the libtorch runtime");
    QElapsedTimer clock;
    clock.start();
    const auto result = accel({"hosts", "doctor", "node0,node1,node2", "--json", "--allreduce", "--main_process_port",
                               "29618", "--remote_env", "OMP_NUM_THREADS=1"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.out + result.err));
    const QJsonObject report = parse(result);
    for (int node = 0; node < 3; ++node) {
        const QJsonObject allreduce = verdictOf(report, "allreduce", QStringLiteral("node%1").arg(node));
        QCOMPARE(allreduce.value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
        QCOMPARE(allreduce.value(QStringLiteral("details")).toObject().value(QStringLiteral("state")).toString(),
                 QStringLiteral("succeeded"));
    }
    qInfo("accel hosts doctor --allreduce on 3 nodes: %lld ms", static_cast<long long>(clock.elapsed()));
}

void tst_HostsDoctor::allReduceFailsWhenOnlyTheMainPortIsOpen()
{
    REQUIRE_NODES();
    if (!QFile::exists(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))))
        QSKIP("no accel-worker in this build: the all-reduce needs the libtorch runtime");
    // Machine 0 drops every TCP port but sshd's and the main one: the TCPStore is reachable, the
    // ports gloo picks between the ranks are not.
    const int port = 29619;
    const QString ns = m_nodes->nodeNamespace(0);
    QList<QStringList> steps;
    QList<QStringList> undo = {{"-n", ns, "rule", "add", "pref", "0", "lookup", "local"},
                               {"-n", ns, "rule", "del", "pref", "20"}};
    int preference = 10;
    for (const QString &range :
         {QStringLiteral("1-21"), QStringLiteral("23-%1").arg(port - 1), QStringLiteral("%1-65534").arg(port + 1)}) {
        const QStringList rule = {
            "pref", QString::number(preference++), "iif", "eth0", "ipproto", "tcp", "dport", range, "blackhole"};
        steps << QStringList{"-n", ns, "rule", "add"} + rule;
        undo << QStringList{"-n", ns, "rule", "del"} + rule;
    }
    steps << QStringList{"-n", ns, "rule", "add", "pref", "20", "lookup", "local"}
          << QStringList{"-n", ns, "rule", "del", "pref", "0"};
    const NetworkChange firewall(steps, undo);
    QVERIFY2(firewall.error().isEmpty(), qPrintable(firewall.error()));
    const auto result = accel({"hosts", "doctor", "node0,node1", "--json", "--allreduce", "--allreduce_timeout", "3",
                               "--main_process_port", QString::number(port), "--remote_env", "OMP_NUM_THREADS=1"});
    QCOMPARE(result.exitCode, 1);
    const QJsonObject report = parse(result);
    QCOMPARE(verdictOf(report, "reach", "node1").value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
    bool named = false;
    for (const QString &host : {QStringLiteral("node0"), QStringLiteral("node1")}) {
        const QJsonObject allreduce = verdictOf(report, "allreduce", host);
        if (allreduce.value(QStringLiteral("status")).toString() != QLatin1String("fail"))
            continue;
        named = true;
        QVERIFY2(allreduce.value(QStringLiteral("message"))
                     .toString()
                     .contains(QStringLiteral("the runtime's self-test failed on ") + host),
                 qPrintable(allreduce.value(QStringLiteral("message")).toString()));
        QVERIFY2(allreduce.value(QStringLiteral("fix")).toString().contains(QStringLiteral("all TCP ports")),
                 qPrintable(allreduce.value(QStringLiteral("fix")).toString()));
    }
    QVERIFY2(named, qPrintable(result.out));
}

void tst_HostsDoctor::launchWithHostsStartsEveryNode()
{
    REQUIRE_NODES();
    QTemporaryDir data;
    const QString marker = QStringLiteral("launchhosts-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const auto launched = accel({"launch", "--hosts", "node0,node1", "--json", "--record", record, "--remote_env",
                                 "XDG_DATA_HOME=" + data.path(), "--main_process_port", "29616", "--num_processes", "2",
                                 "--no_python", fakechild, "--marker", marker, "--env-json",
                                 data.filePath(QStringLiteral("env-{rank}.json")), "--hang"});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonObject report = parse(launched);
    QCOMPARE(report.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.hosts-launch"));
    QCOMPARE(report.value(QStringLiteral("record")).toString(), record);
    QCOMPARE(report.value(QStringLiteral("main_process_port")).toInt(), 29616);
    for (const QJsonValue &node : report.value(QStringLiteral("nodes")).toArray())
        QCOMPARE(node.toObject().value(QStringLiteral("socket_ifname")).toString(), QStringLiteral("eth0"));
    for (int rank = 0; rank < 2; ++rank) {
        const QJsonObject env = rankEnvironment(data, rank);
        QVERIFY2(!env.isEmpty(), qPrintable(QStringLiteral("rank %1 wrote no environment").arg(rank)));
        QCOMPARE(env.value(QStringLiteral("MASTER_ADDR")).toString(), m_nodes->nodeAddress(0));
        QCOMPARE(env.value(QStringLiteral("MASTER_PORT")).toString(), QStringLiteral("29616"));
        QCOMPARE(env.value(QStringLiteral("GLOO_SOCKET_IFNAME")).toString(), QStringLiteral("eth0"));
    }
    expectRanksInNodesThenStop(marker, {0, 1}, record);
    if (QTest::currentTestFailed())
        return;
}

// `accel config cluster` writes one config per node; `accel launch --hosts ... --config_dir DIR`
// starts each node with its own (the namespaces share this file system, as cluster hosts share
// one): 2 nodes x 2 ranks, global ranks 0-3, rank 0's address and port from the configs. Configs
// that do not fit the hosts are refused before anything starts.
void tst_HostsDoctor::launchWithTheNodeConfigsOfConfigCluster()
{
    REQUIRE_NODES();
    QTemporaryDir data;
    const QString configs = data.filePath(QStringLiteral("cluster"));
    const auto written = accel({"config", "cluster", "--hosts", m_nodes->nodeAddress(0) + "," + m_nodes->nodeAddress(1),
                                "--procs_per_host", "2", "--port", "29618", "--out_dir", configs});
    QVERIFY2(written.exitCode == 0, qPrintable(written.out + written.err));
    QVERIFY2(written.out.contains("--config_dir " + configs), qPrintable(written.out));

    // Refused, nothing started: a node config missing, a host more or fewer than the configs were
    // written for, flags the configs set, a config in another host's place.
    const QStringList tail = {"--no_python", "true"};
    QVERIFY(QDir().mkpath(data.filePath("partial")));
    QVERIFY(QFile::copy(configs + "/node-0.yaml", data.filePath("partial/node-0.yaml")));
    auto refused =
        accel(QStringList{"launch", "--hosts", "node0,node1", "--config_dir", data.filePath("partial")} + tail);
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains(data.filePath("partial/node-1.yaml")) && refused.err.contains("missing"),
             qPrintable(refused.err));
    refused = accel(QStringList{"launch", "--hosts", "node0,node1,node2", "--config_dir", configs} + tail);
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("num_machines is 2 but 3 host(s) are named"), qPrintable(refused.err));
    refused = accel(QStringList{"launch", "--hosts", "node0", "--config_dir", configs} + tail);
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("num_machines is 2 but 1 host(s) are named"), qPrintable(refused.err));
    refused =
        accel(QStringList{"launch", "--hosts", "node0,node1", "--config_dir", configs, "--main_process_port", "29619"} +
              tail);
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("--main_process_port") && refused.err.contains("--config_dir"),
             qPrintable(refused.err));
    refused = accel(QStringList{"launch", "--hosts", "node0,node1", "--config_dir", configs, "--config_file",
                                configs + "/node-0.yaml"} +
                    tail);
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("--config_file: with --config_dir"), qPrintable(refused.err));
    QDir().mkpath(data.filePath("swapped"));
    QVERIFY(QFile::copy(configs + "/node-0.yaml", data.filePath("swapped/node-0.yaml")));
    QVERIFY(QFile::copy(configs + "/node-0.yaml", data.filePath("swapped/node-1.yaml")));
    refused = accel(QStringList{"launch", "--hosts", "node0,node1", "--config_dir", data.filePath("swapped")} + tail);
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("node-1.yaml") && refused.err.contains("machine_rank is 0"), qPrintable(refused.err));

    const QString marker = QStringLiteral("launchconfigs-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const auto launched =
        accel({"launch", "--hosts", "node0,node1", "--config_dir", configs, "--json", "--record", record,
               "--remote_env", "XDG_DATA_HOME=" + data.path(), "--no_python", fakechild, "--marker", marker,
               "--env-json", data.filePath(QStringLiteral("env-{rank}.json")), "--hang"});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonObject report = parse(launched);
    QCOMPARE(report.value(QStringLiteral("main_process_ip")).toString(), m_nodes->nodeAddress(0));
    QCOMPARE(report.value(QStringLiteral("main_process_port")).toInt(), 29618);
    for (int rank = 0; rank < 4; ++rank) {
        const QJsonObject env = rankEnvironment(data, rank);
        QVERIFY2(!env.isEmpty(), qPrintable(QStringLiteral("rank %1 wrote no environment").arg(rank)));
        QCOMPARE(env.value(QStringLiteral("MASTER_ADDR")).toString(), m_nodes->nodeAddress(0));
        QCOMPARE(env.value(QStringLiteral("MASTER_PORT")).toString(), QStringLiteral("29618"));
        QCOMPARE(env.value(QStringLiteral("WORLD_SIZE")).toString(), QStringLiteral("4"));
        QCOMPARE(env.value(QStringLiteral("RANK")).toString(), QString::number(rank));
    }
    QList<qint64> ranks;
    QTRY_COMPARE_WITH_TIMEOUT((ranks = accel::test::processesWithMarker(marker, QStringLiteral("fakechild"))).size(), 4,
                              20000);
    QMap<ino_t, int> perNode;
    for (qint64 pid : ranks)
        ++perNode[netnsInode(QStringLiteral("/proc/%1/ns/net").arg(pid))];
    QCOMPARE(perNode.value(netnsInode(QStringLiteral("/run/netns/") + m_nodes->nodeNamespace(0))), 2);
    QCOMPARE(perNode.value(netnsInode(QStringLiteral("/run/netns/") + m_nodes->nodeNamespace(1))), 2);
    const auto stopped = accel({"hosts", "stop", record});
    QVERIFY2(stopped.exitCode == 0, qPrintable(stopped.out + stopped.err));
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker).isEmpty(), 20000);
}

void tst_HostsDoctor::launchWithHostsStartsNothingWhenThePreflightFails()
{
    REQUIRE_NODES();
    const int port = 29617;
    const auto firewall = dropMainPort(port);
    QVERIFY2(firewall->error().isEmpty(), qPrintable(firewall->error()));
    QTemporaryDir data;
    const QString marker = QStringLiteral("launchhosts-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const auto launched =
        accel({"launch", "--hosts", "node0,node1", "--record", record, "--remote_env", "XDG_DATA_HOME=" + data.path(),
               "--main_process_port", QString::number(port), "--num_processes", "2", "--no_python",
               QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild")), "--marker", marker, "--hang"});
    QCOMPARE(launched.exitCode, 1);
    QVERIFY2(launched.out.contains(
                 QStringLiteral("node1 (machine 1): node1 cannot reach %1:%2").arg(m_nodes->nodeAddress(0)).arg(port)),
             qPrintable(launched.out));
    QVERIFY(!QFile::exists(record));
    QVERIFY(accel::test::processesWithMarker(marker).isEmpty());
    QVERIFY(QDir(data.filePath(QStringLiteral("accel-studio/runs"))).isEmpty());
}

// This machine loses its route to node 2 (only node 0 and node 1, on the same bridge, still reach
// it); an alias with `ProxyJump node0` (libssh 0.10 runs OpenSSH's `ssh -W` through node 0, with
// this SSH folder's config, keys and known_hosts) reaches node 2 and runs accel there.
void tst_HostsDoctor::jumpHostReachesANodeThisMachineCannot()
{
    REQUIRE_NODES();
    if (!QFileInfo(QStringLiteral("/usr/bin/ssh")).isExecutable())
        QSKIP("the OpenSSH client (ssh) is not installed; ProxyJump runs it");
    const QString route = m_nodes->nodeAddress(2) + QStringLiteral("/32");
    const NetworkChange unreachable({{"route", "add", "unreachable", route}}, {{"route", "del", "unreachable", route}});
    QVERIFY2(unreachable.error().isEmpty(), qPrintable(unreachable.error()));
    const auto direct = accel({"hosts", "check", "node2", "--json"});
    QCOMPARE(direct.exitCode, 1);

    // node2's own alias block, renamed, with the jump host added.
    const QString configPath = QDir(m_nodes->clientDirectory()).filePath(QStringLiteral("config"));
    QFile file(configPath);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray original = file.readAll();
    file.close();
    const QString text = QString::fromUtf8(original);
    const int start = text.indexOf(QStringLiteral("Host node2\n"));
    QVERIFY(start >= 0);
    int end = text.indexOf(QStringLiteral("\nHost "), start + 1);
    const QString block = text.mid(start, end < 0 ? -1 : end - start + 1);
    const QString jump =
        QString(block).replace(QStringLiteral("Host node2\n"), QStringLiteral("Host node2-via-node0\n")) +
        QStringLiteral("  ProxyJump node0\n");
    struct Restore {
        QString path;
        QByteArray content;
        ~Restore()
        {
            QFile f(path);
            if (f.open(QIODevice::WriteOnly))
                f.write(content);
        }
    } restore{configPath, original};
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(jump.toUtf8() + original);
    file.close();

    QElapsedTimer clock;
    clock.start();
    const auto through = accel({"hosts", "check", "node2-via-node0", "--json"});
    QVERIFY2(through.exitCode == 0, qPrintable(through.out + through.err));
    const QJsonArray hosts = parse(through).value(QStringLiteral("hosts")).toArray();
    QCOMPARE(hosts.size(), 1);
    QCOMPARE(hosts.at(0).toObject().value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
    qInfo("accel hosts check through the jump host: %lld ms", static_cast<long long>(clock.elapsed()));
}

// One fakechild rank tagged `marker` runs in each of `nodes`' namespaces; then `accel hosts stop
// RECORD` ends them all.
void tst_HostsDoctor::expectRanksInNodesThenStop(const QString &marker, const QList<int> &nodes, const QString &record)
{
    QList<qint64> ranks;
    QTRY_COMPARE_WITH_TIMEOUT((ranks = accel::test::processesWithMarker(marker, QStringLiteral("fakechild"))).size(),
                              nodes.size(), 20000);
    QSet<ino_t> seen;
    for (qint64 pid : ranks)
        seen.insert(netnsInode(QStringLiteral("/proc/%1/ns/net").arg(pid)));
    QSet<ino_t> expected;
    for (int node : nodes)
        expected.insert(netnsInode(QStringLiteral("/run/netns/") + m_nodes->nodeNamespace(node)));
    QCOMPARE(seen, expected);
    const auto stopped = accel({"hosts", "stop", record});
    QVERIFY2(stopped.exitCode == 0, qPrintable(stopped.out + stopped.err));
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker).isEmpty(), 20000);
}

// `accel launch ARGS` started in node `node`'s network namespace (as a user types it on that node),
// its ranks on the node's eth0.
std::unique_ptr<QProcess> tst_HostsDoctor::launchInNode(int node, const QStringList &arguments) const
{
    auto process = std::make_unique<QProcess>();
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("GLOO_SOCKET_IFNAME"), QStringLiteral("eth0"));
    environment.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
    process->setProcessEnvironment(environment);
    process->start(QStringLiteral("ip"),
                   QStringList{"netns", "exec", m_nodes->nodeNamespace(node), m_accel, "launch"} + arguments);
    return process;
}

// Two machines started with the same `accel launch --rdzv_backend c10d` and no --machine_rank, as
// Accelerate's SLURM example starts them: they meet at machine 0's address, agree on ranks, and
// train one 2-rank gpt job (one rank per node). Node 1 starts first and waits for the host.
void tst_HostsDoctor::c10dLaunchesWithoutMachineRanksFormOneWorldAndTrain()
{
    REQUIRE_NODES();
    if (!QFile::exists(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))))
        QSKIP("no accel-worker in this build: the training needs the libtorch runtime");
    QTemporaryDir data;
    const QString job = accel::test::writeTinyGptJob(data.path(), QStringLiteral("c10d"), 6, 60);
    QVERIFY(!job.isEmpty());
    QElapsedTimer clock;
    clock.start();
    std::vector<std::unique_ptr<QProcess>> machines(2);
    for (int node : {1, 0}) {
        machines[size_t(node)] = launchInNode(
            node, {"--cpu", "--num_machines", "2", "--num_processes", "2", "--rdzv_backend", "c10d",
                   "--main_process_ip", m_nodes->nodeAddress(0), "--main_process_port", "29619", "--rdzv_conf",
                   "join_timeout=60", "--run_dir", data.filePath(QStringLiteral("node%1").arg(node)), "--job", job});
        if (node == 1)
            QThread::msleep(300);
    }
    for (const auto &process : machines) {
        QVERIFY(process->waitForFinished(90000));
        QVERIFY2(process->exitCode() == 0, process->readAllStandardError().constData());
    }
    for (int node = 0; node < 2; ++node) {
        QFile manifestFile(data.filePath(QStringLiteral("node%1/run.json").arg(node)));
        QVERIFY(manifestFile.open(QIODevice::ReadOnly));
        const QJsonObject rendezvous =
            QJsonDocument::fromJson(manifestFile.readAll()).object().value(QStringLiteral("rendezvous")).toObject();
        QCOMPARE(rendezvous.value(QStringLiteral("machine_rank")).toInt(-1), node); // node 0 has the address
        QCOMPARE(rendezvous.value(QStringLiteral("master_addr")).toString(), m_nodes->nodeAddress(0));
        QCOMPARE(rendezvous.value(QStringLiteral("master_port")).toInt(), 29619); // one port, as a static launch
        const QJsonArray machinesSeen = rendezvous.value(QStringLiteral("machines")).toArray();
        QCOMPARE(machinesSeen.size(), 2);
        QVERIFY(machinesSeen.at(1).toString().contains(m_nodes->nodeAddress(1)));
    }
    QFile log(data.filePath(QStringLiteral("node0/logs/rank0.log")));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QByteArray text = log.readAll();
    QVERIFY2(text.contains("2 process(es), DDP") && text.contains("done: 6 steps"), text.constData());
    QVERIFY(QFile::exists(data.filePath(QStringLiteral("node1/logs/rank1.log"))));
    qInfo("two c10d launches on 2 nodes, 6 steps: %lld ms", static_cast<long long>(clock.elapsed()));
}

// num_machines 3, two nodes come: after join_timeout both say who joined as which machine and
// which machine rank never came, and fail (exit 1) without starting a rank.
void tst_HostsDoctor::c10dNamesTheMachineThatNeverCame()
{
    REQUIRE_NODES();
    QTemporaryDir data;
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    QElapsedTimer clock;
    clock.start();
    std::vector<std::unique_ptr<QProcess>> machines;
    for (int node = 0; node < 2; ++node)
        machines.push_back(
            launchInNode(node, {"--cpu", "--num_machines", "3", "--num_processes", "3", "--rdzv_backend", "c10d",
                                "--rdzv_endpoint", m_nodes->nodeAddress(0) + ":29620", "--rdzv_conf", "join_timeout=2",
                                "--run_dir", data.filePath(QStringLiteral("node%1").arg(node)), "--no_python",
                                fakechild, "--touch", data.filePath(QStringLiteral("rank-{rank}-started"))}));
    for (const auto &process : machines) {
        QVERIFY(process->waitForFinished(30000));
        const QString err = QString::fromLocal8Bit(process->readAllStandardError());
        QVERIFY2(process->exitCode() == 1, qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("timed out after join_timeout 2 s: 2 of num_machines 3 joined")) &&
                     err.contains(QStringLiteral("(%1) as machine 0").arg(m_nodes->nodeAddress(0))) &&
                     err.contains(QStringLiteral("(%1) as machine 1").arg(m_nodes->nodeAddress(1))) &&
                     err.contains(QStringLiteral("machine 2 never came")),
                 qPrintable(err));
    }
    QVERIFY(QDir(data.path()).entryList({QStringLiteral("rank-*")}).isEmpty());
    qInfo("c10d join timeout of 2 s named: %lld ms", static_cast<long long>(clock.elapsed()));
}

// A hostfile or filter that cannot be used is refused before any host is contacted (exit 2),
// naming the file and line, or the filter and what it names.
void tst_HostsDoctor::hostfileErrorsNameFileAndLine()
{
    QTemporaryDir data;
    auto write = [&](const QString &name, const QByteArray &text) { return writeTestFile(data, name, text); };
    const QString bad = write(QStringLiteral("bad"), "# two workers\nnode0 slots=2\n\nnode1 slots=two\n");
    const QString twice = write(QStringLiteral("twice"), "node0 slots=1\nnode0 slots=1\n");
    const QString good = write(QStringLiteral("good"), "node0 slots=2\nnode1 slots=2\n");
    const QString mpiBad = write(QStringLiteral("mpi"), "node0 slots=2 max_slots=4\nnode1:2\nnode2 cpus=3\n");
    const QString uneven = write(QStringLiteral("uneven"), "node0:2\nnode1:1\n");
    const struct {
        QStringList arguments;
        QString message;
    } cases[] = {
        {{"--deepspeed_hostfile", bad}, bad + QStringLiteral(": line 4: 'node1 slots=two': slots must be a number")},
        {{"--deepspeed_hostfile", twice},
         twice + QStringLiteral(": line 2: host node0 is listed again (first on line 1)")},
        {{"--mpirun_hostfile", mpiBad}, mpiBad + QStringLiteral(": line 3: 'node2 cpus=3': expected")},
        {{"--mpirun_hostfile", uneven}, QStringLiteral("different numbers of slots (node0: 2, node1: 1)")},
        {{"--deepspeed_hostfile", good, "--deepspeed_inclusion_filter", "node7"},
         QStringLiteral("deepspeed_inclusion_filter: host node7 is not in the hostfile")},
        {{"--deepspeed_hostfile", good, "--deepspeed_exclusion_filter", "node0:5"},
         QStringLiteral("host node0: slot '5' is not one of its slots 0-1")},
        {{"--deepspeed_hostfile", good, "--deepspeed_inclusion_filter", "node0", "--deepspeed_exclusion_filter",
          "node1"},
         QStringLiteral("mutually exclusive")},
        {{"--deepspeed_hostfile", good, "--deepspeed_inclusion_filter", "node0:0@node1"},
         QStringLiteral("keeps different slots on different hosts")},
        {{"--deepspeed_hostfile", good, "--hosts", "node0"}, QStringLiteral("both name the hosts")},
    };
    for (const auto &c : cases) {
        const auto result = accel(QStringList{"launch"} + c.arguments + QStringList{"--no_python", "/bin/true"});
        QVERIFY2(result.exitCode == 2 && result.err.contains(c.message),
                 qPrintable(c.arguments.join(' ') + QStringLiteral(" -> ") + result.err));
    }
}

// A DeepSpeed hostfile of three nodes and an exclusion filter: accel launch starts on the two hosts
// left, over SSH (one machine each, machine 0 first), with the ranks the slots give (1 each).
void tst_HostsDoctor::deepspeedHostfileWithFilterLaunchesOnTheHostsLeft()
{
    REQUIRE_NODES();
    QTemporaryDir data;
    const QString hostfile =
        writeTestFile(data, QStringLiteral("hostfile"), "node0 slots=1\nnode1 slots=1\nnode2 slots=1\n");
    QVERIFY(!hostfile.isEmpty());
    const QString marker = QStringLiteral("hostfile-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    QElapsedTimer clock;
    clock.start();
    const auto launched = accel({"launch", "--deepspeed_hostfile", hostfile, "--deepspeed_exclusion_filter", "node1",
                                 "--json", "--record", record, "--remote_env", "XDG_DATA_HOME=" + data.path(),
                                 "--main_process_port", "29621", "--no_python", fakechild, "--marker", marker,
                                 "--env-json", data.filePath(QStringLiteral("env-{rank}.json")), "--hang"});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    QVERIFY2(launched.err.contains(QStringLiteral("launching on node0, node2 (2 of 3 host(s); "
                                                  "deepspeed_exclusion_filter node1), 2 rank(s) from the slots")),
             qPrintable(launched.err));
    for (int rank = 0; rank < 2; ++rank) {
        const QJsonObject env = rankEnvironment(data, rank);
        QVERIFY2(!env.isEmpty(), qPrintable(QStringLiteral("rank %1 wrote no environment").arg(rank)));
        QCOMPARE(env.value(QStringLiteral("WORLD_SIZE")).toString(), QStringLiteral("2"));
        QCOMPARE(env.value(QStringLiteral("MASTER_ADDR")).toString(), m_nodes->nodeAddress(0));
    }
    expectRanksInNodesThenStop(marker, {0, 2}, record);
    if (QTest::currentTestFailed())
        return;
    qInfo("deepspeed hostfile launch on 2 of 3 nodes, started and stopped: %lld ms",
          static_cast<long long>(clock.elapsed()));
}

// The launch line of Accelerate's examples/slurm/submit_multicpu.sh, with accel for accelerate: an
// MPI hostfile of bare host names (as `scontrol show hostname` writes it), --rdzv_backend c10d,
// machine 0's address and port, and Accelerate 1.0's --mpirun_ccl. The ranks start on both hosts
// over SSH, meet at node 0's address and get GROUP_RANK 0 and 1 on that one port.
void tst_HostsDoctor::accelerateMultiCpuSlurmExampleLineLaunchesOverTheMpiHostfile()
{
    REQUIRE_NODES();
    QTemporaryDir data;
    const QString hostfile = writeTestFile(data, QStringLiteral("hostfile"), "node0\nnode1\n");
    QVERIFY(!hostfile.isEmpty());
    const QString marker = QStringLiteral("mpihostfile-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const auto launched = accel({"launch",
                                 "--num_processes",
                                 "2",
                                 "--num_machines",
                                 "2",
                                 "--rdzv_backend",
                                 "c10d",
                                 "--main_process_ip",
                                 m_nodes->nodeAddress(0),
                                 "--main_process_port",
                                 "29622",
                                 "--mpirun_hostfile",
                                 hostfile,
                                 "--mpirun_ccl",
                                 "2",
                                 "--record",
                                 record,
                                 "--remote_env",
                                 "XDG_DATA_HOME=" + data.path(),
                                 "--no_python",
                                 fakechild,
                                 "--marker",
                                 marker,
                                 "--env-json",
                                 data.filePath(QStringLiteral("env-{rank}.json")),
                                 "--hang"});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    for (int rank = 0; rank < 2; ++rank) {
        const QJsonObject env = rankEnvironment(data, rank);
        QVERIFY2(!env.isEmpty(), qPrintable(QStringLiteral("rank %1 wrote no environment").arg(rank)));
        QCOMPARE(env.value(QStringLiteral("GROUP_RANK")).toString(), QString::number(rank));
        QCOMPARE(env.value(QStringLiteral("WORLD_SIZE")).toString(), QStringLiteral("2"));
        QCOMPARE(env.value(QStringLiteral("MASTER_ADDR")).toString(), m_nodes->nodeAddress(0));
        QCOMPARE(env.value(QStringLiteral("MASTER_PORT")).toString(), QStringLiteral("29622"));
    }
    expectRanksInNodesThenStop(marker, {0, 1}, record);
}

QTEST_GUILESS_MAIN(tst_HostsDoctor)
#include "tst_hostsdoctor.moc"
