// `accel hosts check` end to end over a real sshd on loopback (SshTestServer): the remote accel is
// this build's own binary (ACCEL_REMOTE_BIN / --remote_accel), the SSH folder comes from
// ACCEL_SSH_DIR. Covers ok hosts, an unknown host key (refused, then accepted), accel missing or
// of another version, an unreachable host beside a good one, and bad arguments; then `accel hosts
// launch` and `accel hosts stop` through the record (every node records "stopped", also when one
// node's ranks end before its own stop's signal arrives).
#include "tests/helpers/netnssshnodes.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <QUuid>

#include <sys/stat.h>

namespace {

QJsonObject parse(const accel::test::ProcessResult &result)
{
    return QJsonDocument::fromJson(result.out.toUtf8()).object();
}

QJsonObject runManifest(const QString &runDir)
{
    QFile file(QDir(runDir).filePath(QStringLiteral("run.json")));
    return file.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(file.readAll()).object() : QJsonObject();
}

void writeExecutable(const QString &path, const QString &text)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(text.toUtf8());
    file.close();
    file.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
}

QJsonObject hostEntry(const QJsonObject &report, const QString &host)
{
    for (const QJsonValue &value : report.value(QStringLiteral("hosts")).toArray()) {
        if (value.toObject().value(QStringLiteral("host")).toString() == host)
            return value.toObject();
    }
    return {};
}

} // namespace

class tst_HostsCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void everyHostIsCheckedAndOk();
    void textOutputSaysOkPerHost();
    void localIsThisMachineBesideSshHosts();
    void unknownHostKeyIsRefusedThenAccepted();
    void missingRemoteAccelSaysWhatToDo();
    void anotherVersionIsReported();
    void unreachableHostDoesNotHideTheOthers();
    void badArgumentsExitWithTwo();
    void namesThatCannotBeHostsAreBadInput();
    void launchStartsOneSupervisorPerHostAndStopReachesEveryNode();
    void launchStartsNothingWhenANodeFailsItsPreflight();
    void launchRefusesFlagsItSetsItself();
    void stopReadsTheRecordWithItsOneReader();
    void launchStopsTheStartedNodesWhenAnotherFailsToStart();
    void launchAcrossTwoNetworkNamespaces();
    void stopIsRecordedOnEveryNodeWhenAPeerEndsFirst();

private:
    accel::test::ProcessResult hosts(const QStringList &arguments, const QStringList &extraEnv = {});
    accel::test::SshTestServer m_server;
    QString m_accel;
    QString m_version;
};

void tst_HostsCli::initTestCase()
{
    if (const QString reason = accel::test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    m_accel = QDir(accel::test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFile::exists(m_accel), "build the accel target");
    qunsetenv("SSH_AUTH_SOCK");
    const QString error = m_server.start();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_server.addAlias(QStringLiteral("accel-test-2"));
    const auto version = accel::test::runAccel({QStringLiteral("--version")});
    m_version = version.out.trimmed().section(QLatin1Char(' '), 1);
    QVERIFY(!m_version.isEmpty());
}

accel::test::ProcessResult tst_HostsCli::hosts(const QStringList &arguments, const QStringList &extraEnv)
{
    return accel::test::runAccel(QStringList{QStringLiteral("hosts")} + arguments, 60000, {},
                                 QStringList{QStringLiteral("ACCEL_SSH_DIR=") + m_server.clientDirectory(),
                                             QStringLiteral("ACCEL_REMOTE_BIN=") + m_accel,
                                             QStringLiteral("SSH_AUTH_SOCK")} +
                                     extraEnv);
}

void tst_HostsCli::everyHostIsCheckedAndOk()
{
    const auto result = hosts({"check", "accel-test,accel-test-2", "--json"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.out + result.err));
    const QJsonObject report = parse(result);
    QCOMPARE(report.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.hosts-check"));
    QCOMPARE(report.value(QStringLiteral("version")).toInt(), 1);
    QCOMPARE(report.value(QStringLiteral("ok")).toBool(), true);
    QCOMPARE(report.value(QStringLiteral("accel_version")).toString(), m_version);
    QCOMPARE(report.value(QStringLiteral("hosts")).toArray().size(), 2);
    for (const QString &host : {QStringLiteral("accel-test"), QStringLiteral("accel-test-2")}) {
        const QJsonObject entry = hostEntry(report, host);
        QCOMPARE(entry.value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
        QCOMPARE(entry.value(QStringLiteral("accel_version")).toString(), m_version);
        const QJsonObject env = entry.value(QStringLiteral("env")).toObject();
        QCOMPARE(env.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.env"));
        QVERIFY(env.value(QStringLiteral("cpu")).toObject().value(QStringLiteral("logical_cpus")).toInt() > 0);
    }
}

void tst_HostsCli::textOutputSaysOkPerHost()
{
    const auto result = hosts({"check", "accel-test,accel-test-2"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.out + result.err));
    QVERIFY2(result.out.contains(QStringLiteral("accel-test: ok, accel ") + m_version), qPrintable(result.out));
    QVERIFY2(result.out.contains(QStringLiteral("accel-test-2: ok, accel ") + m_version), qPrintable(result.out));
}

// launcher/hostfactory: "local" runs this machine's accel without SSH, beside SSH destinations.
void tst_HostsCli::localIsThisMachineBesideSshHosts()
{
    const auto result = hosts({"check", "local,accel-test", "--json"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.out + result.err));
    const QJsonObject report = parse(result);
    QCOMPARE(report.value(QStringLiteral("hosts")).toArray().size(), 2);
    for (const QString &host : {QStringLiteral("local"), QStringLiteral("accel-test")}) {
        const QJsonObject entry = hostEntry(report, host);
        QCOMPARE(entry.value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
        QCOMPARE(entry.value(QStringLiteral("accel_version")).toString(), m_version);
    }
    // Without sshd's help: an SSH directory that has no config, no key and no known host.
    QTemporaryDir empty;
    const auto alone = accel::test::runAccel(
        {QStringLiteral("hosts"), QStringLiteral("check"), QStringLiteral("local"), QStringLiteral("--json")}, 60000,
        {}, {QStringLiteral("ACCEL_SSH_DIR=") + empty.path()});
    QVERIFY2(alone.exitCode == 0, qPrintable(alone.out + alone.err));
    QCOMPARE(hostEntry(parse(alone), QStringLiteral("local")).value(QStringLiteral("status")).toString(),
             QStringLiteral("ok"));
}

void tst_HostsCli::unknownHostKeyIsRefusedThenAccepted()
{
    const QString knownHosts = m_server.writeClientFile(QStringLiteral("known_hosts_cli"), QByteArray());
    m_server.addAlias(QStringLiteral("accel-test-new"), {QStringLiteral("UserKnownHostsFile ") + knownHosts});
    const auto refused = hosts({"check", "accel-test-new", "--json"});
    QCOMPARE(refused.exitCode, 1);
    const QJsonObject entry = hostEntry(parse(refused), QStringLiteral("accel-test-new"));
    QCOMPARE(entry.value(QStringLiteral("status")).toString(), QStringLiteral("host_key_unknown"));
    const QString message = entry.value(QStringLiteral("message")).toString();
    QVERIFY2(message.contains(m_server.hostKeyFingerprint()), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("--accept-new-host-key")), qPrintable(message));
    // The key, for a program that asks the user (the studio's dialog): no need to read the message.
    const QJsonObject key = entry.value(QStringLiteral("host_key")).toObject();
    QCOMPARE(key.value(QStringLiteral("fingerprint")).toString(), m_server.hostKeyFingerprint());
    QCOMPARE(key.value(QStringLiteral("type")).toString(), QStringLiteral("ssh-ed25519"));
    QCOMPARE(key.value(QStringLiteral("known_hosts_name")).toString(),
             QStringLiteral("[127.0.0.1]:%1").arg(m_server.port()));
    QCOMPARE(key.value(QStringLiteral("known_hosts_file")).toString(), knownHosts);

    const auto accepted = hosts({"check", "accel-test-new", "--accept-new-host-key"});
    QVERIFY2(accepted.exitCode == 0, qPrintable(accepted.out + accepted.err));
    QFile file(knownHosts);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(!file.readAll().isEmpty());
    QCOMPARE(hosts({"check", "accel-test-new"}).exitCode, 0); // recorded: no flag needed any more
}

void tst_HostsCli::missingRemoteAccelSaysWhatToDo()
{
    const auto result = hosts({"check", "accel-test", "--remote_accel", "/opt/nowhere/accel", "--json"});
    QCOMPARE(result.exitCode, 1);
    const QJsonObject entry = hostEntry(parse(result), QStringLiteral("accel-test"));
    QCOMPARE(entry.value(QStringLiteral("status")).toString(), QStringLiteral("accel_not_found"));
    QVERIFY2(entry.value(QStringLiteral("message")).toString().contains(QStringLiteral("install accel there")),
             qPrintable(entry.value(QStringLiteral("message")).toString()));
    QVERIFY(entry.value(QStringLiteral("env")).isNull());
}

void tst_HostsCli::anotherVersionIsReported()
{
    QTemporaryDir dir;
    const QString fake = dir.filePath(QStringLiteral("accel"));
    QFile script(fake);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write("#!/bin/sh\necho '{\"schema\": \"accel.env\", \"version\": 1, \"accel_version\": \"0.0.1\"}'\n");
    script.close();
    script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    const auto result = hosts({"check", "accel-test"}, {QStringLiteral("ACCEL_REMOTE_BIN=") + fake});
    QCOMPARE(result.exitCode, 1);
    QVERIFY2(result.out.contains(QStringLiteral("accel-test: version_mismatch: accel 0.0.1 on accel-test, but this "
                                                "is accel ") +
                                 m_version),
             qPrintable(result.out));
}

void tst_HostsCli::unreachableHostDoesNotHideTheOthers()
{
    const QString closed = QStringLiteral("127.0.0.1:%1").arg(accel::test::SshTestServer::freeLoopbackPort());
    const auto result = hosts({"check", "accel-test," + closed, "--json", "--timeout", "5"});
    QCOMPARE(result.exitCode, 1);
    const QJsonObject report = parse(result);
    QCOMPARE(report.value(QStringLiteral("ok")).toBool(), false);
    QCOMPARE(hostEntry(report, QStringLiteral("accel-test")).value(QStringLiteral("status")).toString(),
             QStringLiteral("ok"));
    const QJsonObject bad = hostEntry(report, closed);
    QCOMPARE(bad.value(QStringLiteral("status")).toString(), QStringLiteral("unreachable"));
    QVERIFY2(bad.value(QStringLiteral("message")).toString().contains(QStringLiteral("refused")),
             qPrintable(bad.value(QStringLiteral("message")).toString()));
}

void tst_HostsCli::badArgumentsExitWithTwo()
{
    QCOMPARE(hosts({"check"}).exitCode, 2);
    QCOMPARE(hosts({"probe", "accel-test"}).exitCode, 2);
    const auto timeout = hosts({"check", "accel-test", "--timeout", "soon"});
    QCOMPARE(timeout.exitCode, 2);
    QVERIFY2(timeout.err.contains(QStringLiteral("--timeout: expected seconds")) &&
                 timeout.err.contains(QStringLiteral("'soon'")),
             qPrintable(timeout.err));
    const auto help = hosts({"--help"});
    QCOMPARE(help.exitCode, 0);
    QVERIFY2(help.out.contains(QStringLiteral("check H1,H2")) && help.out.contains(QStringLiteral("stop RECORD")),
             qPrintable(help.out));
    for (const char *action : {"check", "launch", "stop"}) {
        const auto actionHelp = hosts({action, "--help"});
        QCOMPARE(actionHelp.exitCode, 0);
        QVERIFY2(actionHelp.out.contains(QStringLiteral("accept")), qPrintable(actionHelp.out));
    }
}

// Regression (hardening round 3): "h;cmd" was refused before connecting, but reported as
// unreachable with exit 1; "h:99999999999999999999999" aborted (std::stoul threw); a --remote_env key
// starting with "-S" reached env(1) as an option, which then ran a command of its own instead of
// accel. Each is bad input now: status invalid_host or an error naming --remote_env, exit 2, and the
// good host in the same list is still checked.
void tst_HostsCli::namesThatCannotBeHostsAreBadInput()
{
    const auto result = hosts({"check", "accel-test,h;cmd", "--json"});
    QCOMPARE(result.exitCode, 2);
    const QJsonObject report = parse(result);
    QCOMPARE(report.value(QStringLiteral("ok")).toBool(), false);
    QCOMPARE(hostEntry(report, QStringLiteral("accel-test")).value(QStringLiteral("status")).toString(),
             QStringLiteral("ok"));
    const QJsonObject bad = hostEntry(report, QStringLiteral("h;cmd"));
    QCOMPARE(bad.value(QStringLiteral("status")).toString(), QStringLiteral("invalid_host"));
    QVERIFY2(bad.value(QStringLiteral("message")).toString().startsWith(QStringLiteral("invalid host 'h;cmd'")),
             qPrintable(bad.value(QStringLiteral("message")).toString()));
    const auto port = hosts({"check", "h:99999999999999999999999"});
    QVERIFY2(!port.crashed, qPrintable(port.err));
    QCOMPARE(port.exitCode, 2);
    QVERIFY2(port.out.contains(QStringLiteral("h:99999999999999999999999: invalid_host: invalid port "
                                              "'99999999999999999999999' in host 'h:99999999999999999999999': "
                                              "expected 1-65535")),
             qPrintable(port.out + port.err));
    const QString marker =
        QDir::temp().filePath(QStringLiteral("accel-remote-env-%1").arg(QCoreApplication::applicationPid()));
    const auto env = hosts({"check", "accel-test", "--remote_env", "-Stouch " + marker + " ;X=1"});
    QCOMPARE(env.exitCode, 2);
    QVERIFY2(env.err.contains(QStringLiteral("--remote_env: expected KEY=VALUE with KEY a variable name")),
             qPrintable(env.err));
    QVERIFY(!QFile::exists(marker));
}

void tst_HostsCli::launchStartsOneSupervisorPerHostAndStopReachesEveryNode()
{
    QTemporaryDir data; // the nodes' run directories and what the ranks write
    const QString marker = QStringLiteral("hostslaunch-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const int port = accel::test::SshTestServer::freeLoopbackPort();
    const auto launched = hosts(
        {"launch", "accel-test,accel-test-2", "--json", "--main_process_port", QString::number(port), "--record",
         record, "--remote_env", "XDG_DATA_HOME=" + data.path(), "--", "--num_processes", "2", "--no_python", fakechild,
         "--marker", marker, "--env-json", data.filePath(QStringLiteral("env-{rank}.json")), "--hang"});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonObject report = parse(launched);
    QCOMPARE(report.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.hosts-launch"));
    QCOMPARE(report.value(QStringLiteral("record")).toString(), record);
    QCOMPARE(report.value(QStringLiteral("main_process_ip")).toString(), QStringLiteral("127.0.0.1"));
    const QJsonArray nodes = report.value(QStringLiteral("nodes")).toArray();
    QCOMPARE(nodes.size(), 2);
    QVERIFY(nodes.at(0).toObject().value(QStringLiteral("run_dir")).toString() !=
            nodes.at(1).toObject().value(QStringLiteral("run_dir")).toString());
    QVERIFY(QFile::exists(record));

    // Each node's rank knows its place in the cluster.
    for (int rank = 0; rank < 2; ++rank) {
        const QString path = data.filePath(QStringLiteral("env-%1.json").arg(rank));
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(path).size() > 0, 20000);
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject env = QJsonDocument::fromJson(file.readAll()).object();
        QCOMPARE(env.value(QStringLiteral("RANK")).toString(), QString::number(rank));
        QCOMPARE(env.value(QStringLiteral("WORLD_SIZE")).toString(), QStringLiteral("2"));
        QCOMPARE(env.value(QStringLiteral("MASTER_ADDR")).toString(), QStringLiteral("127.0.0.1"));
        QCOMPARE(env.value(QStringLiteral("MASTER_PORT")).toString(), QString::number(port));
    }
    QTRY_COMPARE_WITH_TIMEOUT(accel::test::processesWithMarker(marker, QStringLiteral("fakechild")).size(), 2, 20000);

    const auto stopped = hosts({"stop", record, "--json"});
    QVERIFY2(stopped.exitCode == 0, qPrintable(stopped.out + stopped.err));
    const QJsonArray stoppedNodes = parse(stopped).value(QStringLiteral("nodes")).toArray();
    QCOMPARE(stoppedNodes.size(), 2);
    for (const QJsonValue &node : stoppedNodes)
        QVERIFY2(node.toObject().value(QStringLiteral("stopped")).toBool(),
                 qPrintable(node.toObject().value(QStringLiteral("message")).toString()));
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker).isEmpty(), 20000);
}

void tst_HostsCli::launchStartsNothingWhenANodeFailsItsPreflight()
{
    QTemporaryDir data;
    const QString marker = QStringLiteral("hostslaunch-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const QString closed = QStringLiteral("127.0.0.1:%1").arg(accel::test::SshTestServer::freeLoopbackPort());
    const auto launched = hosts({"launch", "accel-test," + closed, "--json", "--main_process_ip", "127.0.0.1",
                                 "--record", record, "--remote_env", "XDG_DATA_HOME=" + data.path(), "--timeout", "5",
                                 "--", "--num_processes", "2", "--no_python", fakechild, "--marker", marker, "--hang"});
    QCOMPARE(launched.exitCode, 1);
    const QJsonArray nodes = parse(launched).value(QStringLiteral("nodes")).toArray();
    QCOMPARE(nodes.size(), 2);
    QVERIFY2(nodes.at(1).toObject().value(QStringLiteral("message")).toString().contains(QStringLiteral("refused")),
             qPrintable(launched.out));
    QVERIFY(!QFile::exists(record));
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker).isEmpty(), 20000);
}

void tst_HostsCli::launchStopsTheStartedNodesWhenAnotherFailsToStart()
{
    // Machine 1's accel passes the pre-flight but refuses to launch; machine 0's run had started.
    QTemporaryDir data;
    const QString wrapper = data.filePath(QStringLiteral("accel"));
    writeExecutable(wrapper, QStringLiteral("#!/bin/sh\ncase \" $* \" in *\" --machine_rank 1 \"*) echo 'accel launch: "
                                            "disk full' >&2; exit 1;; esac\nexec '%1' \"$@\"\n")
                                 .arg(m_accel));
    const QString marker = QStringLiteral("hostslaunch-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const auto launched = hosts({"launch", "accel-test,accel-test-2", "--json", "--record", record, "--remote_accel",
                                 wrapper, "--remote_env", "XDG_DATA_HOME=" + data.path(), "--", "--num_processes", "2",
                                 "--no_python", fakechild, "--marker", marker, "--hang"});
    QCOMPARE(launched.exitCode, 1);
    const QJsonArray nodes = parse(launched).value(QStringLiteral("nodes")).toArray();
    QCOMPARE(nodes.size(), 2);
    const QJsonObject first = nodes.at(0).toObject();
    QCOMPARE(first.value(QStringLiteral("started")).toBool(), false);
    QVERIFY2(first.value(QStringLiteral("message")).toString().contains(QStringLiteral("stopped again")),
             qPrintable(launched.out));
    QVERIFY2(nodes.at(1).toObject().value(QStringLiteral("message")).toString().contains(QStringLiteral("disk full")),
             qPrintable(launched.out));
    QVERIFY(!QFile::exists(record));
    // Machine 0's supervisor and rank are gone, and its run says it was stopped.
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker).isEmpty(), 20000);
    QCOMPARE(runManifest(first.value(QStringLiteral("run_dir")).toString()).value(QStringLiteral("state")).toString(),
             QStringLiteral("stopped"));
}

// `accel hosts stop RECORD` and `accel stop RECORD` read the record with readClusterRecord, the
// reader the studio uses: a newer version is refused before any host is reached, and a file that
// is no run and no record is named as such (each used to parse it again, without the version).
void tst_HostsCli::stopReadsTheRecordWithItsOneReader()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString newer = dir.filePath(QStringLiteral("newer.json"));
    QFile file(newer);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"schema": "accel.cluster-run", "version": 2, "nodes": [{"host": "accel-test",
        "machine_rank": 0, "run_id": "r", "run_dir": "/nonexistent/r"}]})");
    file.close();
    const auto viaHosts = hosts({"stop", newer});
    const auto viaStop = accel::test::runAccel(
        {QStringLiteral("stop"), newer}, 60000, {},
        {QStringLiteral("ACCEL_SSH_DIR=") + m_server.clientDirectory(), QStringLiteral("ACCEL_REMOTE_BIN=") + m_accel});
    for (const auto &result : {viaHosts, viaStop}) {
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("accel.cluster-run version 2; this accel reads version 1")),
                 qPrintable(result.err));
    }
    const QString other = dir.filePath(QStringLiteral("other.json"));
    QFile otherFile(other);
    QVERIFY(otherFile.open(QIODevice::WriteOnly));
    otherFile.write(R"({"schema": "accel.env", "version": 1})");
    otherFile.close();
    const auto notRecord = accel::test::runAccel({QStringLiteral("stop"), other});
    QCOMPARE(notRecord.exitCode, 2);
    QVERIFY2(notRecord.err.contains(QStringLiteral("not a record of accel hosts launch")), qPrintable(notRecord.err));
}

void tst_HostsCli::launchRefusesFlagsItSetsItself()
{
    for (const QString &flag : {QStringLiteral("--machine_rank"), QStringLiteral("--num-machines")}) {
        const auto result = hosts({"launch", "accel-test", "--", flag, "1", "train.py"});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("is set for each node")), qPrintable(result.err));
    }
    QCOMPARE(hosts({"launch", "accel-test"}).exitCode, 2); // nothing to launch
}

namespace {

// The inode of a process's (or a named namespace's) network namespace.
ino_t netnsInode(const QString &path)
{
    struct stat st {};
    return ::stat(QFile::encodeName(path).constData(), &st) == 0 ? st.st_ino : 0;
}

} // namespace

void tst_HostsCli::launchAcrossTwoNetworkNamespaces()
{
    // Two nodes with their own network and address, each running its own sshd; this process
    // reaches them over a bridge, the way a workstation reaches two cluster hosts.
    accel::test::NetnsSshNodes testbed(2);
    if (const QString reason = testbed.makeNetwork(); !reason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no network namespaces here: ") + reason));
    const QString error = testbed.startServers();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QStringList env = {QStringLiteral("ACCEL_SSH_DIR=") + testbed.clientDirectory()};

    QTemporaryDir data;
    const QString marker = QStringLiteral("hostsnetns-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const auto launched =
        hosts({"launch", "node0,node1", "--json", "--record", record, "--remote_env", "XDG_DATA_HOME=" + data.path(),
               "--", "--num_processes", "2", "--no_python", fakechild, "--marker", marker, "--env-json",
               data.filePath(QStringLiteral("env-{rank}.json")), "--hang"},
              env);
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonObject report = parse(launched);
    QCOMPARE(report.value(QStringLiteral("main_process_ip")).toString(), testbed.nodeAddress(0));
    // The pre-flight found each node's interface on node 0's subnet for gloo and NCCL.
    for (const QJsonValue &node : report.value(QStringLiteral("nodes")).toArray())
        QCOMPARE(node.toObject().value(QStringLiteral("socket_ifname")).toString(), QStringLiteral("eth0"));
    for (int rank = 0; rank < 2; ++rank) {
        const QString path = data.filePath(QStringLiteral("env-%1.json").arg(rank));
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(path).size() > 0, 20000);
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject rankEnv = QJsonDocument::fromJson(file.readAll()).object();
        QCOMPARE(rankEnv.value(QStringLiteral("MASTER_ADDR")).toString(), testbed.nodeAddress(0));
    }
    // Each rank runs in its own node's network namespace.
    QList<qint64> ranks;
    QTRY_COMPARE_WITH_TIMEOUT((ranks = accel::test::processesWithMarker(marker, QStringLiteral("fakechild"))).size(), 2,
                              20000);
    QSet<ino_t> seen;
    for (qint64 pid : ranks)
        seen.insert(netnsInode(QStringLiteral("/proc/%1/ns/net").arg(pid)));
    const QSet<ino_t> expected = {netnsInode(QStringLiteral("/run/netns/") + testbed.nodeNamespace(0)),
                                  netnsInode(QStringLiteral("/run/netns/") + testbed.nodeNamespace(1))};
    QCOMPARE(seen, expected);

    // `accel stop RECORD` is `accel hosts stop RECORD`: every node stopped, nothing left.
    const auto stopped = accel::test::runAccel(
        {"stop", record, "--json"}, 60000, {},
        env + QStringList{QStringLiteral("ACCEL_REMOTE_BIN=") + m_accel, QStringLiteral("SSH_AUTH_SOCK")});
    QVERIFY2(stopped.exitCode == 0, qPrintable(stopped.out + stopped.err));
    QCOMPARE(parse(stopped).value(QStringLiteral("schema")).toString(), QStringLiteral("accel.hosts-stop"));
    const QJsonArray stoppedNodes = parse(stopped).value(QStringLiteral("nodes")).toArray();
    QCOMPARE(stoppedNodes.size(), 2);
    for (const QJsonValue &node : stoppedNodes)
        QVERIFY2(node.toObject().value(QStringLiteral("stopped")).toBool(), qPrintable(stopped.out));
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker).isEmpty(), 20000);
}

// A plain two-node launch whose ranks depend on each other, as pipeline stages do: machine 1's rank
// ends with 1 as soon as machine 0's is gone. The stop through the record reaches machine 1 a second
// after machine 0 (a slow link: its accel stop waits 1 s), so machine 1's rank ends before its own
// stop's signal. Both runs record "stopped": accel hosts stop records the request on every node
// before it signals any, and machine 1's supervisor takes its rank's end as the stop's consequence.
// (Before, every node was asked at once and machine 1 recorded "failed".)
void tst_HostsCli::stopIsRecordedOnEveryNodeWhenAPeerEndsFirst()
{
    QTemporaryDir data;
    const QString marker = QStringLiteral("hostsstop-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    const QString stage = data.filePath(QStringLiteral("stage.sh"));
    writeExecutable(stage, QStringLiteral("#!/bin/sh\n"
                                          "# $1: the test's marker; $2: where the ranks leave their pids\n"
                                          "echo $$ > \"$2/rank$RANK.pid\"\n"
                                          "peer=\"$2/rank$((1 - RANK)).pid\"\n"
                                          "while :; do\n"
                                          "  if [ -s \"$peer\" ] && ! kill -0 \"$(cat \"$peer\")\" 2>/dev/null; then\n"
                                          "    echo 'lost my peer' >&2; exit 1\n"
                                          "  fi\n"
                                          "  sleep 0.05\n"
                                          "done\n"));
    QDir().mkpath(data.filePath(QStringLiteral("pids")));
    const QString record = data.filePath(QStringLiteral("cluster.json"));
    const auto launched = hosts({"launch", "accel-test,accel-test-2", "--json", "--main_process_port",
                                 QString::number(accel::test::SshTestServer::freeLoopbackPort()), "--record", record,
                                 "--remote_env", "XDG_DATA_HOME=" + data.path(), "--", "--num_processes", "2",
                                 "--no_python", stage, marker, data.filePath(QStringLiteral("pids"))});
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonArray nodes = parse(launched).value(QStringLiteral("nodes")).toArray();
    QCOMPARE(nodes.size(), 2);
    const QString first = nodes.at(0).toObject().value(QStringLiteral("run_dir")).toString();
    const QString second = nodes.at(1).toObject().value(QStringLiteral("run_dir")).toString();
    for (int rank = 0; rank < 2; ++rank)
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(data.filePath(QStringLiteral("pids/rank%1.pid").arg(rank))).size() > 0,
                                 20000);

    // Every accel stop for machine 1's run comes a second late.
    const QString slow = data.filePath(QStringLiteral("slow-accel"));
    writeExecutable(slow, QStringLiteral("#!/bin/sh\ncase \" $* \" in *\" %1 \"*) sleep 1;; esac\nexec '%2' \"$@\"\n")
                              .arg(second, m_accel));
    const auto stopped = hosts({"stop", record, "--json", "--remote_accel", slow});
    QVERIFY2(stopped.exitCode == 0, qPrintable(stopped.out + stopped.err));
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker).isEmpty(), 20000);
    QStringList states;
    for (const QString &runDir : {first, second})
        states << runManifest(runDir).value(QStringLiteral("state")).toString();
    QVERIFY2(states == QStringList({QStringLiteral("stopped"), QStringLiteral("stopped")}),
             qPrintable(states.join(QStringLiteral(", ")) + QStringLiteral("\n") + stopped.out));
    // Machine 1's run says why its rank's end is no failure.
    const QJsonArray changes = runManifest(second).value(QStringLiteral("states")).toArray();
    const QString detail = changes.last().toObject().value(QStringLiteral("detail")).toString();
    QVERIFY2(detail.contains(QStringLiteral("rank 1 ended after the stop was requested")), qPrintable(detail));
}

QTEST_GUILESS_MAIN(tst_HostsCli)
#include "tst_hostscli.moc"
