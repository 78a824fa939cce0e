// Monitoring inside the `accel launch` supervisor, end to end through the real accel binary and
// real rank processes (fakechild): metrics/system.jsonl with a line per rank pid at about the set
// rate (also after a restart), --system_sample_hz 0 and bad values, a hang and a straggler
// raised once in headless runs, and the rule that a studio's RunMonitor leaves detection to such a supervisor.
#include "monitor/metricsparser.h"
#include "monitor/metricstore.h"
#include "monitor/runevent.h"
#include "monitor/runmonitor.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

using namespace accel::monitor;
using accel::test::runAccel;

namespace {

QString fakechild()
{
    return accel::test::binDir() + QStringLiteral("/fakechild");
}

QByteArray readAll(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

QList<RunEvent> readEvents(const QString &runDir)
{
    QList<RunEvent> events;
    for (const QByteArray &line : readAll(runDir + QStringLiteral("/events.jsonl")).split('\n')) {
        RunEvent event;
        if (!line.isEmpty() && parseEventLine(line, event))
            events.append(event);
    }
    return events;
}

int countEvents(const QList<RunEvent> &events, const QString &name)
{
    int count = 0;
    for (const RunEvent &event : events)
        count += event.event == name ? 1 : 0;
    return count;
}

QJsonObject readManifest(const QString &runDir)
{
    return QJsonDocument::fromJson(readAll(runDir + QStringLiteral("/run.json"))).object();
}

void writeFile(const QString &path, const QByteArray &bytes, bool append)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | (append ? QIODevice::Append : QIODevice::Truncate)));
    QCOMPARE(file.write(bytes), bytes.size());
}

} // namespace

class tst_SupervisorMonitor : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(QFile::exists(accel::test::binDir() + QStringLiteral("/accel")));
        QVERIFY(QFile::exists(fakechild()));
    }

    void systemSamplesFollowEveryRankPidAcrossARestart()
    {
        QTemporaryDir dir;
        const QString runDir = dir.filePath(QStringLiteral("run"));
        // Attempt 0: both ranks live 0.8 s and fail; attempt 1: they live 1.6 s and succeed.
        const auto result = runAccel({QStringLiteral("launch"),
                                      QStringLiteral("--cpu"),
                                      QStringLiteral("--num_processes"),
                                      QStringLiteral("2"),
                                      QStringLiteral("--max_restarts"),
                                      QStringLiteral("1"),
                                      QStringLiteral("--system-sample-hz"),
                                      QStringLiteral("10"),
                                      QStringLiteral("--run_dir"),
                                      runDir,
                                      QStringLiteral("--no_python"),
                                      fakechild(),
                                      QStringLiteral("--sleep"),
                                      QStringLiteral("800"),
                                      QStringLiteral("--if-attempt-below"),
                                      QStringLiteral("1"),
                                      QStringLiteral("--exit"),
                                      QStringLiteral("3"),
                                      QStringLiteral("--sleep"),
                                      QStringLiteral("800")},
                                     60000);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));

        const QJsonObject manifest = readManifest(runDir);
        const QJsonObject monitor = manifest.value(QStringLiteral("monitor")).toObject();
        QCOMPARE(monitor.value(QStringLiteral("detectors")).toString(), QStringLiteral("supervisor"));
        QCOMPARE(monitor.value(QStringLiteral("system_sample_hz")).toDouble(), 10.0);
        QCOMPARE(manifest.value(QStringLiteral("restarts")).toInt(), 1);

        // Every pid the launcher started (both attempts), by rank.
        std::set<std::pair<int, qint64>> started;
        for (const RunEvent &event : readEvents(runDir)) {
            if (event.event == QLatin1String("rank_started"))
                started.insert({event.fields.value(QStringLiteral("rank")).toInt(),
                                event.fields.value(QStringLiteral("pid")).toInteger()});
        }
        QCOMPARE(started.size(), size_t(4));

        const QByteArray system = readAll(runDir + QStringLiteral("/metrics/system.jsonl"));
        MetricsParser parser;
        parser.setDefaultRank(-1);
        MetricBatch batch;
        parser.feed(system, batch);
        QCOMPARE(parser.stats().junk, std::int64_t(0));
        std::set<std::pair<int, qint64>> sampled;
        int hostLines = 0;
        const auto pidName = std::find(batch.names.begin(), batch.names.end(), QByteArray("pid"));
        QVERIFY(pidName != batch.names.end());
        const int pidIndex = static_cast<int>(pidName - batch.names.begin());
        for (const MetricRow &row : batch.rows) {
            QCOMPARE(row.kind, SampleKind::System);
            QCOMPARE(row.step, kNoStep);
            if (row.rank < 0) {
                ++hostLines;
                continue;
            }
            for (std::uint32_t i = 0; i < row.valueCount; ++i) {
                const MetricValue &value = batch.values[row.firstValue + i];
                if (value.name == pidIndex)
                    sampled.insert({row.rank, static_cast<qint64>(value.value)});
            }
        }
        QCOMPARE(sampled, started); // both ranks, and the restart's new pids

        // About 10 lines a second while the run lived (generous band: a loaded machine delays timers).
        const QJsonArray states = manifest.value(QStringLiteral("states")).toArray();
        const double seconds = states.last().toObject().value(QStringLiteral("time")).toDouble() -
                               states.first().toObject().value(QStringLiteral("time")).toDouble();
        QVERIFY2(seconds > 1.5, qPrintable(QString::number(seconds)));
        const double expected = seconds * 10.0;
        QVERIFY2(hostLines >= expected * 0.3 && hostLines <= expected * 1.2 + 3,
                 qPrintable(QStringLiteral("%1 host lines in %2 s").arg(hostLines).arg(seconds)));

        MetricStore store;
        store.append(batch);
        QVERIFY(store.lastValue(-1, QStringLiteral("mem_total_bytes")) > 0);
        QVERIFY(store.lastValue(0, QStringLiteral("mem_rss_bytes")) > 0);
        QVERIFY(store.lastValue(1, QStringLiteral("mem_rss_bytes")) > 0);
    }

    void zeroDisablesSamplingAndBadRatesAreRejected()
    {
        QTemporaryDir dir;
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const auto off = runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                                   QStringLiteral("2"), QStringLiteral("--system_sample_hz"), QStringLiteral("0"),
                                   QStringLiteral("--run_dir"), runDir, QStringLiteral("--no_python"), fakechild(),
                                   QStringLiteral("--sleep"), QStringLiteral("600")});
        QVERIFY2(off.exitCode == 0, qPrintable(off.err));
        QVERIFY(!QFile::exists(runDir + QStringLiteral("/metrics/system.jsonl")));
        QCOMPARE(readManifest(runDir)
                     .value(QStringLiteral("monitor"))
                     .toObject()
                     .value(QStringLiteral("system_sample_hz"))
                     .toDouble(),
                 0.0);

        for (const QString &bad : {QStringLiteral("11"), QStringLiteral("-1"), QStringLiteral("fast")}) {
            const auto rejected =
                runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--system_sample_hz"), bad,
                          QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("never")),
                          QStringLiteral("--no_python"), fakechild()});
            QCOMPARE(rejected.exitCode, 2);
            QVERIFY2(rejected.err.startsWith(QStringLiteral("accel launch: --system_sample_hz: ")) &&
                         rejected.err.contains(QStringLiteral("0 (off) to 10")) &&
                         rejected.err.contains(QStringLiteral("'%1'").arg(bad)),
                     qPrintable(rejected.err));
        }
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("never"))));

        const auto badMinimum =
            runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--no_python"), fakechild()},
                     60000, {}, {QStringLiteral("ACCEL_HANG_MINIMUM_S=soon")});
        QCOMPARE(badMinimum.exitCode, 2);
        QVERIFY2(badMinimum.err.contains(QStringLiteral("ACCEL_HANG_MINIMUM_S")) &&
                     badMinimum.err.contains(QStringLiteral("'soon'")),
                 qPrintable(badMinimum.err));
    }

    void headlessHangIsWrittenOnce()
    {
        // Both ranks log 3 steps, then make no progress for 3.5 s (as if stuck in a collective)
        // and exit; no studio is open. With a 1 s minimum the supervisor raises one hang.
        QTemporaryDir dir;
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const auto result = runAccel(
            {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"), QStringLiteral("2"),
             QStringLiteral("--system_sample_hz"), QStringLiteral("0"), QStringLiteral("--run_dir"), runDir,
             QStringLiteral("--no_python"), fakechild(), QStringLiteral("--metrics"), QStringLiteral("3"),
             QStringLiteral("--sleep"), QStringLiteral("3500")},
            60000, {}, {QStringLiteral("ACCEL_HANG_MINIMUM_S=1")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        const QList<RunEvent> events = readEvents(runDir);
        QCOMPARE(countEvents(events, QStringLiteral("hang_suspected")), 1);
        QCOMPARE(countEvents(events, QStringLiteral("straggler_detected")), 0);
        for (const RunEvent &event : events) {
            if (event.event != QLatin1String("hang_suspected"))
                continue;
            QCOMPARE(event.fields.value(QStringLiteral("source")).toString(), QStringLiteral("monitor"));
            QCOMPARE(event.fields.value(QStringLiteral("threshold_s")).toDouble(), 1.0);
            const QJsonObject lastSteps = event.fields.value(QStringLiteral("last_steps")).toObject();
            QCOMPARE(lastSteps.value(QStringLiteral("0")).toDouble(), 3.0);
            QCOMPARE(lastSteps.value(QStringLiteral("1")).toDouble(), 3.0);
        }
        QCOMPARE(readManifest(runDir)
                     .value(QStringLiteral("monitor"))
                     .toObject()
                     .value(QStringLiteral("hang_minimum_s"))
                     .toDouble(),
                 1.0);
    }

    void headlessStragglerIsWrittenOnce()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("python3")).isEmpty())
            QSKIP("python3 is not installed");
        // Rank 1's logged compute time per step is 3x the others' for 20 steps (more than the
        // 5 steps to judge a rank plus the 10 a change must last): one straggler_detected.
        QTemporaryDir dir;
        QFile script(dir.filePath(QStringLiteral("train.py")));
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write("import json, os, time\n"
                     "rank = int(os.environ['RANK'])\n"
                     "with open(os.environ['ACCEL_METRICS_FILE'], 'a') as out:\n"
                     "    for step in range(1, 21):\n"
                     "        out.write(json.dumps({'v': 1, 'time': time.time(), 'step': step, 'loss': 1.0 / step,\n"
                     "                              'step_time_s': 0.06 if rank == 1 else 0.02}) + '\\n')\n"
                     "        out.flush()\n"
                     "time.sleep(1.5)\n");
        script.close();
        const QString runDir = dir.filePath(QStringLiteral("run"));
        const auto result =
            runAccel({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                      QStringLiteral("3"), QStringLiteral("--main_process_port"), QStringLiteral("0"),
                      QStringLiteral("--run_dir"), runDir, script.fileName()},
                     60000);
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        const QList<RunEvent> events = readEvents(runDir);
        QCOMPARE(countEvents(events, QStringLiteral("straggler_detected")), 1);
        QCOMPARE(countEvents(events, QStringLiteral("hang_suspected")), 0); // 60 s minimum by default
        for (const RunEvent &event : events) {
            if (event.event == QLatin1String("straggler_detected")) {
                QCOMPARE(event.rank, 1);
                QCOMPARE(event.fields.value(QStringLiteral("step_time_s")).toDouble(), 0.06);
                QCOMPARE(event.fields.value(QStringLiteral("others_median_step_time_s")).toDouble(), 0.02);
            }
        }
    }

    void studioLeavesDetectionToTheSupervisor_data()
    {
        QTest::addColumn<bool>("supervisorDetects");
        QTest::newRow("supervisor detects") << true;
        QTest::newRow("older run: the studio detects") << false;
    }

    void studioLeavesDetectionToTheSupervisor()
    {
        QFETCH(bool, supervisorDetects);
        QTemporaryDir run;
        QDir(run.path()).mkpath(QStringLiteral("metrics"));
        QJsonObject manifest{{QStringLiteral("id"), QStringLiteral("r")},
                             {QStringLiteral("state"), QStringLiteral("running")}};
        if (supervisorDetects)
            manifest.insert(QStringLiteral("monitor"),
                            QJsonObject{{QStringLiteral("detectors"), QStringLiteral("supervisor")}});
        writeFile(run.filePath(QStringLiteral("run.json")), QJsonDocument(manifest).toJson(), false);
        writeFile(run.filePath(QStringLiteral("events.jsonl")), "{\"v\":1,\"time\":1,\"event\":\"started\"}\n", false);
        writeFile(run.filePath(QStringLiteral("metrics/rank0.jsonl")),
                  "{\"v\":1,\"time\":1,\"step\":1,\"loss\":2}\n{\"v\":1,\"time\":1.01,\"step\":2,\"loss\":1}\n", false);

        RunMonitor *monitor = RunMonitor::forDirectory(run.path(), this);
        monitor->hangDetector()->setSettings({300, 5.0, 50});
        monitor->start();
        QTRY_VERIFY_WITH_TIMEOUT(monitor->hangDetector()->isHangSuspected(), 5000);
        QTest::qWait(700); // the follower reads events.jsonl back
        const int written = countEvents(readEvents(run.path()), QStringLiteral("hang_suspected"));
        QCOMPARE(written, supervisorDetects ? 0 : 1);
        monitor->stop();
        delete monitor;
    }
};

QTEST_GUILESS_MAIN(tst_SupervisorMonitor)
#include "tst_supervisormonitor.moc"
