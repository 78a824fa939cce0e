// SshHost against a real OpenSSH server on loopback (SshTestServer): exit codes and output come
// back, hostile arguments arrive byte-identical, unknown and changed host keys are refused (with
// the fingerprint), unreachable hosts fail within the deadline, and cancelling or timing out a
// long remote command leaves no process behind. LocalHost runs the same commands here.
#include "launcher/host.h"
#include "launcher/sshhost.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUuid>

#include <csignal>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace accel::launcher;

namespace {

QString fakechild()
{
    return QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
}

QString uniqueMarker()
{
    return QStringLiteral("sshhost-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
}

struct Finished {
    AccelOutcome outcome;
    bool arrived = false;
    int count = 0;
};

// Runs a command to its end (or the deadline) and returns what done() said.
Finished runToEnd(Host &host, const QStringList &arguments, const HostCommandOptions &options = {},
                  int deadlineMs = 30000)
{
    Finished finished;
    std::unique_ptr<HostCommand> command = host.start(arguments, options);
    QObject context;
    QObject::connect(command.get(), &HostCommand::done, &context, [&](const AccelOutcome &outcome) {
        finished.outcome = outcome;
        finished.arrived = true;
        ++finished.count;
    });
    if (!QTest::qWaitFor([&] { return finished.arrived; }, deadlineMs))
        finished.outcome.error = QStringLiteral("no done() within %1 ms").arg(deadlineMs); // fails every check
    return finished;
}

// A TCP port that accepts connections (the kernel completes them) but never says anything.
struct SilentListener {
    int fd = -1;
    int port = 0;
    SilentListener()
    {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof(address);
        if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0 && ::listen(fd, 8) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
            port = ntohs(address.sin_port);
    }
    ~SilentListener() { ::close(fd); }
};

} // namespace

class tst_SshHost : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void commandRunsAndItsExitCodeAndOutputComeBack();
    void hostileArgumentsArriveByteIdentical();
    void severalCommandsShareOneSession();
    void unknownHostIsRefusedWithItsFingerprint();
    void unknownHostIsRecordedWhenAccepted();
    void changedHostKeyIsRefused();
    void unauthorisedKeyIsRefusedWithWhatToDo();
    void closedPortFailsAtOnce();
    void proxyCommandReachesTheHost();
    void silentHostTimesOutWithinTheDeadline();
    void invalidDestinationIsRefused();
    void cancelWhileConnectingEndsAtOnce();
    void cancelStopsALongRemoteCommandAndLeavesNoProcess();
    void timeoutStopsALongRemoteCommand();
    void missingAccelSaysWhatToDo();
    void droppedConnectionEndsItsCommandsAndTheNextOneReconnects();
    void localHostRunsTheSameCommand();

private:
    SshHostOptions options(const QString &alias) const;
    accel::test::SshTestServer m_server;
};

void tst_SshHost::initTestCase()
{
    if (const QString reason = accel::test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    QVERIFY2(QFile::exists(fakechild()), "build the fakechild target");
    qunsetenv("SSH_AUTH_SOCK"); // keys from the test's own folder only, not a developer's agent
    qunsetenv("ACCEL_REMOTE_BIN");
    const QString error = m_server.start();
    QVERIFY2(error.isEmpty(), qPrintable(error));
}

SshHostOptions tst_SshHost::options(const QString &alias) const
{
    SshHostOptions options;
    options.destination = alias;
    options.sshDirectory = m_server.clientDirectory();
    options.timeoutMs = 10000;
    options.stopGraceMs = 500;
    return options;
}

void tst_SshHost::commandRunsAndItsExitCodeAndOutputComeBack()
{
    SshHost host(options(m_server.alias()));
    HostCommandOptions run;
    run.program = fakechild();
    QByteArray streamed;
    std::unique_ptr<HostCommand> command =
        host.start({"--print", "hello from ssh", "--stderr", "warning line", "--exit", "3"}, run);
    QVERIFY(command->isRunning());
    connect(command.get(), &HostCommand::outputReceived, this,
            [&](const QByteArray &out, const QByteArray &) { streamed += out; });
    QSignalSpy done(command.get(), &HostCommand::done);
    QVERIFY(done.wait(30000));
    const auto outcome = done.first().first().value<AccelOutcome>();
    QVERIFY2(!outcome.failedToStart, qPrintable(outcome.describe()));
    QCOMPARE(outcome.exitCode, 3);
    QCOMPARE(outcome.standardOutput, QByteArray("hello from ssh\n"));
    QCOMPARE(outcome.standardError, QByteArray("warning line\n"));
    QCOMPARE(streamed, outcome.standardOutput);
    QVERIFY(!command->isRunning());
    QTest::qWait(0);
    QCOMPARE(done.count(), 1);

    const Finished ok = runToEnd(host, {"--lines", "3000"}, run);
    QVERIFY2(ok.outcome.succeeded(), qPrintable(ok.outcome.describe()));
    QCOMPARE(ok.outcome.standardOutput.count('\n'), 3000);
}

void tst_SshHost::hostileArgumentsArriveByteIdentical()
{
    QTemporaryDir scratch;
    const QString canary = scratch.filePath(QStringLiteral("pwned"));
    const QStringList hostile = {QStringLiteral("two words"),
                                 QStringLiteral("it's"),
                                 QStringLiteral("\"double\" quotes"),
                                 QStringLiteral("$(touch %1)").arg(canary),
                                 QStringLiteral("`touch %1`").arg(canary),
                                 QStringLiteral("; touch %1 #").arg(canary),
                                 QStringLiteral("$HOME ${PATH} $1 $@"),
                                 QStringLiteral("line one\nline two\n"),
                                 QStringLiteral("-n"),
                                 QStringLiteral("--help"),
                                 QString(),
                                 QStringLiteral("back\\slash \\n"),
                                 QStringLiteral("a && b || c | d > e < f"),
                                 QStringLiteral("* ? [a-z] ~ ~root"),
                                 QStringLiteral("tab\there"),
                                 QStringLiteral("ünïcødé ✓"),
                                 QStringLiteral("!bang #hash %percent"),
                                 QStringLiteral("'''")};
    SshHost host(options(m_server.alias()));
    HostCommandOptions run;
    run.program = QStringLiteral("/usr/bin/printf");
    run.environment = {QStringLiteral("ACCEL_HOSTILE=va'lue $(touch %1) \"x\"").arg(canary)};
    // printf repeats its format for every argument: each one followed by a NUL byte.
    const Finished finished = runToEnd(host, QStringList{QStringLiteral("%s\\0")} + hostile, run);
    QVERIFY2(finished.outcome.succeeded(), qPrintable(finished.outcome.describe() + finished.outcome.standardError));
    QList<QByteArray> received = finished.outcome.standardOutput.split('\0');
    QCOMPARE(received.takeLast(), QByteArray()); // after the last NUL
    QCOMPARE(received.size(), hostile.size());
    for (int i = 0; i < hostile.size(); ++i)
        QCOMPARE(received.at(i), hostile.at(i).toUtf8());

    run.program = QStringLiteral("/usr/bin/printenv");
    const Finished environment = runToEnd(host, {QStringLiteral("ACCEL_HOSTILE")}, run);
    QCOMPARE(environment.outcome.standardOutput, QStringLiteral("va'lue $(touch %1) \"x\"\n").arg(canary).toUtf8());
    QVERIFY2(!QFile::exists(canary), "a remote shell expanded an argument");
}

void tst_SshHost::severalCommandsShareOneSession()
{
    SshHost host(options(m_server.alias()));
    HostCommandOptions run;
    run.program = fakechild();
    std::vector<std::unique_ptr<HostCommand>> commands;
    std::vector<std::unique_ptr<QSignalSpy>> spies;
    for (int i = 0; i < 4; ++i) {
        commands.push_back(host.start({"--lines", QString::number(500 * (i + 1)), "--exit", QString::number(i)}, run));
        spies.push_back(std::make_unique<QSignalSpy>(commands.back().get(), &HostCommand::done));
    }
    for (int i = 0; i < 4; ++i) {
        QTRY_COMPARE_WITH_TIMEOUT(spies[i]->count(), 1, 30000);
        const auto outcome = spies[i]->first().first().value<AccelOutcome>();
        QCOMPARE(outcome.exitCode, i);
        QCOMPARE(outcome.standardOutput.count('\n'), 500 * (i + 1));
    }
}

void tst_SshHost::unknownHostIsRefusedWithItsFingerprint()
{
    const QString empty = m_server.writeClientFile(QStringLiteral("known_hosts_unknown"), QByteArray());
    m_server.addAlias(QStringLiteral("accel-test-unknown"), {QStringLiteral("UserKnownHostsFile ") + empty});
    SshHost host(options(QStringLiteral("accel-test-unknown")));
    HostCommandOptions run;
    run.program = fakechild();
    const Finished finished = runToEnd(host, {"--exit", "0"}, run);
    QVERIFY(finished.outcome.failedToStart);
    QVERIFY2(finished.outcome.error.contains(m_server.hostKeyFingerprint()), qPrintable(finished.outcome.error));
    QVERIFY2(finished.outcome.error.contains(QStringLiteral("unknown host key")), qPrintable(finished.outcome.error));
    QVERIFY2(finished.outcome.error.contains(empty), qPrintable(finished.outcome.error)); // the file it looked in
    QCOMPARE(finished.outcome.reason, QStringLiteral("host_key_unknown"));
    QCOMPARE(finished.outcome.hostKeyFingerprint, m_server.hostKeyFingerprint());
    QVERIFY2(finished.outcome.error.contains(QStringLiteral("--accept-new-host-key")),
             qPrintable(finished.outcome.error));
    QFile file(empty);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), QByteArray()); // nothing recorded without consent
}

void tst_SshHost::unknownHostIsRecordedWhenAccepted()
{
    const QString path = m_server.writeClientFile(QStringLiteral("known_hosts_accept"), QByteArray());
    m_server.addAlias(QStringLiteral("accel-test-accept"), {QStringLiteral("UserKnownHostsFile ") + path});
    HostCommandOptions run;
    run.program = fakechild();
    {
        SshHostOptions accepting = options(QStringLiteral("accel-test-accept"));
        accepting.acceptNewHostKey = true;
        SshHost host(accepting);
        const Finished finished = runToEnd(host, {"--exit", "0"}, run);
        QVERIFY2(finished.outcome.succeeded(), qPrintable(finished.outcome.describe()));
    }
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray recorded = file.readAll();
    QVERIFY2(recorded.contains(m_server.knownHostsLine().section(QLatin1Char(' '), 2, 2).toLatin1()), recorded);
    // Recorded: the next connection needs no consent.
    SshHost again(options(QStringLiteral("accel-test-accept")));
    QVERIFY(runToEnd(again, {"--exit", "0"}, run).outcome.succeeded());
}

void tst_SshHost::changedHostKeyIsRefused()
{
    const QStringList otherKey = m_server.makeKey(QStringLiteral("other_host_key")).split(QLatin1Char(' '));
    const QString path =
        m_server.writeClientFile(QStringLiteral("known_hosts_changed"), QStringLiteral("[127.0.0.1]:%1 %2 %3\n")
                                                                            .arg(m_server.port())
                                                                            .arg(otherKey.value(0), otherKey.value(1))
                                                                            .toUtf8());
    m_server.addAlias(QStringLiteral("accel-test-changed"), {QStringLiteral("UserKnownHostsFile ") + path});
    HostCommandOptions run;
    run.program = fakechild();
    const QString marker = uniqueMarker();
    QString removeCommand;
    for (bool accept : {false, true}) { // accepting new keys never accepts a changed one
        SshHostOptions changed = options(QStringLiteral("accel-test-changed"));
        changed.acceptNewHostKey = accept;
        SshHost host(changed);
        const Finished finished = runToEnd(host, {"--marker", marker, "--exit", "0"}, run);
        QVERIFY(finished.outcome.failedToStart);
        QVERIFY2(finished.outcome.error.contains(QStringLiteral("HOST KEY CHANGED")),
                 qPrintable(finished.outcome.error));
        QVERIFY2(finished.outcome.error.contains(m_server.hostKeyFingerprint()), qPrintable(finished.outcome.error));
        QCOMPARE(finished.outcome.reason, QStringLiteral("host_key_changed"));
        QCOMPARE(finished.outcome.hostKeyFingerprint, m_server.hostKeyFingerprint());
        QVERIFY2(finished.outcome.error.contains(
                     QStringLiteral("ssh-keygen -R '[127.0.0.1]:%1' -f %2").arg(m_server.port()).arg(path)),
                 qPrintable(finished.outcome.error));
        removeCommand = finished.outcome.error.section(QStringLiteral("remove the old key ("), 1)
                            .section(QStringLiteral(") and connect again"), 0, 0);
    }
    {
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(file.readAll().contains(otherKey.value(1).toLatin1())); // untouched
    }
    // The command the message gives, run as printed, removes the old key: accepting then works.
    QProcess shell;
    shell.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), removeCommand});
    QVERIFY(shell.waitForFinished(30000));
    QVERIFY2(shell.exitCode() == 0, qPrintable(removeCommand + "\n" + shell.readAllStandardError()));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(!file.readAll().contains(otherKey.value(1).toLatin1()));
    SshHostOptions accepting = options(QStringLiteral("accel-test-changed"));
    accepting.acceptNewHostKey = true;
    SshHost host(accepting);
    QVERIFY(runToEnd(host, {"--marker", marker, "--exit", "0"}, run).outcome.succeeded());
}

void tst_SshHost::unauthorisedKeyIsRefusedWithWhatToDo()
{
    // Another user's folder: the server is known, but its only key is not authorised there.
    QVERIFY(!m_server.makeKey(QStringLiteral("stranger_key")).isEmpty());
    QTemporaryDir stranger;
    QFile config(stranger.filePath(QStringLiteral("config")));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(QStringLiteral("Host stranger\n  HostName 127.0.0.1\n  Port %1\n  User %2\n  IdentityFile %3\n")
                     .arg(m_server.port())
                     .arg(m_server.user(), QDir(m_server.clientDirectory()).filePath(QStringLiteral("stranger_key")))
                     .toUtf8());
    config.close();
    QFile knownHosts(stranger.filePath(QStringLiteral("known_hosts")));
    QVERIFY(knownHosts.open(QIODevice::WriteOnly));
    knownHosts.write(m_server.knownHostsLine().toUtf8() + '\n');
    knownHosts.close();
    SshHostOptions options = this->options(QStringLiteral("stranger"));
    options.sshDirectory = stranger.path();
    SshHost host(options);
    const Finished finished = runToEnd(host, {"--version"});
    QVERIFY(finished.outcome.failedToStart);
    QCOMPARE(finished.outcome.reason, QStringLiteral("login_refused"));
    QVERIFY2(finished.outcome.error.contains(QStringLiteral("authorized_keys")), qPrintable(finished.outcome.error));
    QVERIFY2(finished.outcome.error.contains(QStringLiteral("ssh-agent")), qPrintable(finished.outcome.error));
}

void tst_SshHost::proxyCommandReachesTheHost()
{
    // What ProxyJump becomes in libssh 0.10: a ProxyCommand running OpenSSH's `ssh -W` through the
    // jump host (here the same server), with its own key and known_hosts so it reads nothing of ours.
    if (!QFileInfo(QStringLiteral("/usr/bin/ssh")).isExecutable())
        QSKIP("the OpenSSH client (ssh) is not installed");
    const QDir client(m_server.clientDirectory());
    m_server.addAlias(
        QStringLiteral("accel-test-proxied"),
        {QStringLiteral("ProxyCommand /usr/bin/ssh -F /dev/null -o BatchMode=yes -o "
                        "UserKnownHostsFile=%1 -i %2 -p %3 -W %h:%p %4@127.0.0.1")
             .arg(client.filePath(QStringLiteral("known_hosts")), client.filePath(QStringLiteral("id_ed25519")))
             .arg(m_server.port())
             .arg(m_server.user())});
    SshHost host(options(QStringLiteral("accel-test-proxied")));
    HostCommandOptions run;
    run.program = fakechild();
    const Finished finished = runToEnd(host, {"--print", "through the jump host"}, run);
    QVERIFY2(finished.outcome.succeeded(), qPrintable(finished.outcome.describe()));
    QCOMPARE(finished.outcome.standardOutput, QByteArray("through the jump host\n"));
}

void tst_SshHost::closedPortFailsAtOnce()
{
    const int port = accel::test::SshTestServer::freeLoopbackPort();
    SshHost host(options(QStringLiteral("127.0.0.1:%1").arg(port)));
    QElapsedTimer clock;
    clock.start();
    const Finished finished = runToEnd(host, {"--version"});
    QVERIFY(finished.outcome.failedToStart);
    QVERIFY2(finished.outcome.error.contains(QStringLiteral("refused")), qPrintable(finished.outcome.error));
    QVERIFY2(finished.outcome.error.contains(QString::number(port)), qPrintable(finished.outcome.error));
    QCOMPARE(finished.outcome.reason, QStringLiteral("unreachable"));
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString::number(clock.elapsed())));
}

void tst_SshHost::silentHostTimesOutWithinTheDeadline()
{
    SilentListener silent;
    QVERIFY(silent.port > 0);
    SshHostOptions slow = options(QStringLiteral("127.0.0.1:%1").arg(silent.port));
    slow.timeoutMs = 1000;
    SshHost host(slow);
    QElapsedTimer clock;
    clock.start();
    const Finished finished = runToEnd(host, {"--version"});
    QVERIFY2(finished.outcome.timedOut, qPrintable(finished.outcome.describe()));
    QVERIFY2(finished.outcome.error.contains(QStringLiteral("timed out")), qPrintable(finished.outcome.error));
    QCOMPARE(finished.outcome.reason, QStringLiteral("timeout"));
    QVERIFY2(clock.elapsed() >= 900 && clock.elapsed() < 5000, qPrintable(QString::number(clock.elapsed())));
}

void tst_SshHost::invalidDestinationIsRefused()
{
    SshHost host(options(QStringLiteral("host; rm -rf ~")));
    const Finished finished = runToEnd(host, {"--version"});
    QVERIFY(finished.outcome.failedToStart);
    QVERIFY2(finished.outcome.error.contains(QStringLiteral("invalid host 'host; rm -rf ~'")),
             qPrintable(finished.outcome.error));
}

void tst_SshHost::cancelWhileConnectingEndsAtOnce()
{
    SilentListener silent; // the handshake would wait for the whole timeout
    SshHostOptions slow = options(QStringLiteral("127.0.0.1:%1").arg(silent.port));
    slow.timeoutMs = 20000;
    SshHost host(slow);
    std::unique_ptr<HostCommand> command = host.start({"--version"});
    QSignalSpy done(command.get(), &HostCommand::done);
    QElapsedTimer clock;
    clock.start();
    command->cancel();
    QVERIFY(done.wait(10000));
    const auto outcome = done.first().first().value<AccelOutcome>();
    QVERIFY(outcome.cancelled);
    QVERIFY2(clock.elapsed() < 3000, qPrintable(QString::number(clock.elapsed())));
    // A host going away while it connects does not wait for the timeout either.
    clock.restart();
    {
        SshHost closing(slow);
        std::unique_ptr<HostCommand> pending = closing.start({"--version"});
        QVERIFY(pending->isRunning());
    } // the command, then the host (its worker thread joined) go away here
    QVERIFY2(clock.elapsed() < 3000, qPrintable(QString::number(clock.elapsed())));
}

void tst_SshHost::cancelStopsALongRemoteCommandAndLeavesNoProcess()
{
    const QString marker = uniqueMarker();
    SshHost host(options(m_server.alias()));
    HostCommandOptions run;
    run.program = fakechild();
    std::unique_ptr<HostCommand> command =
        host.start({"--marker", marker, "--grandchild", "--print", "ready", "--hang"}, run);
    QSignalSpy output(command.get(), &HostCommand::outputReceived);
    QSignalSpy done(command.get(), &HostCommand::done);
    QVERIFY(output.wait(30000));
    QTRY_COMPARE_WITH_TIMEOUT(accel::test::processesWithMarker(marker, QStringLiteral("fakechild")).size(), 2, 10000);
    QElapsedTimer clock;
    clock.start();
    command->cancel();
    QVERIFY(done.wait(10000));
    const auto outcome = done.first().first().value<AccelOutcome>();
    QVERIFY(outcome.cancelled);
    QCOMPARE(outcome.signal, SIGINT); // the first signal already ended it
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString::number(clock.elapsed())));
    // The grandchild too: the whole remote process group is signalled, not only the command.
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker, QStringLiteral("fakechild")).isEmpty(), 10000);
}

void tst_SshHost::timeoutStopsALongRemoteCommand()
{
    const QString marker = uniqueMarker();
    SshHost host(options(m_server.alias()));
    HostCommandOptions run;
    run.program = fakechild();
    run.timeoutMs = 500;
    QElapsedTimer clock;
    clock.start();
    const Finished finished = runToEnd(host, {"--marker", marker, "--hang"}, run);
    QVERIFY2(finished.outcome.timedOut, qPrintable(finished.outcome.describe()));
    QVERIFY2(clock.elapsed() < 8000, qPrintable(QString::number(clock.elapsed())));
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker, QStringLiteral("fakechild")).isEmpty(), 10000);
}

void tst_SshHost::missingAccelSaysWhatToDo()
{
    // A path that does not exist, and a name that is not on the remote PATH.
    for (const QString &program : {QStringLiteral("/nonexistent/bin/accel"), QStringLiteral("accel-not-installed")}) {
        SshHostOptions missing = options(m_server.alias());
        missing.accelProgram = program;
        SshHost host(missing);
        const Finished finished = runToEnd(host, {"env", "--json"});
        QCOMPARE(finished.outcome.exitCode, 127);
        QVERIFY(!finished.outcome.succeeded());
        QVERIFY2(finished.outcome.error.contains(program + QStringLiteral(" not found on accel-test")),
                 qPrintable(finished.outcome.error + finished.outcome.standardError));
        QVERIFY2(finished.outcome.error.contains(QStringLiteral("ACCEL_REMOTE_BIN")),
                 qPrintable(finished.outcome.error));
        QCOMPARE(finished.outcome.describe(), finished.outcome.error);
        QCOMPARE(finished.outcome.reason, QStringLiteral("accel_not_found"));
    }
}

void tst_SshHost::droppedConnectionEndsItsCommandsAndTheNextOneReconnects()
{
    const QString marker = uniqueMarker();
    SshHost host(options(m_server.alias()));
    HostCommandOptions run;
    run.program = fakechild();
    std::unique_ptr<HostCommand> command = host.start({"--marker", marker, "--print", "ready", "--hang"}, run);
    QSignalSpy output(command.get(), &HostCommand::outputReceived);
    QSignalSpy done(command.get(), &HostCommand::done);
    QVERIFY(output.wait(30000));
    QVERIFY(m_server.dropConnections() > 0);
    QVERIFY(done.wait(20000));
    const auto outcome = done.first().first().value<AccelOutcome>();
    QCOMPARE(outcome.reason, QStringLiteral("connection_lost"));
    QVERIFY2(outcome.error.contains(QStringLiteral("connection lost")), qPrintable(outcome.error));
    QVERIFY(!outcome.succeeded());
    // The same host connects again for the next command.
    const Finished next = runToEnd(host, {"--print", "again"}, run);
    QVERIFY2(next.outcome.succeeded(), qPrintable(next.outcome.describe()));
    QCOMPARE(next.outcome.standardOutput, QByteArray("again\n"));
    // The orphaned remote command is the test's to clean up (no session is left to stop it).
    for (qint64 pid : accel::test::processesWithMarker(marker, QStringLiteral("fakechild")))
        ::kill(static_cast<pid_t>(pid), SIGKILL);
}

void tst_SshHost::localHostRunsTheSameCommand()
{
    LocalHost local;
    QCOMPARE(local.name(), QStringLiteral("local"));
    HostCommandOptions run;
    run.program = fakechild();
    run.environment = {QStringLiteral("RANK=7")};
    const Finished finished = runToEnd(local, {"--if-rank", "7", "--print", "rank seven", "--exit", "4"}, run);
    QCOMPARE(finished.outcome.exitCode, 4);
    QCOMPARE(finished.outcome.standardOutput, QByteArray("rank seven\n"));
}

QTEST_GUILESS_MAIN(tst_SshHost)
#include "tst_sshhost.moc"
