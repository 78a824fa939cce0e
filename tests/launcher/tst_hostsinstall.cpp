// `accel hosts install` end to end onto a network-namespace host (NetnsSshNodes) whose sessions have
// their own home folder (sshd's SetEnv HOME) and no accel on their PATH: the real accel package made
// by packaging/package.sh goes over SFTP, is unpacked under ~/.local without root, ~/.bashrc puts it
// on the PATH of ssh commands, `accel hosts check` then says ok, and `accel launch --hosts` trains a
// GPT there with the installed accel as the node's launcher. The namespaces share this file system,
// so the ranks run this build's accel-worker (ACCEL_WORKER_PROGRAM): the worker package itself (2 GB
// with CUDA) is proved in a fresh Debian root by tst_debianpackages.
#include "tests/helpers/accelpackages.h"
#include "tests/helpers/netnssshnodes.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

class tst_HostsInstall : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void badInputIsRefusedByName();
    void workerPackagesGoAlongOrNot();
    void installsWithoutRootThenChecksAndTrains();

private:
    QTemporaryDir m_scratch;
    QString m_packages;
};

namespace {

accel::test::ProcessResult runCli(const QStringList &arguments, const QStringList &env = {}, int timeoutMs = 120000)
{
    return accel::test::runAccel(arguments, timeoutMs, {}, env);
}

QJsonObject parse(const accel::test::ProcessResult &result)
{
    return QJsonDocument::fromJson(result.out.toUtf8()).object();
}

QByteArray readFile(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

void tst_HostsInstall::initTestCase()
{
    QVERIFY(m_scratch.isValid());
    m_packages = m_scratch.filePath(QStringLiteral("dist"));
    const QString error = accel::test::makeAccelPackages(m_packages);
    QVERIFY2(error.isEmpty(), qPrintable(error));
}

void tst_HostsInstall::badInputIsRefusedByName()
{
    const auto prefix = runCli({"hosts", "install", "node0", "--packages", m_packages, "--prefix", "rel/dir"});
    QCOMPARE(prefix.exitCode, 2);
    QVERIFY2(prefix.err.contains("--prefix") && prefix.err.contains("rel/dir"), qPrintable(prefix.err));
    const auto quoted = runCli({"hosts", "install", "node0", "--packages", m_packages, "--prefix", "~/a'b"});
    QCOMPARE(quoted.exitCode, 2);
    const auto both = runCli({"hosts", "install", "node0", "--packages", m_packages, "--sudo", "--prefix", "/opt/x"});
    QCOMPARE(both.exitCode, 2);
    QVERIFY2(both.err.contains("--prefix") && both.err.contains("--sudo"), qPrintable(both.err));
    const auto remote = runCli({"hosts", "install", "node0", "--packages", m_packages, "--remote_accel", "/x/accel"});
    QCOMPARE(remote.exitCode, 2);
    QVERIFY2(remote.err.contains("--remote_accel"), qPrintable(remote.err));
    const QString empty = m_scratch.filePath(QStringLiteral("empty"));
    QVERIFY(QDir().mkpath(empty));
    const auto none = runCli({"hosts", "install", "node0", "--packages", empty});
    QCOMPARE(none.exitCode, 2);
    QVERIFY2(none.err.contains(QStringLiteral("accel_%1_").arg(ACCEL_VERSION)) && none.err.contains(empty),
             qPrintable(none.err));
    const auto host = runCli({"hosts", "install", "node0;rm", "--packages", m_packages});
    QCOMPARE(host.exitCode, 2);
}

// Which packages go: accel, accel-worker and accel-worker-cuda, those the folder has; --no_worker leaves both
// worker packages out. (Files named as package.sh names them; the host does not resolve, so nothing is sent.)
void tst_HostsInstall::workerPackagesGoAlongOrNot()
{
    const QString folder = m_scratch.filePath(QStringLiteral("named"));
    QVERIFY(QDir().mkpath(folder));
    for (const char *name : {"accel", "accel-worker", "accel-worker-cuda"}) {
        QFile file(QStringLiteral("%1/%2_%3_amd64.deb").arg(folder, QLatin1String(name), ACCEL_VERSION));
        QVERIFY(file.open(QIODevice::WriteOnly));
    }
    const auto sent = [&folder](const QStringList &extra) {
        const auto run =
            runCli(QStringList{"hosts", "install", "nosuchhost.invalid", "--packages", folder, "--json"} + extra);
        QStringList names;
        for (const QJsonValue &file : parse(run).value(QStringLiteral("packages")).toArray())
            names << file.toString().section(QLatin1Char('_'), 0, 0);
        return names;
    };
    QCOMPARE(sent({}), (QStringList{"accel", "accel-worker", "accel-worker-cuda"}));
    QCOMPARE(sent({"--no_worker"}), QStringList{"accel"});
}

void tst_HostsInstall::installsWithoutRootThenChecksAndTrains()
{
    if (const QString reason = accel::test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    QTemporaryDir data;
    const QString home = data.filePath(QStringLiteral("home"));
    QVERIFY(QDir().mkpath(home));
    // Debian's skeleton .bashrc: it returns at once when the shell is not interactive.
    {
        QFile bashrc(home + QStringLiteral("/.bashrc"));
        QVERIFY(bashrc.open(QIODevice::WriteOnly));
        bashrc.write("# ~/.bashrc\ncase $- in\n    *i*) ;;\n      *) return;;\nesac\nalias ll='ls -l'\n");
    }
    accel::test::NetnsSshNodes nodes(1);
    if (const QString reason = nodes.makeNetwork(); !reason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no network namespaces here: ") + reason));
    nodes.setSessionEnvironment(0, {QStringLiteral("HOME=") + home});
    const QString started = nodes.startServers();
    QVERIFY2(started.isEmpty(), qPrintable(started));
    const QStringList env = {QStringLiteral("ACCEL_SSH_DIR=") + nodes.clientDirectory(),
                             QStringLiteral("ACCEL_REMOTE_BIN"), QStringLiteral("SSH_AUTH_SOCK")};

    // Before: the host has no accel.
    const auto before = runCli({"hosts", "check", "node0", "--json"}, env);
    QCOMPARE(before.exitCode, 1);
    const QJsonObject beforeHost = parse(before).value("hosts").toArray().at(0).toObject();
    QVERIFY2(beforeHost.value("status").toString() == QLatin1String("accel_not_found"), qPrintable(before.out));

    const auto installed = runCli({"hosts", "install", "node0", "--packages", m_packages, "--json"}, env);
    QVERIFY2(installed.exitCode == 0, qPrintable(installed.out + installed.err));
    const QJsonObject report = parse(installed);
    QCOMPARE(report.value("schema").toString(), QStringLiteral("accel.hosts-install"));
    QCOMPARE(report.value("packages").toArray().at(0).toString(),
             QStringLiteral("accel_%1_amd64.deb").arg(ACCEL_VERSION));
    const QJsonObject host = report.value("hosts").toArray().at(0).toObject();
    QCOMPARE(host.value("status").toString(), QStringLiteral("ok"));
    QCOMPARE(host.value("check").toObject().value("accel_version").toString(), QStringLiteral(ACCEL_VERSION));
    QCOMPARE(host.value("prefix").toString(), home + QStringLiteral("/.local"));
    QCOMPARE(host.value("path_files").toArray().at(0).toString(), home + QStringLiteral("/.bashrc"));
    QVERIFY(QFileInfo(home + QStringLiteral("/.local/bin/accel")).isExecutable());
    QVERIFY(QFile::exists(home + QStringLiteral("/.local/share/accel-studio/jobs/demo-gpt.yaml")));
    QVERIFY(QFile::exists(home + QStringLiteral("/.local/share/man/man1/accel.1.gz")));
    // The PATH block comes before the skeleton's "not interactive: return", and the rest is kept.
    const QByteArray bashrc = readFile(home + QStringLiteral("/.bashrc"));
    QVERIFY2(bashrc.startsWith("# >>> accel hosts install") && bashrc.contains("alias ll='ls -l'"), bashrc);

    const auto check = runCli({"hosts", "check", "node0", "--json"}, env);
    QVERIFY2(check.exitCode == 0, qPrintable(check.out + check.err));
    QCOMPARE(parse(check).value("hosts").toArray().at(0).toObject().value("status").toString(), QStringLiteral("ok"));

    // A second install replaces the block instead of adding one.
    const auto again = runCli({"hosts", "install", "node0", "--packages", m_packages}, env);
    QVERIFY2(again.exitCode == 0, qPrintable(again.out + again.err));
    QVERIFY2(again.out.contains("node0: installed accel") && again.out.contains("check: ok"), qPrintable(again.out));
    QCOMPARE(readFile(home + QStringLiteral("/.bashrc")).count("# >>> accel hosts install"), 1);

    // Training there, launched by the installed accel (the one its PATH finds).
    const QString job = data.filePath(QStringLiteral("tiny.yaml"));
    {
        QByteArray text =
            readFile(QDir(accel::test::sourceDir()).filePath(QStringLiteral("resources/jobs/demo-gpt.yaml")));
        text.replace("max_steps: 300", "max_steps: 6");
        text.replace("corpus: ../corpus/corpus.txt",
                     "corpus: " + QDir(accel::test::sourceDir()).filePath("resources/corpus/corpus.txt").toUtf8());
        text.replace("length: 160", "length: 8");
        text.replace("log_every: 10", "log_every: 1");
        QFile file(job);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(text);
    }
    const QString worker = QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"));
    QVERIFY2(QFileInfo(worker).isExecutable(), "build the accel-worker target");
    const auto launched =
        runCli({"launch", "--hosts", "node0", "--json", "--record", data.filePath(QStringLiteral("cluster.json")),
                "--remote_env", "XDG_DATA_HOME=" + data.path(), "--remote_env", "OMP_NUM_THREADS=1", "--remote_env",
                "ACCEL_WORKER_PROGRAM=" + worker, "--main_process_port", "29627", "--num_processes", "1", "--job", job},
               env);
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QString runDir = parse(launched).value("nodes").toArray().at(0).toObject().value("run_dir").toString();
    QVERIFY2(runDir.startsWith(data.path()), qPrintable(launched.out));
    QString state;
    QTRY_VERIFY2_WITH_TIMEOUT((state = QJsonDocument::fromJson(readFile(runDir + QStringLiteral("/run.json")))
                                           .object()
                                           .value("state")
                                           .toString()) == QLatin1String("succeeded") ||
                                  state == QLatin1String("failed"),
                              qPrintable(state), 120000);
    QVERIFY2(state == QLatin1String("succeeded"),
             readFile(runDir + QStringLiteral("/logs/rank0.log")).right(2000).constData());
    // The node's launcher was the installed accel: ssh commands there found no other (checked above).
    const QJsonObject manifest = QJsonDocument::fromJson(readFile(runDir + QStringLiteral("/run.json"))).object();
    QCOMPARE(manifest.value("versions").toObject().value("accel").toString(), QStringLiteral(ACCEL_VERSION));
    const QByteArray metrics = readFile(runDir + QStringLiteral("/metrics/rank0.jsonl"));
    QVERIFY2(metrics.contains("\"step\":6"), metrics.right(500).constData());
}

QTEST_GUILESS_MAIN(tst_HostsInstall)
#include "tst_hostsinstall.moc"
