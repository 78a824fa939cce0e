#include "monitor/metricstore.h"
#include "monitor/rundirectoryfollower.h"
#include "monitor/tailstream.h"

#include <QBuffer>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel::monitor;

namespace {

void appendTo(const QString &path, const QByteArray &bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Append));
    QCOMPARE(file.write(bytes), bytes.size());
}

QByteArray metricLine(int step, double loss)
{
    return "{\"v\":1,\"time\":" + QByteArray::number(1000 + step) + ",\"step\":" + QByteArray::number(step) +
           ",\"loss\":" + QByteArray::number(loss) + "}\n";
}

// Collects everything a source delivers.
struct Collector {
    MetricStore store;
    QList<RunEvent> events;
    QStringList logLines;
    QList<int> logRanks;
    QStringList restarts;
    QJsonObject manifest;

    void connectTo(RunSource &source)
    {
        QObject::connect(&source, &RunSource::metricsReceived, &store, &MetricStore::append);
        QObject::connect(&source, &RunSource::eventsReceived, &store,
                         [this](const QList<RunEvent> &e) { events += e; });
        QObject::connect(&source, &RunSource::logLinesReceived, &store, [this](const LogLines &l) {
            logLines += l.lines;
            for (int i = 0; i < l.lines.size(); ++i)
                logRanks.append(l.rank);
        });
        QObject::connect(
            &source, &RunSource::streamRestarted, &store,
            [this](const QString &path, const QString &reason) { restarts.append(path + QLatin1Char(':') + reason); });
        QObject::connect(&source, &RunSource::runInfoChanged, &store, [this](const QJsonObject &m) { manifest = m; });
    }
    qsizetype lossCount(int rank) const
    {
        const Series *s = store.series(rank, QStringLiteral("loss"));
        return s ? static_cast<qsizetype>(s->size()) : 0;
    }
};

} // namespace

class tst_RunDirectoryFollower : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void followsAppendsAndPartialLines_data()
    {
        QTest::addColumn<bool>("watcher");
        QTest::newRow("watcher") << true;
        QTest::newRow("polling only") << false;
    }
    void followsAppendsAndPartialLines()
    {
        QFETCH(bool, watcher);
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("metrics")));
        const QString rank0 = dir.filePath(QStringLiteral("metrics/rank0.jsonl"));
        appendTo(rank0, metricLine(1, 3.0) + metricLine(2, 2.9));

        RunDirectoryFollower follower(dir.path());
        follower.setWatcherEnabled(watcher);
        follower.setPollInterval(watcher ? 5000 : 30);
        Collector collector;
        collector.connectTo(follower);
        follower.start();
        QCOMPARE(collector.lossCount(0), 2); // what exists is read at start

        // A line written in two pieces with a pause in between arrives once, whole.
        const QByteArray third = metricLine(3, 2.8);
        appendTo(rank0, third.left(10));
        QTest::qWait(watcher ? 100 : 120);
        QCOMPARE(collector.lossCount(0), 2);
        appendTo(rank0, third.mid(10));
        QTRY_COMPARE_WITH_TIMEOUT(collector.lossCount(0), 3, 3000);
        QCOMPARE(collector.store.lastValue(0, QStringLiteral("loss")), 2.8);

        // A file that appears later (rank 1 starts late), in a folder watched since start.
        appendTo(dir.filePath(QStringLiteral("metrics/rank1.jsonl")), metricLine(1, 4.0));
        QTRY_COMPARE_WITH_TIMEOUT(collector.lossCount(1), 1, 3000);
        QCOMPARE(follower.metricsStats().junk, std::int64_t(0));
        QVERIFY(collector.restarts.isEmpty());
    }

    void truncationAndReplacementRestartFromZero()
    {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("metrics")));
        const QString rank0 = dir.filePath(QStringLiteral("metrics/rank0.jsonl"));
        appendTo(rank0, metricLine(1, 3.0) + metricLine(2, 2.9) + metricLine(3, 2.8));
        RunDirectoryFollower follower(dir.path());
        follower.setPollInterval(50);
        Collector collector;
        collector.connectTo(follower);
        follower.start();
        QCOMPARE(collector.lossCount(0), 3);

        // Truncated and rewritten shorter (a restarted rank reopening with "w").
        {
            QFile file(rank0);
            QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
            file.write(metricLine(1, 5.0));
        }
        QTRY_COMPARE_WITH_TIMEOUT(collector.restarts, QStringList{QStringLiteral("metrics/rank0.jsonl:truncated")},
                                  3000);
        QTRY_COMPARE_WITH_TIMEOUT(collector.lossCount(0), 4, 3000);
        QCOMPARE(collector.store.lastValue(0, QStringLiteral("loss")), 5.0);

        // Replaced by another file (atomic rename), longer than what was read.
        const QString replacement = dir.filePath(QStringLiteral("replacement.tmp"));
        appendTo(replacement, metricLine(1, 6.0) + metricLine(2, 6.1) + metricLine(3, 6.2) + metricLine(4, 6.3));
        QVERIFY(::rename(QFile::encodeName(replacement).constData(), QFile::encodeName(rank0).constData()) == 0);
        QTRY_COMPARE_WITH_TIMEOUT(collector.restarts.size(), 2, 3000);
        QCOMPARE(collector.restarts.last(), QStringLiteral("metrics/rank0.jsonl:replaced"));
        QTRY_COMPARE_WITH_TIMEOUT(collector.lossCount(0), 8, 3000);
        QCOMPARE(collector.store.lastValue(0, QStringLiteral("loss")), 6.3);
    }

    void eventsLogsAndManifest()
    {
        QTemporaryDir dir;
        RunDirectoryFollower follower(dir.path());
        follower.setPollInterval(50);
        Collector collector;
        collector.connectTo(follower);
        follower.start();
        // Everything appears after start, folders included.
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("logs")));
        appendTo(dir.filePath(QStringLiteral("run.json")), "{\"id\":\"run-1\",\"state\":\"running\"}");
        appendTo(dir.filePath(QStringLiteral("events.jsonl")),
                 "{\"v\":1,\"time\":1.5,\"event\":\"started\"}\ngarbage\n{\"v\":1,\"time\":2,\"event\":\"rank_exited\","
                 "\"rank\":1,"
                 "\"exit_code\":3}\n");
        appendTo(dir.filePath(QStringLiteral("logs/rank1.log")),
                 "hello\r\nepoch 1 \rprogress 50%\rprogress 100%\nhalf");
        QTRY_COMPARE_WITH_TIMEOUT(collector.events.size(), 2, 3000);
        QCOMPARE(collector.events[1].event, QStringLiteral("rank_exited"));
        QCOMPARE(collector.events[1].rank, 1);
        QCOMPARE(collector.events[1].fields.value(QLatin1String("exit_code")).toInt(), 3);
        QTRY_COMPARE_WITH_TIMEOUT(collector.logLines,
                                  (QStringList{QStringLiteral("hello"), QStringLiteral("progress 100%")}), 3000);
        QCOMPARE(collector.logRanks, (QList<int>{1, 1}));
        QTRY_COMPARE_WITH_TIMEOUT(collector.manifest.value(QLatin1String("state")).toString(),
                                  QStringLiteral("running"), 3000);
        appendTo(dir.filePath(QStringLiteral("logs/rank1.log")), " done\n");
        QTRY_COMPARE_WITH_TIMEOUT(collector.logLines.size(), 3, 3000);
        QCOMPARE(collector.logLines.last(), QStringLiteral("half done"));
    }

    void stdoutMetricsAreOptIn()
    {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("logs")));
        appendTo(dir.filePath(QStringLiteral("logs/rank0.log")),
                 "{'loss': 2.5, 'learning_rate': 5e-05, 'epoch': 0.1}\nstep=7 loss=2.25 lr=1e-4\n");
        RunDirectoryFollower plain(dir.path());
        Collector withoutParsing;
        withoutParsing.connectTo(plain);
        plain.start();
        QCOMPARE(withoutParsing.logLines.size(), 2);
        QCOMPARE(withoutParsing.lossCount(0), 0);

        RunDirectoryFollower parsing(dir.path());
        parsing.setStdoutMetricsEnabled(true);
        Collector withParsing;
        withParsing.connectTo(parsing);
        parsing.start();
        QCOMPARE(withParsing.lossCount(0), 2);
        QCOMPARE(withParsing.store.lastValue(0, QStringLiteral("lr")), 1e-4);
        QCOMPARE(withParsing.store.rankStatus(0).lastStep, std::int64_t(7));
    }

    void tailStreamRoundTrip()
    {
        // Local follower -> accel.tail encoder -> bytes (as over SSH) -> stream source.
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("metrics")));
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("logs")));
        appendTo(dir.filePath(QStringLiteral("run.json")), "{\"id\":\"r\"}");
        appendTo(dir.filePath(QStringLiteral("metrics/rank0.jsonl")), metricLine(1, 3.0) + metricLine(2, 2.0).left(7));
        appendTo(dir.filePath(QStringLiteral("logs/rank0.log")), "caf\xc3\xa9 line\n");
        appendTo(dir.filePath(QStringLiteral("events.jsonl")), "{\"v\":1,\"time\":1,\"event\":\"started\"}\n");

        RunDirectoryFollower follower(dir.path());
        TailStreamEncoder encoder;
        QByteArray wire = encoder.header(dir.path());
        connect(&follower, &RunSource::bytesRead, this,
                [&](const QString &path, const QByteArray &bytes) { wire += encoder.encodeBytes(path, bytes); });
        connect(&follower, &RunSource::runInfoChanged, this,
                [&](const QJsonObject &m) { wire += encoder.encodeManifest(m); });
        connect(&follower, &RunSource::streamRestarted, this,
                [&](const QString &path, const QString &reason) { wire += encoder.encodeRestart(path, reason); });
        follower.start();
        appendTo(dir.filePath(QStringLiteral("metrics/rank0.jsonl")), metricLine(2, 2.0).mid(7));
        follower.pollNow();
        wire += encoder.flush();
        QVERIFY(wire.startsWith("{\"schema\":\"accel.tail\",\"version\":1,"));

        StreamRunSource stream;
        Collector collector;
        collector.connectTo(stream);
        QSignalSpy ended(&stream, &RunSource::ended);
        QBuffer device(&wire);
        QVERIFY(device.open(QIODevice::ReadOnly));
        // Fed in awkward pieces, as a network would.
        for (qsizetype i = 0; i < wire.size(); i += 13)
            stream.feed(QByteArrayView(wire).sliced(i, std::min<qsizetype>(13, wire.size() - i)));
        stream.finish();
        QCOMPARE(ended.size(), 1);
        QCOMPARE(stream.runDirectory(), dir.path());
        QCOMPARE(collector.lossCount(0), 2);
        QCOMPARE(collector.logLines, QStringList{QStringLiteral("caf\u00e9 line")});
        QCOMPARE(collector.events.size(), 1);
        QCOMPARE(collector.manifest.value(QLatin1String("id")).toString(), QStringLiteral("r"));
        QCOMPARE(stream.junkLines(), 0);
    }

    void streamFromDeviceAndNewerVersion()
    {
        QByteArray wire = "{\"schema\":\"accel.tail\",\"version\":1,\"run\":\"x\"}\nnot json\n"
                          "{\"file\":\"metrics/"
                          "rank2.jsonl\",\"text\":\"{\\\"v\\\":1,\\\"time\\\":1,\\\"step\\\":1,\\\"loss\\\":1}\\n\"}\n";
        QBuffer device(&wire);
        QVERIFY(device.open(QIODevice::ReadOnly));
        StreamRunSource stream;
        Collector collector;
        collector.connectTo(stream);
        stream.attach(&device);
        QCOMPARE(collector.lossCount(2), 1);
        QCOMPARE(stream.junkLines(), 1);

        StreamRunSource newer;
        QSignalSpy ended(&newer, &RunSource::ended);
        newer.feed("{\"schema\":\"accel.tail\",\"version\":2}\n");
        QCOMPARE(ended.size(), 1);
        QVERIFY(ended.at(0).at(0).toString().contains(QLatin1String("version 2")));
    }
};

QTEST_GUILESS_MAIN(tst_RunDirectoryFollower)
#include "tst_rundirectoryfollower.moc"
