// Monitor benchmarks: parse+store throughput on one core, follower latency from a metrics line
// appended to a file to its sample in the store, and decimation of a 1M-point series.
#include "monitor/decimation.h"
#include "monitor/metricsparser.h"
#include "monitor/metricstore.h"
#include "monitor/rundirectoryfollower.h"
#include "tests/helpers/benchreport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstdio>

using namespace accel::monitor;
using accel::test::bench;
using accel::test::percentile;

namespace {

QByteArray makeLines(int count)
{
    QByteArray text;
    text.reserve(count * 150);
    for (int i = 0; i < count; ++i) {
        const int rank = i % 4;
        const int step = i / 4;
        text += "{\"v\":1,\"time\":" + QByteArray::number(1763771234.512 + step * 0.25, 'f', 3) +
                ",\"rank\":" + QByteArray::number(rank) + ",\"step\":" + QByteArray::number(step) +
                ",\"loss\":" + QByteArray::number(2.5 - step * 1e-6 + rank * 0.001, 'g', 7) +
                ",\"lr\":0.0003,\"grad_norm\":" + QByteArray::number(1.0 + (i % 17) * 0.01, 'g', 5) +
                ",\"samples_per_s\":512.0}\n";
    }
    return text;
}

} // namespace

class bench_Monitor : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parseAndStoreThroughput()
    {
        const int lines = 1000000;
        const QByteArray text = makeLines(lines);
        double bestParse = 0;
        for (int round = 0; round < 3; ++round) {
            MetricsParser parser;
            MetricBatch batch;
            QElapsedTimer timer;
            timer.start();
            constexpr qsizetype chunk = 64 * 1024;
            for (qsizetype offset = 0; offset < text.size(); offset += chunk) {
                batch.clear();
                parser.feed(QByteArrayView(text).sliced(offset, std::min(chunk, text.size() - offset)), batch);
            }
            bestParse = std::max(bestParse, lines / (timer.nsecsElapsed() / 1e9));
            QCOMPARE(parser.stats().samples, std::int64_t(lines));
        }
        bench("monitor.parse_only_lines_per_s", bestParse, "lines/s");
        double best = 0;
        for (int round = 0; round < 3; ++round) {
            MetricsParser parser;
            MetricStore store;
            MetricBatch batch;
            QElapsedTimer timer;
            timer.start();
            constexpr qsizetype chunk = 64 * 1024;
            for (qsizetype offset = 0; offset < text.size(); offset += chunk) {
                batch.clear();
                parser.feed(QByteArrayView(text).sliced(offset, std::min(chunk, text.size() - offset)), batch);
                store.append(batch);
            }
            const double seconds = timer.nsecsElapsed() / 1e9;
            QCOMPARE(store.totalSamples(), std::int64_t(lines));
            QCOMPARE(parser.stats().junk, std::int64_t(0));
            best = std::max(best, lines / seconds);
        }

        // Peer: a QJsonDocument parse per line (what a straightforward reader would do), on a slice.
        const int peerLines = 200000;
        QElapsedTimer timer;
        timer.start();
        double checksum = 0;
        const QByteArray slice =
            text.left(text.indexOf('\n', static_cast<qsizetype>(text.size() / (lines / peerLines))) + 1);
        int parsed = 0;
        for (const QByteArray &line : slice.split('\n')) {
            if (line.isEmpty())
                continue;
            checksum += QJsonDocument::fromJson(line).object().value(QLatin1String("loss")).toDouble();
            ++parsed;
        }
        const double peer = parsed / (timer.nsecsElapsed() / 1e9);
        QVERIFY(checksum > 0);
        bench("monitor.parse_store_lines_per_s", best, "lines/s",
              QStringLiteral("peer=%1 ratio=%2 target=>=500000").arg(peer, 0, 'f', 0).arg(best / peer, 0, 'f', 1));
        QCOMPARE(best > 0, true);
    }

    void followerLatency()
    {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("metrics")));
        const QString path = dir.filePath(QStringLiteral("metrics/rank0.jsonl"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Append | QIODevice::Unbuffered));
        file.write("{\"v\":1,\"time\":0,\"step\":0,\"loss\":1}\n");

        RunDirectoryFollower follower(dir.path());
        MetricStore store;
        connect(&follower, &RunSource::metricsReceived, &store, &MetricStore::append);
        follower.start();

        std::vector<double> latencies;
        QElapsedTimer clock;
        clock.start();
        qint64 writtenAt = 0;
        connect(&store, &MetricStore::samplesAppended, this, [&] {
            if (writtenAt > 0) {
                latencies.push_back((clock.nsecsElapsed() - writtenAt) / 1e6);
                writtenAt = 0;
            }
        });
        const int samples = 60;
        for (int step = 1; step <= samples; ++step) {
            QTest::qWait(25);
            writtenAt = clock.nsecsElapsed();
            file.write("{\"v\":1,\"time\":" + QByteArray::number(step) + ",\"step\":" + QByteArray::number(step) +
                       ",\"loss\":1}\n");
            QTRY_VERIFY_WITH_TIMEOUT(writtenAt == 0, 5000);
        }
        QCOMPARE(latencies.size(), size_t(samples));
        bench("monitor.follower_latency_median", percentile(latencies, 0.5), "ms", QStringLiteral("target=<=150"));
        bench("monitor.follower_latency_p95", percentile(latencies, 0.95), "ms");
    }

    void decimateMillionPoints()
    {
        Series series;
        const int count = 1000000;
        series.reserve(count);
        for (int i = 0; i < count; ++i)
            series.append(i, i, std::sin(i * 0.001) + (i % 1000 == 0 ? 5.0 : 0.0));
        std::vector<double> times;
        DecimatedSeries out;
        for (int round = 0; round < 20; ++round) {
            QElapsedTimer timer;
            timer.start();
            out = decimate(series, 0, count - 1, 1920);
            times.push_back(timer.nsecsElapsed() / 1e6);
        }
        QVERIFY(out.x.size() <= 2 * 1920 + 2);
        bench("monitor.decimate_1M_to_1920px", percentile(times, 0.5), "ms", QStringLiteral("target=<=33"));
    }
};

QTEST_GUILESS_MAIN(bench_Monitor)
#include "bench_monitor.moc"
