// End to end: real Python processes write metrics with the tracker and print logs into a run
// directory; the RunMonitor follows it, and its detectors see a straggler and then a hang.
#include "monitor/runmonitor.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::monitor;

namespace {

void appendTo(const QString &path, const QByteArray &bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Append));
    QCOMPARE(file.write(bytes), bytes.size());
}

bool hasEvent(const EventsModel &model, const QString &name, int rank = -2)
{
    for (int row = 0; row < model.rowCount(); ++row) {
        if (model.event(row).event == name && (rank == -2 || model.event(row).rank == rank))
            return true;
    }
    return false;
}

const char *const kRankScript = R"(
import os, sys, time
import accel_studio_tracker as tracker
rank = int(os.environ["RANK"])
for step in range(1, 16):
    step_time = 0.06 if rank == 1 else 0.02
    tracker.log({"loss": 3.0 - step * 0.1, "samples_per_s": 32 / step_time, "step_time_s": step_time}, step=step)
    print("rank %d step %d" % (rank, step), flush=True)
    time.sleep(0.03)
print("waiting on a collective that never completes", flush=True)
time.sleep(60)
)";

} // namespace

class tst_RunMonitor : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void followsRealProcessesAndDetectsStragglerAndHang()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("python3")).isEmpty())
            QSKIP("python3 is not installed");
        QTemporaryDir run;
        QDir(run.path()).mkpath(QStringLiteral("metrics"));
        QDir(run.path()).mkpath(QStringLiteral("logs"));
        appendTo(run.filePath(QStringLiteral("run.json")), "{\"id\":\"e2e\",\"state\":\"running\"}");
        appendTo(run.filePath(QStringLiteral("events.jsonl")),
                 "{\"v\":1,\"time\":1,\"event\":\"started\",\"ranks\":2}\n");

        RunMonitor *monitor = RunMonitor::forDirectory(run.path(), this);
        monitor->hangDetector()->setSettings({800, 5.0, 50});
        monitor->stragglerDetector()->setSettings({0.2, 5, 3});
        QAbstractItemModelTester ranksTester(monitor->ranksModel(),
                                             QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester eventsTester(monitor->eventsModel(),
                                              QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester logsTester(monitor->logModel(),
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
        monitor->start();
        QCOMPARE(monitor->manifest().value(QLatin1String("id")).toString(), QStringLiteral("e2e"));
        QCOMPARE(monitor->eventsModel()->rowCount(), 1);

        std::vector<std::unique_ptr<QProcess>> ranks;
        for (int rank = 0; rank < 2; ++rank) {
            auto process = std::make_unique<QProcess>();
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("ACCEL_RUN_DIR"), run.path());
            env.insert(QStringLiteral("RANK"), QString::number(rank));
            env.remove(QStringLiteral("ACCEL_METRICS_FILE"));
            env.insert(QStringLiteral("PYTHONPATH"),
                       QDir(test::sourceDir()).filePath(QStringLiteral("resources/python")));
            process->setProcessEnvironment(env);
            process->setStandardOutputFile(run.filePath(QStringLiteral("logs/rank%1.log").arg(rank)),
                                           QIODevice::Append);
            process->start(QStringLiteral("python3"), {QStringLiteral("-c"), QString::fromLatin1(kRankScript)});
            QVERIFY(process->waitForStarted(10000));
            ranks.push_back(std::move(process));
        }

        QTRY_COMPARE_WITH_TIMEOUT(monitor->ranksModel()->ranks(), (QList<int>{0, 1}), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(hasEvent(*monitor->eventsModel(), QStringLiteral("straggler_detected"), 1), 10000);
        QVERIFY(!hasEvent(*monitor->eventsModel(), QStringLiteral("straggler_detected"), 0));
        // The detector's event went through events.jsonl, so other readers see it too.
        QFile events(run.filePath(QStringLiteral("events.jsonl")));
        QVERIFY(events.open(QIODevice::ReadOnly));
        QVERIFY(events.readAll().contains("\"event\":\"straggler_detected\",\"rank\":1"));

        QTRY_COMPARE_WITH_TIMEOUT(monitor->store()->rankStatus(0).lastStep, std::int64_t(15), 10000);
        QTRY_COMPARE_WITH_TIMEOUT(monitor->store()->rankStatus(1).lastStep, std::int64_t(15), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(hasEvent(*monitor->eventsModel(), QStringLiteral("hang_suspected")), 10000);
        QTRY_COMPARE_WITH_TIMEOUT(monitor->ranksModel()->stateOf(0), QStringLiteral("no progress"), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(monitor->logModel()->rowCount() >= 32, 5000);
        QCOMPARE(monitor->store()->lastValue(1, QStringLiteral("samples_per_s")), 32 / 0.06);

        // The launcher gives up on the hung job: ranks killed, run finished.
        for (auto &process : ranks) {
            process->kill();
            QVERIFY(process->waitForFinished(10000));
        }
        appendTo(run.filePath(QStringLiteral("events.jsonl")),
                 "{\"v\":1,\"time\":2,\"event\":\"rank_exited\",\"rank\":0,\"exit_code\":null,\"signal\":9}\n"
                 "{\"v\":1,\"time\":2,\"event\":\"rank_exited\",\"rank\":1,\"exit_code\":null,\"signal\":9}\n"
                 "{\"v\":1,\"time\":2,\"event\":\"finished\",\"state\":\"failed\"}\n");
        QTRY_COMPARE_WITH_TIMEOUT(monitor->ranksModel()->stateOf(1), QStringLiteral("killed (signal 9)"), 5000);
        QVERIFY(hasEvent(*monitor->eventsModel(), QStringLiteral("finished")));
        monitor->stop();
    }
};

QTEST_GUILESS_MAIN(tst_RunMonitor)
#include "tst_runmonitor.moc"
