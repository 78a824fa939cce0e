// The accel.tail contract end to end: a real `accel tail RUN --follow --json` child process reads a
// run directory that this test writes in phases (partial lines, a new rank file, a truncated
// file, run.json replaced); a StreamRunSource fed with the child's stdout must reconstruct what a
// RunDirectoryFollower on the directory sees: the same samples per rank, events and log lines.
// The child exits by itself when run.json reaches a final state.
#include "monitor/metricstore.h"
#include "monitor/rundirectoryfollower.h"
#include "monitor/tailstream.h"
#include "tests/helpers/runfiles.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSaveFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel::monitor;
using accel::test::append;
using accel::test::metricLine;
using accel::test::writeManifest;

namespace {

// Everything one source delivered, in comparable form.
struct Collected {
    MetricStore store;
    QStringList events;
    std::map<int, QStringList> logs; // by rank
    QStringList restarts;
    QString lastState;
    QString endReason;
    bool ended = false;

    void attach(RunSource *source)
    {
        QObject::connect(source, &RunSource::metricsReceived, &store, &MetricStore::append);
        QObject::connect(source, &RunSource::eventsReceived, source, [this](const QList<RunEvent> &list) {
            for (const RunEvent &event : list)
                events << QString::fromUtf8(encodeEventLine(event)).trimmed();
        });
        QObject::connect(source, &RunSource::logLinesReceived, source,
                         [this](const LogLines &lines) { logs[lines.rank] << lines.lines; });
        QObject::connect(source, &RunSource::streamRestarted, source, [this](const QString &path, const QString &why) {
            restarts << path + QLatin1Char(' ') + why;
        });
        QObject::connect(source, &RunSource::runInfoChanged, source, [this](const QJsonObject &manifest) {
            lastState = manifest.value(QLatin1String("state")).toString();
        });
        QObject::connect(source, &RunSource::ended, source, [this](const QString &reason) {
            ended = true;
            endReason = reason;
        });
    }

    // (step, loss) pairs of a rank, in arrival order.
    QList<QPair<double, double>> losses(int rank) const
    {
        QList<QPair<double, double>> pairs;
        if (const Series *series = store.series(rank, QStringLiteral("loss"))) {
            for (size_t i = 0; i < series->size(); ++i)
                pairs.append({series->steps[i], series->values[i]});
        }
        return pairs;
    }
};

} // namespace

class tst_TailStream : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void streamOfRealTailChildEqualsDirectoryFollower()
    {
        QTemporaryDir dir;
        const QString run = dir.filePath(QStringLiteral("streamed"));
        QVERIFY(QDir().mkpath(run + QStringLiteral("/metrics")));
        QVERIFY(QDir().mkpath(run + QStringLiteral("/logs")));
        writeManifest(run, QStringLiteral("running"));
        append(run + QStringLiteral("/events.jsonl"),
               "{\"event\":\"started\",\"launcher\":\"simple\",\"ranks\":2,\"time\":1}\n");
        append(run + QStringLiteral("/metrics/rank0.jsonl"), metricLine(0, 1) + metricLine(0, 2));
        append(run + QStringLiteral("/logs/rank0.log"), "rank 0 says hello\nprogress 1/3\rprogress 3/3\n");

        Collected direct;
        RunDirectoryFollower follower(run);
        follower.setPollInterval(100);
        direct.attach(&follower);
        follower.start();

        Collected streamed;
        StreamRunSource source;
        streamed.attach(&source);
        QByteArray wire;
        QProcess tail;
        connect(&tail, &QProcess::readyReadStandardOutput, this, [&] {
            const QByteArray bytes = tail.readAllStandardOutput();
            wire += bytes;
            source.feed(bytes);
        });
        connect(&tail, &QProcess::finished, this, [&] {
            const QByteArray bytes = tail.readAllStandardOutput();
            wire += bytes;
            source.feed(bytes);
            source.finish(QStringLiteral("accel tail exited"));
        });
        tail.start(accel::test::binDir() + QStringLiteral("/accel"),
                   {QStringLiteral("tail"), run, QStringLiteral("--follow"), QStringLiteral("--json")});
        QVERIFY(tail.waitForStarted(10000));

        auto bothHave = [&](int rank0Samples, int rank1Samples, int events, int rank0Logs) {
            for (const Collected *side : {&direct, &streamed}) {
                if (side->losses(0).size() != rank0Samples || side->losses(1).size() != rank1Samples ||
                    side->events.size() != events ||
                    int(side->logs.count(0) ? side->logs.at(0).size() : 0) != rank0Logs)
                    return false;
            }
            return true;
        };
        QTRY_VERIFY_WITH_TIMEOUT(bothHave(2, 0, 1, 2), 10000);
        QVERIFY(wire.startsWith("{\"schema\":\"accel.tail\",\"version\":1,\"run\":"));

        // Partial lines: half a metrics line, half a log line, half an event; nothing of them shows yet.
        const QByteArray third = metricLine(0, 3);
        append(run + QStringLiteral("/metrics/rank0.jsonl"), third.left(10));
        append(run + QStringLiteral("/logs/rank0.log"), "a line in two ");
        append(run + QStringLiteral("/events.jsonl"), "{\"event\":\"rank_started\",\"pid\":");
        QTest::qWait(600);
        QVERIFY(bothHave(2, 0, 1, 2));
        append(run + QStringLiteral("/metrics/rank0.jsonl"), third.mid(10) + metricLine(0, 4));
        append(run + QStringLiteral("/logs/rank0.log"), "halves\n");
        append(run + QStringLiteral("/events.jsonl"), "42,\"rank\":1,\"time\":2}\n");
        // A rank file that appears later, with junk the parser skips.
        append(run + QStringLiteral("/metrics/rank1.jsonl"), metricLine(1, 1) + "not json\n" + metricLine(1, 2));
        QTRY_VERIFY_WITH_TIMEOUT(bothHave(4, 2, 2, 3), 10000);

        // Truncation: rank 1's metrics restart from an earlier checkpoint (shorter file).
        {
            QFile file(run + QStringLiteral("/metrics/rank1.jsonl"));
            QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
            file.write(metricLine(1, 1));
        }
        QTRY_VERIFY_WITH_TIMEOUT(bothHave(4, 3, 2, 3), 10000);
        QCOMPARE(streamed.restarts, direct.restarts);
        QCOMPARE(direct.restarts, QStringList{QStringLiteral("metrics/rank1.jsonl truncated")});
        append(run + QStringLiteral("/logs/rank1.log"), "rank 1 after the restart\n");
        append(run + QStringLiteral("/events.jsonl"), "{\"event\":\"finished\",\"exit_code\":0,\"time\":3}\n");
        QTRY_VERIFY_WITH_TIMEOUT(bothHave(4, 3, 3, 3) && streamed.logs.count(1) && direct.logs.count(1), 10000);

        // The run ends: the child notices, sends the final manifest and exits.
        writeManifest(run, QStringLiteral("succeeded"));
        QTRY_VERIFY_WITH_TIMEOUT(streamed.ended, 10000);
        QCOMPARE(tail.exitStatus(), QProcess::NormalExit);
        QCOMPARE(tail.exitCode(), 0);
        QCOMPARE(streamed.endReason, QStringLiteral("accel tail exited"));
        QTRY_COMPARE_WITH_TIMEOUT(direct.lastState, QStringLiteral("succeeded"), 5000);
        QCOMPARE(streamed.lastState, QStringLiteral("succeeded"));
        QCOMPARE(source.runDirectory(), run);
        QCOMPARE(source.junkLines(), qint64(0));

        // The same store, events and logs on both sides.
        QCOMPARE(streamed.store.ranks(), direct.store.ranks());
        for (int rank : direct.store.ranks()) {
            QCOMPARE(streamed.losses(rank), direct.losses(rank));
            QCOMPARE(streamed.store.rankStatus(rank).lastStep, direct.store.rankStatus(rank).lastStep);
        }
        QCOMPARE(direct.losses(1).size(), qsizetype(3));
        QCOMPARE(streamed.events, direct.events);
        QCOMPARE(streamed.logs, direct.logs);
        QCOMPARE(direct.logs.at(0), (QStringList{QStringLiteral("rank 0 says hello"), QStringLiteral("progress 3/3"),
                                                 QStringLiteral("a line in two halves")}));
        QCOMPARE(source.metricsStats().junk, follower.metricsStats().junk);
        follower.stop();
    }

    // Regression: one 300 MB line took 3.5 GB with --json; the encoder now drops a line longer than
    // the cap whole (one warning) and keeps the lines around it, whatever the chunking.
    void encoderSkipsOverLongLines()
    {
        TailStreamEncoder encoder;
        const QByteArray huge(TailStreamEncoder::kMaximumLineBytes + 10, 'y');
        QByteArray out = encoder.encodeBytes(QStringLiteral("metrics/rank0.jsonl"), "{\"a\":1}\n" + huge.left(1000));
        for (qsizetype at = 1000; at < huge.size(); at += 300000)
            out += encoder.encodeBytes(QStringLiteral("metrics/rank0.jsonl"), huge.mid(at, 300000));
        out += encoder.encodeBytes(QStringLiteral("metrics/rank0.jsonl"), "\n{\"b\":2}\n{\"c\":3}");
        out += encoder.flush();
        QVERIFY(out.size() < 1024);
        StreamRunSource source;
        QStringList texts;
        connect(&source, &RunSource::bytesRead, this,
                [&texts](const QString &, const QByteArray &bytes) { texts << QString::fromUtf8(bytes); });
        source.feed(out);
        QCOMPARE(texts.join(QString()), QStringLiteral("{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"));
        const QStringList warnings = encoder.takeWarnings();
        QCOMPARE(warnings.size(), 1);
        QVERIFY(warnings.first().contains(QStringLiteral("metrics/rank0.jsonl")));
        QVERIFY(encoder.takeWarnings().isEmpty());
    }

    // A log line over the cap reaches the log view as one marker, never as pieces of it.
    void overLongLogLineIsOneMarker()
    {
        StreamRunSource source;
        QStringList lines;
        connect(&source, &RunSource::logLinesReceived, this, [&lines](const LogLines &batch) { lines += batch.lines; });
        const QByteArray huge(3 * 1024 * 1024, 'z');
        auto envelopeOf = [](const QByteArray &text) {
            return QJsonDocument(QJsonObject{{QStringLiteral("file"), QStringLiteral("logs/rank0.log")},
                                             {QStringLiteral("text"), QString::fromLatin1(text)}})
                       .toJson(QJsonDocument::Compact) +
                   '\n';
        };
        // The long line arrives in pieces without a newline, then ends.
        source.feed(envelopeOf("before\n" + huge.left(1500000)));
        source.feed(envelopeOf(huge.mid(1500000)));
        source.feed(envelopeOf("\nafter\n"));
        source.finish();
        QCOMPARE(lines.size(), 3);
        QCOMPARE(lines.at(0), QStringLiteral("before"));
        QVERIFY(lines.at(1).startsWith(QStringLiteral("[accel: skipped a line longer than")));
        QCOMPARE(lines.at(2), QStringLiteral("after"));
    }

    void filtersAndHumanOutputStay()
    {
        // --rank/--metrics narrow the stream; without --json the human text is unchanged.
        QTemporaryDir dir;
        const QString run = dir.filePath(QStringLiteral("done"));
        QVERIFY(QDir().mkpath(run + QStringLiteral("/metrics")));
        QVERIFY(QDir().mkpath(run + QStringLiteral("/logs")));
        writeManifest(run, QStringLiteral("succeeded"));
        append(run + QStringLiteral("/metrics/rank0.jsonl"), metricLine(0, 1));
        append(run + QStringLiteral("/metrics/rank1.jsonl"), metricLine(1, 1));
        append(run + QStringLiteral("/logs/rank1.log"), "one\ntwo\n");
        const auto stream =
            accel::test::runAccel({QStringLiteral("tail"), run, QStringLiteral("--follow"), QStringLiteral("--json"),
                                   QStringLiteral("--metrics"), QStringLiteral("--rank"), QStringLiteral("1")});
        QCOMPARE(stream.exitCode, 0);
        QVERIFY(stream.out.contains(QStringLiteral("\"file\":\"metrics/rank1.jsonl\"")));
        QVERIFY(!stream.out.contains(QStringLiteral("rank0.jsonl")));
        QVERIFY(!stream.out.contains(QStringLiteral("logs/")));
        QVERIFY(stream.out.contains(QStringLiteral("\"manifest\"")));
        const auto human = accel::test::runAccel({QStringLiteral("tail"), run, QStringLiteral("--follow")});
        QCOMPARE(human.exitCode, 0);
        QCOMPARE(human.out, QStringLiteral("one\ntwo\n"));
    }
};

QTEST_GUILESS_MAIN(tst_TailStream)
#include "tst_tailstream.moc"
