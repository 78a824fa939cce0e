// AccelCommand with real child processes: exit codes, output, signals, a program that cannot
// start, cancellation and timeouts that reach the whole process group, and exactly one done().
#include "launcher/accelcommand.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTest>
#include <QUuid>

#include <csignal>

using accel::launcher::AccelCommand;
using accel::launcher::AccelOutcome;

namespace {

QString fakechild()
{
    return QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
}

QString uniqueMarker()
{
    return QStringLiteral("accelcmd-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
}

// Waits for done() and returns its outcome; fails the test if it does not come within the deadline.
AccelOutcome waitDone(QSignalSpy &spy, int deadlineMs = 20000)
{
    if (spy.isEmpty())
        spy.wait(deadlineMs);
    if (spy.isEmpty())
        return AccelOutcome{};
    return spy.first().first().value<AccelOutcome>();
}

// Lets queued events run so that a second, wrong done() would show up in the spy.
void drainEvents()
{
    for (int i = 0; i < 20; ++i)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
}

} // namespace

class tst_AccelCommand : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void exitCodeAndOutputComeBack();
    void outputBatchesAddUpToTheOutcome();
    void programThatCannotStartReportsOnceWithTheReason();
    void crashReportsTheSignal();
    void standardInputIsFedOrClosed();
    void cancelStopsTheWholeProcessGroup();
    void cancelEscalatesToSigkill();
    void timeoutStopsACommandThatHangs();
    void runsTheRealAccel();
};

void tst_AccelCommand::initTestCase()
{
    QVERIFY2(QFile::exists(fakechild()), "build the fakechild target");
}

void tst_AccelCommand::exitCodeAndOutputComeBack()
{
    AccelCommand command;
    command.setProgram(fakechild());
    QSignalSpy done(&command, &AccelCommand::done);
    QVERIFY(command.start({"--print", "hello out", "--stderr", "hello err", "--exit", "3"}));
    QVERIFY(command.isRunning());
    QVERIFY(!command.start({"--exit", "0"})); // one run at a time
    const AccelOutcome outcome = waitDone(done);
    QCOMPARE(done.count(), 1);
    QVERIFY(!command.isRunning());
    QCOMPARE(outcome.exitCode, 3);
    QCOMPARE(outcome.signal, 0);
    QVERIFY(!outcome.failedToStart && !outcome.cancelled && !outcome.timedOut);
    QVERIFY(!outcome.succeeded());
    QCOMPARE(outcome.shellCode(), 3);
    QCOMPARE(outcome.describe(), QStringLiteral("exit 3"));
    QCOMPARE(outcome.standardOutput, QByteArray("hello out\n"));
    QCOMPARE(outcome.standardError, QByteArray("hello err\n"));
    drainEvents();
    QCOMPARE(done.count(), 1);

    // The same object runs again, with a fresh outcome.
    done.clear();
    QVERIFY(command.start({"--exit", "0"}));
    const AccelOutcome second = waitDone(done);
    QVERIFY(second.succeeded());
    QVERIFY(second.standardOutput.isEmpty());
}

void tst_AccelCommand::outputBatchesAddUpToTheOutcome()
{
    AccelCommand command;
    command.setProgram(fakechild());
    QByteArray streamedOut;
    QByteArray streamedErr;
    connect(&command, &AccelCommand::outputReceived, this, [&](const QByteArray &out, const QByteArray &err) {
        streamedOut += out;
        streamedErr += err;
    });
    QSignalSpy done(&command, &AccelCommand::done);
    command.start({"--lines", "5000", "--stderr", "tail"});
    const AccelOutcome outcome = waitDone(done);
    QVERIFY(outcome.succeeded());
    QCOMPARE(outcome.standardOutput.count('\n'), 5000);
    QCOMPARE(streamedOut, outcome.standardOutput);
    QCOMPARE(streamedErr, outcome.standardError);

    // Without keeping output, the batches still arrive and the outcome stays small.
    streamedOut.clear();
    done.clear();
    command.setKeepOutput(false);
    command.start({"--lines", "100"});
    const AccelOutcome streamed = waitDone(done);
    QVERIFY(streamed.succeeded());
    QVERIFY(streamed.standardOutput.isEmpty());
    QCOMPARE(streamedOut.count('\n'), 100);
}

void tst_AccelCommand::programThatCannotStartReportsOnceWithTheReason()
{
    AccelCommand command;
    const QString missing = QDir::temp().filePath(QStringLiteral("no-such-accel-") + uniqueMarker());
    command.setProgram(missing);
    QVERIFY(command.start({"launch"}));
    // Connected only after start(): done() must still arrive (it is never emitted inside start()).
    QSignalSpy done(&command, &AccelCommand::done);
    const AccelOutcome outcome = waitDone(done);
    QCOMPARE(done.count(), 1);
    QVERIFY(outcome.failedToStart);
    QVERIFY(!outcome.succeeded());
    QCOMPARE(outcome.shellCode(), 127);
    QVERIFY2(outcome.error.contains(missing), qPrintable(outcome.error));
    QVERIFY(outcome.describe().startsWith(QStringLiteral("failed to start: ")));
    QVERIFY(!command.isRunning());
    command.cancel(); // after the end: nothing
    drainEvents();
    QCOMPARE(done.count(), 1);
}

void tst_AccelCommand::crashReportsTheSignal()
{
    AccelCommand command;
    command.setProgram(fakechild());
    QSignalSpy done(&command, &AccelCommand::done);
    command.start({"--print", "before", "--abort"});
    const AccelOutcome outcome = waitDone(done);
    QCOMPARE(outcome.signal, SIGABRT);
    QCOMPARE(outcome.shellCode(), 128 + SIGABRT);
    QCOMPARE(outcome.describe(), QStringLiteral("signal %1 (SIGABRT)").arg(SIGABRT));
    QVERIFY(!outcome.cancelled);
    QCOMPARE(outcome.standardOutput, QByteArray("before\n"));
}

void tst_AccelCommand::standardInputIsFedOrClosed()
{
    AccelCommand command;
    command.setProgram(QStringLiteral("/bin/cat"));
    QSignalSpy done(&command, &AccelCommand::done);
    // No input: the child reads end of file at once instead of waiting on an open pipe.
    command.start({});
    QVERIFY(waitDone(done, 10000).succeeded());
    done.clear();
    command.setStandardInput("line one\nline two\n");
    command.start({});
    const AccelOutcome outcome = waitDone(done);
    QVERIFY(outcome.succeeded());
    QCOMPARE(outcome.standardOutput, QByteArray("line one\nline two\n"));
}

void tst_AccelCommand::cancelStopsTheWholeProcessGroup()
{
    const QString marker = uniqueMarker();
    AccelCommand command;
    command.setProgram(fakechild());
    QSignalSpy done(&command, &AccelCommand::done);
    QSignalSpy output(&command, &AccelCommand::outputReceived);
    command.start({"--marker", marker, "--grandchild", "--print", "ready", "--hang"});
    QVERIFY(output.wait(10000)); // "ready": the grandchild exists
    QTRY_COMPARE_WITH_TIMEOUT(accel::test::processesWithMarker(marker, QStringLiteral("fakechild")).size(), 2, 10000);
    command.cancel();
    command.cancel(); // twice: still one done()
    const AccelOutcome outcome = waitDone(done);
    QVERIFY(outcome.cancelled);
    QVERIFY(!outcome.succeeded());
    QCOMPARE(outcome.describe(), QStringLiteral("cancelled"));
    QCOMPARE(outcome.signal, SIGINT);
    QTRY_VERIFY_WITH_TIMEOUT(accel::test::processesWithMarker(marker, QStringLiteral("fakechild")).isEmpty(), 10000);
    drainEvents();
    QCOMPARE(done.count(), 1);
}

void tst_AccelCommand::cancelEscalatesToSigkill()
{
    const QString marker = uniqueMarker();
    AccelCommand command;
    command.setProgram(QStringLiteral("/bin/sh"));
    command.setStopGrace(150);
    QSignalSpy done(&command, &AccelCommand::done);
    QSignalSpy output(&command, &AccelCommand::outputReceived);
    // Ignores SIGINT and SIGTERM (and so does its child, which inherits ignored signals).
    command.start({"-c", "trap '' INT TERM; echo ready; sleep 600 & wait; wait", marker});
    QVERIFY(output.wait(10000));
    QElapsedTimer clock;
    clock.start();
    command.cancel();
    const AccelOutcome outcome = waitDone(done);
    QVERIFY(outcome.cancelled);
    QCOMPARE(outcome.signal, SIGKILL);
    QVERIFY2(clock.elapsed() >= 250, "SIGKILL only after SIGINT and SIGTERM had their grace");
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString::number(clock.elapsed())));
}

void tst_AccelCommand::timeoutStopsACommandThatHangs()
{
    AccelCommand command;
    command.setProgram(fakechild());
    command.setTimeout(300);
    QSignalSpy done(&command, &AccelCommand::done);
    QElapsedTimer clock;
    clock.start();
    command.start({"--hang"});
    const AccelOutcome outcome = waitDone(done);
    QVERIFY(outcome.timedOut);
    QVERIFY(!outcome.cancelled);
    QCOMPARE(outcome.shellCode(), 124);
    QVERIFY2(outcome.describe().contains(QStringLiteral("300 ms")), qPrintable(outcome.describe()));
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString::number(clock.elapsed())));
}

void tst_AccelCommand::runsTheRealAccel()
{
    const QString accel = QDir(accel::test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFile::exists(accel), "build the accel target");
    AccelCommand command;
    command.setProgram(accel);
    QSignalSpy done(&command, &AccelCommand::done);
    command.start({"--version"});
    const AccelOutcome outcome = waitDone(done);
    QVERIFY2(outcome.succeeded(), qPrintable(outcome.describe()));
    QVERIFY(outcome.standardOutput.startsWith("accel "));

    done.clear();
    command.start({"no-such-command"});
    const AccelOutcome bad = waitDone(done);
    QCOMPARE(bad.exitCode, 2);
    QVERIFY(bad.standardError.contains("unknown command"));
}

QTEST_GUILESS_MAIN(tst_AccelCommand)
#include "tst_accelcommand.moc"
