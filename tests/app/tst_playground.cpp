// WorkerClient, the playground's link to `accel-worker serve`: a missing worker program fails the
// request with a message instead of hanging, and with a real worker built beside the tests a
// killed worker fails the request in flight and a new request starts a fresh worker.
#include "app/studio/bigmodel/workerclient.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

using namespace accel::app;

class tst_Playground : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void missingWorkerFailsTheRequest();
    void killedWorkerFailsAndRecovers();
};

void tst_Playground::missingWorkerFailsTheRequest()
{
    QTemporaryDir dir;
    WorkerClient client;
    client.setProgram(dir.filePath(QStringLiteral("no-such-worker")));
    QSignalSpy failed(&client, &WorkerClient::requestFailed);
    QSignalSpy crashed(&client, &WorkerClient::workerCrashed);
    client.load(dir.path());
    QVERIFY(QTest::qWaitFor([&] { return !crashed.isEmpty(); }, 10000));
    QCOMPARE(failed.size(), 1); // exactly one terminal signal for the load
    QVERIFY2(failed.first().at(1).toString().contains(QStringLiteral("cannot start")),
             qPrintable(failed.first().at(1).toString()));
    QVERIFY(!client.isRunning());
}

void tst_Playground::killedWorkerFailsAndRecovers()
{
    const QString worker = QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"));
    if (!QFileInfo(worker).isExecutable())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    QTemporaryDir dir;
    WorkerClient client;
    client.setProgram(worker);
    QSignalSpy ready(&client, &WorkerClient::ready);
    QSignalSpy failed(&client, &WorkerClient::requestFailed);
    QSignalSpy crashed(&client, &WorkerClient::workerCrashed);
    client.load(dir.filePath(QStringLiteral("missing-model")));
    QVERIFY(QTest::qWaitFor([&] { return !failed.isEmpty(); }, 60000));
    QVERIFY(ready.size() == 1 && crashed.isEmpty()); // a bad model is an error event; the worker lives on
    QVERIFY(client.isRunning());

    ::kill(static_cast<pid_t>(client.processId()), SIGKILL);
    QVERIFY(QTest::qWaitFor([&] { return !crashed.isEmpty(); }, 10000));
    QVERIFY(!client.isRunning());

    failed.clear();
    client.load(dir.filePath(QStringLiteral("missing-model"))); // starts a fresh worker
    QVERIFY(QTest::qWaitFor([&] { return !failed.isEmpty(); }, 60000));
    QCOMPARE(ready.size(), 2);
    client.shutdown();
    QVERIFY(QTest::qWaitFor([&] { return !client.isRunning(); }, 10000));
    QCOMPARE(crashed.size(), 1);
}

QTEST_GUILESS_MAIN(tst_Playground)
#include "tst_playground.moc"
