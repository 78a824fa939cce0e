#include "monitor/metricsparser.h"
#include "monitor/metricstore.h"
#include "monitor/systemsampler.h"

#include <QCoreApplication>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel::monitor;

class tst_SystemSampler : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void writesSystemLinesTheParserReads()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("system.jsonl"));
        // A busy child process (a shell loop) and this test process.
        QProcess busy;
        busy.start(QStringLiteral("sh"), {QStringLiteral("-c"), QStringLiteral("while :; do :; done")});
        QVERIFY(busy.waitForStarted(5000));
        SystemSampler sampler;
        sampler.setOutputFile(file);
        sampler.setProcesses({busy.processId(), QCoreApplication::applicationPid(), 999999999});
        sampler.setInterval(150);
        QSignalSpy sampled(&sampler, &SystemSampler::sampled);
        sampler.start();
        QTRY_VERIFY_WITH_TIMEOUT(sampled.size() >= 2, 5000);
        sampler.stop();
        busy.kill();
        busy.waitForFinished(5000);

        QFile in(file);
        QVERIFY(in.open(QIODevice::ReadOnly));
        MetricsParser parser;
        MetricBatch batch;
        parser.feed(in.readAll(), batch);
        QCOMPARE(parser.stats().junk, std::int64_t(0));
        QVERIFY(batch.rows.size() >= 2);
        MetricStore store;
        store.append(batch);
        QCOMPARE(store.ranks(), QList<int>{-1});
        QCOMPARE(batch.rows[0].kind, SampleKind::System);
        QCOMPARE(batch.rows[0].step, kNoStep);
        const double rss = store.lastValue(-1, QStringLiteral("mem_rss_bytes"));
        QVERIFY2(rss > 1e6, qPrintable(QString::number(rss)));           // at least this test's own memory
        QCOMPARE(store.lastValue(-1, QStringLiteral("processes")), 2.0); // the bogus pid is not alive
        const double cpu = store.series(-1, QStringLiteral("processes_cpu_percent"))->values.back();
        QVERIFY2(cpu > 1 && cpu < 250,
                 qPrintable(QString::number(cpu))); // the spinning shell (on a busy machine it gets a share of a core)
        const double host = store.lastValue(-1, QStringLiteral("cpu_percent"));
        QVERIFY(host >= 0 && host <= 100);
        QVERIFY(store.lastValue(-1, QStringLiteral("mem_total_bytes")) >
                store.lastValue(-1, QStringLiteral("mem_used_bytes")));
    }
};

QTEST_GUILESS_MAIN(tst_SystemSampler)
#include "tst_systemsampler.moc"
