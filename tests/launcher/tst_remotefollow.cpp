// Remote monitoring: `accel tail --follow --json --from FILE=OFFSET` continues a stream exactly after
// a line (real accel processes), and RemoteRunFollower follows a run through a real OpenSSH server
// (SshTestServer) while its connection is killed mid-run: every file's bytes, metric rows and
// events arrive exactly once and in order, the follower ends when the run does, and an unreachable
// host or a missing run is reported. `accel stack` of a run supervised on another host runs there
// over the same sshd and prints what it printed.
#include "app/remote/remoterunfollower.h"
#include "launcher/host.h"
#include "launcher/sshhost.h"
#include "tests/helpers/runfiles.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <csignal>
#include <cstring>

using namespace accel::launcher;
using accel::app::RemoteFollowOptions;
using accel::app::RemoteRunFollower;
using accel::monitor::MetricBatch;
using accel::monitor::RunEvent;
using accel::monitor::RunSource;
using accel::test::append;
using accel::test::metricLine;
using accel::test::writeManifest;

namespace {

QString accelProgram()
{
    return QDir(accel::test::binDir()).filePath(QStringLiteral("accel"));
}

QByteArray readAll(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// A run directory with a live state, metrics, events and a log.
QString makeRun(const QTemporaryDir &dir)
{
    const QString run = dir.filePath(QStringLiteral("remote"));
    QDir().mkpath(run + QStringLiteral("/metrics"));
    QDir().mkpath(run + QStringLiteral("/logs"));
    writeManifest(run, QStringLiteral("running"));
    return run;
}

// The writer of a live run: every tick one metrics line for rank 0 or 1 (alternating), every 10th
// tick a log line, every 25th an event.
struct RunWriter {
    QString run;
    int total = 0;
    int written = 0;
    QTimer timer;

    void start(int lines, int intervalMs)
    {
        total = lines;
        timer.setInterval(intervalMs);
        QObject::connect(&timer, &QTimer::timeout, &timer, [this] {
            const int rank = written % 2;
            append(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank), metricLine(rank, written / 2 + 1));
            if (written % 10 == 0)
                append(run + QStringLiteral("/logs/rank0.log"), "tick " + QByteArray::number(written) + '\n');
            if (written % 25 == 0)
                append(run + QStringLiteral("/events.jsonl"),
                       "{\"event\":\"rank_started\",\"rank\":" + QByteArray::number(rank) +
                           ",\"time\":" + QByteArray::number(written) + "}\n");
            if (++written == total)
                timer.stop();
        });
        timer.start();
    }
};

// What a RunSource delivered.
struct Received {
    std::map<QString, QByteArray> bytes; // per file, every text in arrival order
    QList<QPair<int, qint64>> rows;      // (rank, step) of every metric row
    std::map<QString, int> rowsPerFile;
    QList<QPair<int, double>> events; // (rank, time) of every event
    QStringList restarts;
    QString endReason;
    bool ended = false;

    void attach(RunSource *source)
    {
        QObject::connect(source, &RunSource::bytesRead, source,
                         [this](const QString &file, const QByteArray &text) { bytes[file] += text; });
        QObject::connect(source, &RunSource::metricsReceived, source, [this](const MetricBatch &batch) {
            for (const auto &row : batch.rows)
                rows.append({row.rank, row.step});
            rowsPerFile[batch.source] += int(batch.rows.size());
        });
        QObject::connect(source, &RunSource::eventsReceived, source, [this](const QList<RunEvent> &list) {
            for (const RunEvent &event : list)
                events.append({event.rank, event.time});
        });
        QObject::connect(source, &RunSource::streamRestarted, source, [this](const QString &file, const QString &why) {
            restarts << file + QLatin1Char(' ') + why;
        });
        QObject::connect(source, &RunSource::ended, source, [this](const QString &reason) {
            endReason = reason;
            ended = true;
        });
    }
};

// The (rank, step) rows and (rank, time) events the files hold, in file order per rank.
QList<QPair<int, qint64>> rowsOfFile(const QString &path, int rank)
{
    QList<QPair<int, qint64>> rows;
    for (const QByteArray &line : readAll(path).split('\n')) {
        if (!line.isEmpty())
            rows.append({rank, QJsonDocument::fromJson(line).object().value(QLatin1String("step")).toInteger()});
    }
    return rows;
}

// Text envelopes of an accel.tail stream: (file, text, offset).
struct Envelope {
    QString file;
    QByteArray text;
    qint64 offset = -1;
    QString restarted;
};

QList<Envelope> envelopes(const QString &stream)
{
    QList<Envelope> list;
    for (const QString &line : stream.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QJsonObject object = QJsonDocument::fromJson(line.toUtf8()).object();
        if (object.contains(QLatin1String("text")) || object.contains(QLatin1String("restarted")))
            list.append({object.value(QLatin1String("file")).toString(),
                         object.value(QLatin1String("text")).toString().toUtf8(),
                         object.value(QLatin1String("offset")).toInteger(-1),
                         object.value(QLatin1String("restarted")).toString()});
    }
    return list;
}

} // namespace

class tst_RemoteFollow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void streamCarriesEachFilesOffset();
    void streamSourceKeepsEachFilesPosition();
    void tailFromOffsetContinuesExactlyAfterIt();
    void tailFromBeyondTheEndRestartsTheFile();
    void badFromIsRefusedWithWhatIsValid();
    void followsAcrossDroppedConnectionsWithoutLossOrDuplicates();
    void followsARealLaunchToItsEnd();
    void unreachableHostIsReported();
    void missingRunIsReported();
    void localHostFollowsTheSameWay();
    void stackOfARunOnAnotherHostRunsThere(); // and accel stop of it

private:
    SshHostOptions options(const QString &destination) const;
    accel::test::SshTestServer m_server;
    QString m_serverUnavailable;
};

void tst_RemoteFollow::initTestCase()
{
    QVERIFY2(QFile::exists(accelProgram()), "build the accel target");
    qunsetenv("SSH_AUTH_SOCK"); // keys from the test's own folder only
    qunsetenv("ACCEL_REMOTE_BIN");
    m_serverUnavailable = accel::test::SshTestServer::unavailableReason();
    if (m_serverUnavailable.isEmpty()) {
        const QString error = m_server.start();
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }
}

SshHostOptions tst_RemoteFollow::options(const QString &destination) const
{
    SshHostOptions options;
    options.destination = destination;
    options.sshDirectory = m_server.clientDirectory();
    options.accelProgram = accelProgram();
    options.timeoutMs = 10000;
    options.stopGraceMs = 500;
    return options;
}

void tst_RemoteFollow::streamCarriesEachFilesOffset()
{
    QTemporaryDir dir;
    const QString run = makeRun(dir);
    append(run + QStringLiteral("/metrics/rank0.jsonl"), metricLine(0, 1) + metricLine(0, 2) + "{\"v\":1,\"st");
    append(run + QStringLiteral("/events.jsonl"), "{\"event\":\"started\",\"ranks\":1,\"time\":1}\n");
    writeManifest(run, QStringLiteral("succeeded"));
    const auto result = accel::test::runAccel({"tail", run, "--follow", "--json"}, 30000);
    QCOMPARE(result.exitCode, 0);
    QMap<QString, QList<qint64>> offsets;
    for (const Envelope &envelope : envelopes(result.out))
        offsets[envelope.file] << envelope.offset;
    // Whole lines only, then the partial last line at the end of the stream (the run has ended).
    const qint64 wholeLines = (metricLine(0, 1) + metricLine(0, 2)).size();
    QCOMPARE(offsets.value(QStringLiteral("metrics/rank0.jsonl")),
             (QList<qint64>{wholeLines, wholeLines + qint64(strlen("{\"v\":1,\"st"))}));
    QCOMPARE(offsets.value(QStringLiteral("events.jsonl")),
             QList<qint64>{QFileInfo(run + QStringLiteral("/events.jsonl")).size()});
    // Lines start as before the offset was added (readers that match a prefix keep working).
    QVERIFY(result.out.contains(QStringLiteral("{\"file\":\"events.jsonl\",\"text\":")));
}

void tst_RemoteFollow::streamSourceKeepsEachFilesPosition()
{
    accel::monitor::StreamRunSource source;
    source.feed("{\"schema\":\"accel.tail\",\"version\":1,\"run\":\"/r\"}\n"
                "{\"file\":\"events.jsonl\",\"text\":\"{}\\n\",\"offset\":3}\n"
                "{\"file\":\"logs/rank0.log\",\"text\":\"a\\n\",\"offset\":2}\n"
                "{\"file\":\"events.jsonl\",\"text\":\"{}\\n\",\"offset\":6}\n"
                "{\"file\":\"logs/rank0.log\",\"restarted\":\"truncated\"}\n"
                "{\"file\":\"metrics/rank0.jsonl\",\"text\":\"{\\\"v\\\":1,");
    QCOMPARE(source.positions(), (QHash<QString, qint64>{{QStringLiteral("events.jsonl"), 6}}));
    QVERIFY(source.positionsKnown());
    // A connection lost in the middle of a line: the half line is dropped, the next stream follows.
    source.discardPartialLine();
    source.feed("{\"schema\":\"accel.tail\",\"version\":1,\"run\":\"/r\"}\n"
                "{\"file\":\"logs/rank0.log\",\"text\":\"b\\n\"}\n");
    QCOMPARE(source.junkLines(), qint64(0));
    QVERIFY(!source.positionsKnown()); // a text without offset: an older accel, no resuming
}

void tst_RemoteFollow::tailFromOffsetContinuesExactlyAfterIt()
{
    QTemporaryDir dir;
    const QString run = makeRun(dir);
    QByteArray metrics;
    for (int step = 1; step <= 20; ++step)
        metrics += metricLine(0, step);
    append(run + QStringLiteral("/metrics/rank0.jsonl"), metrics);
    append(run + QStringLiteral("/events.jsonl"), "{\"event\":\"started\",\"ranks\":1,\"time\":1}\n");
    writeManifest(run, QStringLiteral("succeeded"));
    qint64 afterSeven = 0;
    for (int step = 1; step <= 7; ++step)
        afterSeven += metricLine(0, step).size();
    const auto result = accel::test::runAccel(
        {"tail", run, "--follow", "--json", "--from", "metrics/rank0.jsonl=" + QString::number(afterSeven)}, 30000);
    QCOMPARE(result.exitCode, 0);
    std::map<QString, QByteArray> texts;
    for (const Envelope &envelope : envelopes(result.out)) {
        QVERIFY2(envelope.restarted.isEmpty(), qPrintable(envelope.file));
        texts[envelope.file] += envelope.text;
    }
    QCOMPARE(texts[QStringLiteral("metrics/rank0.jsonl")], metrics.mid(afterSeven)); // steps 8..20, nothing before
    QCOMPARE(texts[QStringLiteral("events.jsonl")], readAll(run + QStringLiteral("/events.jsonl"))); // from 0
    // From the very end: nothing of that file comes again.
    const auto atEnd = accel::test::runAccel({"tail", run, "--follow", "--json", "--metrics", "--from",
                                              "metrics/rank0.jsonl=" + QString::number(metrics.size())},
                                             30000);
    QCOMPARE(atEnd.exitCode, 0);
    QVERIFY2(envelopes(atEnd.out).isEmpty(), qPrintable(atEnd.out));
}

void tst_RemoteFollow::tailFromBeyondTheEndRestartsTheFile()
{
    // The file is shorter than the offset (rewritten since): it is sent again from its start, and
    // the reader is told so.
    QTemporaryDir dir;
    const QString run = makeRun(dir);
    append(run + QStringLiteral("/metrics/rank0.jsonl"), metricLine(0, 1));
    writeManifest(run, QStringLiteral("succeeded"));
    const auto result =
        accel::test::runAccel({"tail", run, "--follow", "--json", "--from", "metrics/rank0.jsonl=5000"}, 30000);
    QCOMPARE(result.exitCode, 0);
    const QList<Envelope> list = envelopes(result.out);
    QCOMPARE(list.size(), 2);
    QCOMPARE(list[0].restarted, QStringLiteral("truncated"));
    QCOMPARE(list[1].text, metricLine(0, 1));
    QCOMPARE(list[1].offset, qint64(metricLine(0, 1).size()));
}

void tst_RemoteFollow::badFromIsRefusedWithWhatIsValid()
{
    QTemporaryDir dir;
    const QString run = makeRun(dir);
    for (const QString &value : {QStringLiteral("../run.json=3"), QStringLiteral("metrics/rank0.jsonl=-3"),
                                 QStringLiteral("metrics/rank0.jsonl"), QStringLiteral("metrics/rank0.jsonl=12x"),
                                 QStringLiteral("run.json=0"), QStringLiteral("metrics/a/b.jsonl=1")}) {
        const auto result = accel::test::runAccel({"tail", run, "--follow", "--json", "--from", value});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("--from ") + value) && result.err.contains("FILE=OFFSET") &&
                     result.err.contains("metrics/NAME.jsonl"),
                 qPrintable(result.err));
    }
    const auto twice = accel::test::runAccel(
        {"tail", run, "--follow", "--json", "--from", "events.jsonl=1", "--from", "events.jsonl=2"});
    QCOMPARE(twice.exitCode, 2);
    QVERIFY2(twice.err.contains(QStringLiteral("events.jsonl is given twice")), qPrintable(twice.err));
    const auto notStreaming = accel::test::runAccel({"tail", run, "--json", "--from", "events.jsonl=1"});
    QCOMPARE(notStreaming.exitCode, 2);
    QVERIFY2(notStreaming.err.contains(QStringLiteral("--from needs --follow --json")), qPrintable(notStreaming.err));
}

void tst_RemoteFollow::followsAcrossDroppedConnectionsWithoutLossOrDuplicates()
{
    if (!m_serverUnavailable.isEmpty())
        QSKIP(qPrintable(m_serverUnavailable));
    QTemporaryDir dir;
    const QString run = makeRun(dir);
    RunWriter writer;
    writer.run = run;
    writer.start(100000, 10); // stopped below, once the connections were dropped

    SshHost host(options(m_server.alias()));
    RemoteFollowOptions follow;
    follow.firstRetryMs = 100;
    RemoteRunFollower follower(&host, run, follow);
    Received received;
    received.attach(&follower);
    QSignalSpy lost(&follower, &RemoteRunFollower::connectionLost);
    QSignalSpy streams(&follower, &RemoteRunFollower::streamStarted);
    follower.start();

    // Kill the connection three times while the run is being written, each time once the previous
    // connection streams and more lines have come.
    for (int drop = 1; drop <= 3; ++drop) {
        QVERIFY2(QTest::qWaitFor([&] { return streams.size() >= drop && received.rows.size() >= drop * 100; }, 60000),
                 qPrintable(QStringLiteral("drop %1: %2 rows, %3 streams, ended: %4")
                                .arg(drop)
                                .arg(received.rows.size())
                                .arg(streams.size())
                                .arg(received.endReason)));
        QVERIFY(m_server.dropConnections() > 0);
        QVERIFY(QTest::qWaitFor([&] { return lost.size() >= drop; }, 30000));
    }
    // More lines through the last connection, then the run ends.
    QVERIFY(QTest::qWaitFor([&] { return streams.size() >= 4 && received.rows.size() >= 450; }, 60000));
    writer.timer.stop();
    writeManifest(run, QStringLiteral("succeeded"));
    QVERIFY2(QTest::qWaitFor([&] { return received.ended; }, 60000), qPrintable(QString::number(received.rows.size())));

    QCOMPARE(received.endReason, QStringLiteral("run ended: succeeded"));
    QCOMPARE(follower.failure(), QString());
    QCOMPARE(follower.runState(), QStringLiteral("succeeded"));
    QCOMPARE(lost.size(), 3); // one per drop: each reconnection streamed at its first attempt
    for (const auto &signal : lost)
        QCOMPARE(signal.at(0).toString(), QStringLiteral("connection_lost"));
    QCOMPARE(follower.connections(), 4);
    QVERIFY(received.restarts.isEmpty());
    // Every file arrived byte for byte: nothing lost, nothing twice.
    for (const QString &file : {QStringLiteral("metrics/rank0.jsonl"), QStringLiteral("metrics/rank1.jsonl"),
                                QStringLiteral("events.jsonl"), QStringLiteral("logs/rank0.log")})
        QVERIFY2(received.bytes[file] == readAll(run + QLatin1Char('/') + file), qPrintable(file));
    // And so did the decoded points and events, in order.
    for (int rank : {0, 1}) {
        QList<QPair<int, qint64>> mine;
        for (const auto &row : received.rows)
            if (row.first == rank)
                mine.append(row);
        QCOMPARE(mine, rowsOfFile(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank), rank));
        QVERIFY(mine.size() >= 225);
        for (int i = 0; i < mine.size(); ++i)
            QCOMPARE(mine[i].second, qint64(i + 1)); // steps 1, 2, 3, ...: none missing, none twice
    }
    QCOMPARE(received.events.size(), (writer.written + 24) / 25);
    for (int i = 0; i < received.events.size(); ++i)
        QCOMPARE(received.events[i].second, double(i * 25));
    // The orphaned `accel tail` of a killed connection ends by itself (its run has ended).
    QVERIFY(QTest::qWaitFor([&] { return accel::test::processesWithMarker(run, QStringLiteral("accel")).isEmpty(); },
                            20000));
}

void tst_RemoteFollow::followsARealLaunchToItsEnd()
{
    if (!m_serverUnavailable.isEmpty())
        QSKIP(qPrintable(m_serverUnavailable));
    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("launched"));
    const QString fakechild = QDir(accel::test::binDir()).filePath(QStringLiteral("fakechild"));
    QVERIFY2(QFile::exists(fakechild), "build the fakechild target");
    const auto launched =
        accel::test::runAccel({"launch", "--detach", "--json", "--run_dir", run, "--num_processes", "2", "--no_python",
                               fakechild, "--metrics", "40", "--sleep", "1500", "--print", "done"},
                              60000);
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.err));

    SshHost host(options(m_server.alias()));
    RemoteRunFollower follower(&host, run);
    Received received;
    received.attach(&follower);
    follower.start();
    QVERIFY2(QTest::qWaitFor([&] { return received.ended; }, 60000), qPrintable(received.endReason));
    QCOMPARE(received.endReason, QStringLiteral("run ended: succeeded"));
    QCOMPARE(follower.runState(), QStringLiteral("succeeded"));
    QCOMPARE(follower.connections(), 1);
    for (int rank : {0, 1}) {
        const QString file = QStringLiteral("metrics/rank%1.jsonl").arg(rank);
        QCOMPARE(received.rowsPerFile[file], 40);
        QCOMPARE(received.bytes[file], readAll(run + QLatin1Char('/') + file));
    }
    QCOMPARE(received.bytes[QStringLiteral("events.jsonl")], readAll(run + QStringLiteral("/events.jsonl")));
    QVERIFY(received.bytes[QStringLiteral("logs/rank0.log")].contains("done\n"));
    QVERIFY(!received.events.isEmpty());
}

void tst_RemoteFollow::unreachableHostIsReported()
{
    if (!m_serverUnavailable.isEmpty())
        QSKIP(qPrintable(m_serverUnavailable));
    const int port = accel::test::SshTestServer::freeLoopbackPort();
    SshHost host(options(QStringLiteral("127.0.0.1:%1").arg(port)));
    RemoteRunFollower follower(&host, QStringLiteral("some-run"));
    Received received;
    received.attach(&follower);
    QSignalSpy lost(&follower, &RemoteRunFollower::connectionLost);
    follower.start();
    QVERIFY(QTest::qWaitFor([&] { return received.ended; }, 30000));
    QCOMPARE(follower.failure(), QStringLiteral("unreachable"));
    QVERIFY2(received.endReason.contains(QString::number(port)) &&
                 received.endReason.contains(QStringLiteral("refused")),
             qPrintable(received.endReason));
    QCOMPARE(lost.size(), 0); // never connected: reported at once, not retried
    QCOMPARE(follower.connections(), 1);
    QVERIFY(!follower.isRunning());
}

void tst_RemoteFollow::missingRunIsReported()
{
    if (!m_serverUnavailable.isEmpty())
        QSKIP(qPrintable(m_serverUnavailable));
    QTemporaryDir dir;
    SshHost host(options(m_server.alias()));
    RemoteRunFollower follower(&host, dir.filePath(QStringLiteral("no-such-run")));
    Received received;
    received.attach(&follower);
    follower.start();
    QVERIFY(QTest::qWaitFor([&] { return received.ended; }, 30000));
    QCOMPARE(follower.failure(), QStringLiteral("failed"));
    // The host, the exit code and accel tail's own sentence.
    QVERIFY2(received.endReason.startsWith(m_server.alias() + QLatin1Char(':')) &&
                 received.endReason.contains(QStringLiteral("exit 2")) &&
                 received.endReason.contains(QStringLiteral("no-such-run")),
             qPrintable(received.endReason));
}

void tst_RemoteFollow::localHostFollowsTheSameWay()
{
    QTemporaryDir dir;
    const QString run = makeRun(dir);
    RunWriter writer;
    writer.run = run;
    writer.start(60, 5);
    LocalHost local(accelProgram());
    RemoteRunFollower follower(&local, run);
    Received received;
    received.attach(&follower);
    follower.start();
    QVERIFY(QTest::qWaitFor([&] { return writer.written == writer.total && received.rows.size() == 60; }, 30000));
    writeManifest(run, QStringLiteral("failed"));
    QVERIFY(QTest::qWaitFor([&] { return received.ended; }, 30000));
    QCOMPARE(received.endReason, QStringLiteral("run ended: failed"));
    QCOMPARE(received.bytes[QStringLiteral("metrics/rank1.jsonl")],
             readAll(run + QStringLiteral("/metrics/rank1.jsonl")));
}

// A run whose run.json names another supervisor host: `accel stack` reaches that host over SSH
// (the host name is a ~/.ssh/config alias of the test's sshd) and runs `accel stack` there, which
// captures the rank with py-spy; text and --json pass through. The run directory holds a copy of
// a live 1-rank run's run.json with the supervisor host changed (the same path on both "hosts", as
// on a shared file system); the ranks it records are real.
void tst_RemoteFollow::stackOfARunOnAnotherHostRunsThere()
{
    if (!m_serverUnavailable.isEmpty())
        QSKIP(qPrintable(m_serverUnavailable));
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (!QFile::exists(python))
        QSKIP("the project's Python environment (ACCEL_PYTHON) is missing: run packaging/install-deps.sh");
    QTemporaryDir dir;
    const QString script = dir.filePath(QStringLiteral("wait.py"));
    append(script, "import time\ntime.sleep(60)\n");
    const QString run = dir.filePath(QStringLiteral("launched"));
    const auto launched = accel::test::runAccel({"launch", "--detach", "--json", "--run_dir", run, "--num_processes",
                                                 "1", "--system_sample_hz", "0", "--no_python", python, script},
                                                60000);
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.err));
    const auto stopRun = qScopeGuard([&] { accel::test::runAccel({"stop", run, "--timeout", "5"}); });
    QJsonObject manifest;
    QVERIFY(QTest::qWaitFor(
        [&] {
            manifest = QJsonDocument::fromJson(readAll(run + QStringLiteral("/run.json"))).object();
            const QJsonObject rank = manifest.value(QLatin1String("ranks")).toArray().at(0).toObject();
            return rank.value(QLatin1String("result")).toString() == QLatin1String("running") &&
                   rank.value(QLatin1String("pid")).toDouble() > 0;
        },
        20000));
    const QString node = QStringLiteral("accel-stack-node");
    QJsonObject supervisor = manifest.value(QLatin1String("supervisor")).toObject();
    supervisor.insert(QStringLiteral("host"), node);
    manifest.insert(QStringLiteral("supervisor"), supervisor);
    const QString elsewhere = dir.filePath(QStringLiteral("elsewhere"));
    QVERIFY(QDir().mkpath(elsewhere));
    append(elsewhere + QStringLiteral("/run.json"), QJsonDocument(manifest).toJson());
    m_server.addAlias(node);
    const QStringList env{QStringLiteral("ACCEL_SSH_DIR=") + m_server.clientDirectory(),
                          QStringLiteral("ACCEL_REMOTE_BIN=") + accelProgram(), QStringLiteral("SSH_AUTH_SOCK=")};

    // The interpreter reaches its sleep shortly after the rank started.
    accel::test::ProcessResult stack;
    QVERIFY(QTest::qWaitFor(
        [&] {
            stack = accel::test::runAccel({"stack", elsewhere}, 30000, {}, env);
            return stack.out.contains(QStringLiteral("rank 0 in <module> at wait.py:2"));
        },
        20000));
    QVERIFY2(stack.exitCode == 0, qPrintable(stack.err));
    const auto json = accel::test::runAccel({"stack", elsewhere, "--json"}, 30000, {}, env);
    QVERIFY2(json.exitCode == 0, qPrintable(json.err));
    const QJsonObject document = QJsonDocument::fromJson(json.out.toUtf8()).object();
    QCOMPARE(document.value(QLatin1String("schema")).toString(), QStringLiteral("accel.stack"));
    QCOMPARE(document.value(QLatin1String("ranks")).toArray().size(), 1);
    // Kept where the capture ran: in the run directory as that host sees it.
    QVERIFY(QFile::exists(elsewhere + QStringLiteral("/stacks.json")));

    // A host that cannot be reached: exit 1 naming it and why.
    const QString refused = QStringLiteral("127.0.0.1:%1").arg(accel::test::SshTestServer::freeLoopbackPort());
    const auto unreachable = accel::test::runAccel({"stack", elsewhere, "--host", refused}, 30000, {}, env);
    QCOMPARE(unreachable.exitCode, 1);
    QVERIFY2(unreachable.err.contains(QStringLiteral("host ") + refused) && unreachable.err.contains("refused"),
             qPrintable(unreachable.err));

    // accel stop of that run goes to its host the same way, and stops the supervisor there.
    const auto stopped = accel::test::runAccel({"stop", elsewhere, "--json", "--timeout", "5"}, 60000, {}, env);
    QVERIFY2(stopped.exitCode == 0, qPrintable(stopped.out + stopped.err));
    QCOMPARE(QJsonDocument::fromJson(stopped.out.toUtf8()).object().value(QLatin1String("schema")).toString(),
             QStringLiteral("accel.stop"));
    const pid_t supervisorPid = pid_t(supervisor.value(QLatin1String("pid")).toDouble());
    QVERIFY(supervisorPid > 0);
    QVERIFY(QTest::qWaitFor([&] { return ::kill(supervisorPid, 0) != 0; }, 20000));
    const auto unreachableStop = accel::test::runAccel({"stop", elsewhere, "--host", refused}, 30000, {}, env);
    QCOMPARE(unreachableStop.exitCode, 1);
    QVERIFY2(unreachableStop.err.contains(QStringLiteral("accel stop: host ") + refused),
             qPrintable(unreachableStop.err));
}

QTEST_GUILESS_MAIN(tst_RemoteFollow)
#include "tst_remotefollow.moc"
