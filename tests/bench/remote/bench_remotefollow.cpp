// Remote monitoring latency: from write() of a metrics line into a run directory to the follower's
// metricsReceived signal carrying it, median of ACCEL_BENCH_LINES lines (default 60), one line at a
// time. Measured for RemoteRunFollower over SSH (a real sshd on loopback running this build's
// `accel tail --follow --json`), its peer the local monitor's RunDirectoryFollower on the same
// directory, and RemoteRunFollower over LocalHost (accel tail as a local child) for reference.
#include "app/remote/remoterunfollower.h"
#include "launcher/host.h"
#include "launcher/sshhost.h"
#include "monitor/rundirectoryfollower.h"
#include "tests/helpers/benchreport.h"
#include "tests/helpers/runfiles.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <algorithm>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using namespace accel::launcher;
using accel::app::RemoteFollowOptions;
using accel::app::RemoteRunFollower;
using accel::monitor::MetricBatch;
using accel::monitor::RunSource;
using accel::test::bench;
using accel::test::percentile;
using accel::test::writeManifest;

namespace {

int lineCount()
{
    const int lines = qEnvironmentVariableIntValue("ACCEL_BENCH_LINES");
    return lines > 0 ? lines : 60;
}

// Appends `lines` metrics lines one at a time to the run's rank 0 file, each after the previous
// one reached `source`, and returns each one's latency in milliseconds (empty on a time-out).
std::vector<double> measure(RunSource &source, const QString &runDir, int lines)
{
    const QByteArray path = QFile::encodeName(runDir + QStringLiteral("/metrics/rank0.jsonl"));
    QElapsedTimer clock;
    qint64 wantedStep = -1;
    qint64 arrivedNs = -1;
    QEventLoop loop;
    QObject context;
    QObject::connect(&source, &RunSource::metricsReceived, &context, [&](const MetricBatch &batch) {
        for (const auto &row : batch.rows) {
            if (row.step == wantedStep && arrivedNs < 0) {
                arrivedNs = clock.nsecsElapsed();
                loop.quit();
            }
        }
    });
    QTimer deadline; // one line may take 5 s at most
    deadline.setSingleShot(true);
    QObject::connect(&deadline, &QTimer::timeout, &loop, &QEventLoop::quit);
    std::vector<double> latencies;
    for (int i = 1; i <= lines; ++i) {
        const QByteArray line = "{\"v\":1,\"time\":" + QByteArray::number(1000 + i) +
                                ",\"step\":" + QByteArray::number(i) + ",\"loss\":" + QByteArray::number(2.0 / i) +
                                "}\n";
        wantedStep = i;
        arrivedNs = -1;
        const int fd = ::open(path.constData(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        clock.start();
        const bool written = ::write(fd, line.constData(), size_t(line.size())) == line.size();
        ::close(fd);
        if (!written)
            return {};
        deadline.start(5000);
        if (arrivedNs < 0)
            loop.exec();
        deadline.stop();
        if (arrivedNs < 0)
            return {};
        latencies.push_back(double(arrivedNs) / 1e6);
        QTest::qWait(20); // the next line is a separate event, as a training step's would be
    }
    return latencies;
}

// A fresh live run directory whose rank 0 metrics file exists (so it is followed from the start).
QString makeRun(const QTemporaryDir &dir, const QString &name)
{
    const QString run = dir.filePath(name);
    QDir().mkpath(run + QStringLiteral("/metrics"));
    QFile(run + QStringLiteral("/metrics/rank0.jsonl")).open(QIODevice::WriteOnly);
    writeManifest(run, QStringLiteral("running"));
    return run;
}

// Starts a RemoteRunFollower on `host`, waits for its stream, measures, then ends the run.
std::vector<double> measureRemote(Host &host, const QTemporaryDir &dir, const QString &name, int lines)
{
    const QString run = makeRun(dir, name);
    RemoteRunFollower follower(&host, run);
    bool streaming = false;
    QObject::connect(&follower, &RemoteRunFollower::streamStarted, &follower, [&] { streaming = true; });
    QObject::connect(&follower, &RunSource::ended, &follower,
                     [](const QString &reason) { std::fprintf(stderr, "follower ended: %s\n", qPrintable(reason)); });
    follower.start();
    if (!QTest::qWaitFor([&] { return streaming; }, 30000))
        return {};
    QTest::qWait(300); // the remote follower has read the (empty) files
    std::vector<double> latencies = measure(follower, run, lines);
    writeManifest(run, QStringLiteral("succeeded"));
    (void)QTest::qWaitFor([&] { return !follower.isRunning(); }, 10000); // the run has ended there
    return latencies;
}

} // namespace

class bench_RemoteFollow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void latencyOfAMetricLine()
    {
        if (const QString reason = accel::test::SshTestServer::unavailableReason(); !reason.isEmpty())
            QSKIP(qPrintable(reason));
        qunsetenv("SSH_AUTH_SOCK");
        accel::test::SshTestServer server;
        const QString error = server.start();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QString accel = QDir(accel::test::binDir()).filePath(QStringLiteral("accel"));
        const int lines = lineCount();
        QTemporaryDir dir;

        // Peer: the local monitor pipeline's follower on the directory itself.
        const QString localRun = makeRun(dir, QStringLiteral("local"));
        accel::monitor::RunDirectoryFollower local(localRun);
        local.start();
        const std::vector<double> direct = measure(local, localRun, lines);
        local.stop();
        QVERIFY2(!direct.empty(), "the local follower missed a line");

        SshHostOptions options;
        options.destination = server.alias();
        options.sshDirectory = server.clientDirectory();
        options.accelProgram = accel;
        SshHost ssh(options);
        const std::vector<double> overSsh = measureRemote(ssh, dir, QStringLiteral("ssh"), lines);
        QVERIFY2(!overSsh.empty(), "the follower over SSH missed a line");

        LocalHost localHost(accel);
        const std::vector<double> overLocalHost = measureRemote(localHost, dir, QStringLiteral("localhost"), lines);
        QVERIFY2(!overLocalHost.empty(), "the follower over LocalHost missed a line");

        const double median = percentile(overSsh, 0.5);
        const double peer = percentile(direct, 0.5);
        bench("remote.follow_latency_median", median, "ms",
              QStringLiteral("peer=%1 ratio=%2 target=<=300").arg(peer, 0, 'f', 3).arg(median / peer, 0, 'f', 1));
        bench("remote.follow_latency_p95", percentile(overSsh, 0.95), "ms",
              QStringLiteral("peer=%1").arg(percentile(direct, 0.95), 0, 'f', 3));
        bench("remote.follow_latency_localhost_median", percentile(overLocalHost, 0.5), "ms",
              QStringLiteral("peer=%1 ratio=%2")
                  .arg(peer, 0, 'f', 3)
                  .arg(percentile(overLocalHost, 0.5) / peer, 0, 'f', 1));
        std::printf("remote follow latency over %d lines: ssh median %.2f ms, local follower %.3f ms\n", lines, median,
                    peer);
        QVERIFY2(median <= 300, qPrintable(QStringLiteral("median %1 ms over the 300 ms target").arg(median)));
    }
};

QTEST_GUILESS_MAIN(bench_RemoteFollow)
#include "bench_remotefollow.moc"
