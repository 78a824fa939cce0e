// The studio following 64 remote ranks at 1 Hz: a writer process (Python) appends one metrics line
// per rank and second to a run directory on the "host" (this machine behind a real sshd on
// loopback); the studio's MonitorPage, shown offscreen at 1600x1000, follows the run over SSH
// (RemoteRunFollower -> RunMonitor -> charts, ranks table). Measured: the CPU time of this process
// (every thread: GUI, the SSH session's thread) over 30 s after a 5 s warm-up, as % of one core;
// target <= 2 %. Also printed: the CPU of `accel tail` on the far side and the points received.
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/remotehosts.h"
#include "monitor/runcatalogue.h"
#include "tests/helpers/benchreport.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <sys/resource.h>
#include <unistd.h>

using namespace accel;

namespace {

constexpr int kRanks = 64;
constexpr int kWarmupMs = 5000;
constexpr int kMeasureMs = 30000;

// Runs the event loop for `milliseconds` without polling (QTest::qWait wakes every 10 ms, which
// would be measured too).
void idle(int milliseconds)
{
    QEventLoop loop;
    QTimer::singleShot(milliseconds, &loop, &QEventLoop::quit);
    loop.exec();
}

double processCpuSeconds()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// CPU seconds (user + system) of the processes whose command line holds every word, from /proc.
double cpuSecondsOf(const QStringList &words)
{
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    double total = 0;
    for (const QString &entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool ok = false;
        entry.toLongLong(&ok);
        QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(entry));
        if (!ok || !cmdline.open(QIODevice::ReadOnly))
            continue;
        const QByteArray line = cmdline.readAll();
        if (!std::all_of(words.cbegin(), words.cend(),
                         [&](const QString &word) { return line.contains(word.toUtf8()); }))
            continue;
        QFile stat(QStringLiteral("/proc/%1/stat").arg(entry));
        if (!stat.open(QIODevice::ReadOnly))
            continue;
        const QByteArray text = stat.readAll();
        const QList<QByteArray> fields = text.mid(text.lastIndexOf(')') + 2).split(' ');
        total += (fields.value(11).toDouble() + fields.value(12).toDouble()) / tick; // utime, stime
    }
    return total;
}

} // namespace

class bench_StudioRemote : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void follow64RanksAt1Hz();
};

void bench_StudioRemote::follow64RanksAt1Hz()
{
    if (const QString reason = test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    qunsetenv("SSH_AUTH_SOCK");
    test::SshTestServer server;
    const QString error = server.start();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    qputenv("ACCEL_SSH_DIR", server.clientDirectory().toLocal8Bit());
    qputenv("ACCEL_REMOTE_BIN", QDir(test::binDir()).filePath(QStringLiteral("accel")).toLocal8Bit());

    QTemporaryDir dir;
    const QString run = dir.filePath(QStringLiteral("bench-remote-64"));
    QVERIFY(QDir().mkpath(run + QStringLiteral("/metrics")));
    QFile manifest(run + QStringLiteral("/run.json"));
    QVERIFY(manifest.open(QIODevice::WriteOnly));
    manifest.write(R"({"schema":"accel.run","version":1,"id":"bench-remote-64","state":"running"})");
    manifest.close();
    // The far side: one line per rank every second (step, loss, lr, throughput, CPU, memory).
    QProcess writer;
    writer.setProgram(QStringLiteral("python3"));
    writer.setArguments({QStringLiteral("-c"), QStringLiteral(R"(
import json, os, sys, time
run, ranks = sys.argv[1], int(sys.argv[2])
files = [open(os.path.join(run, 'metrics', 'rank%d.jsonl' % r), 'a', buffering=1) for r in range(ranks)]
step, start = 0, time.time()
while True:
    step += 1
    now = time.time()
    for r, f in enumerate(files):
        f.write(json.dumps({'v': 1, 'time': now, 'rank': r, 'step': step, 'loss': 3.0 / step + r * 1e-3,
                            'lr': 1e-4, 'samples_per_s': 100.0 + r, 'cpu_percent': 50.0,
                            'mem_rss_bytes': 1e9 + r}) + '\n')
    time.sleep(max(0.0, start + step - time.time()))
)"),
                         run, QString::number(kRanks)});
    writer.start();
    QVERIFY(writer.waitForStarted());

    app::RemoteHosts hosts;
    app::MonitorPage page;
    page.setRemoteHosts(&hosts);
    page.resize(1600, 1000);
    page.show();
    auto replots = [&page] {
        int total = 0;
        for (int chart = 0; chart < app::MonitorPage::ChartCount; ++chart)
            total += page.chart(static_cast<app::MonitorPage::Chart>(chart))->replotCount();
        return total;
    };
    struct Figures {
        double percent = 0, cpu = 0, seconds = 0, farSide = 0, replotsPerSecond = 0;
        qint64 rows = 0;
    };
    // Follows `address` in the page, warms up, then measures this process's CPU.
    auto measure = [&](const QString &address, Figures &out) {
        page.setRuns({address});
        monitor::RunMonitor *monitor = page.runMonitor(0);
        QVERIFY(monitor);
        QTRY_VERIFY_WITH_TIMEOUT(monitor->store()->ranks().size() >= kRanks, 30000);
        idle(kWarmupMs);
        const QStringList tail = {QStringLiteral("tail"), run};
        const int replotsBefore = replots();
        const qint64 rowsBefore = monitor->store()->totalSamples();
        const double farBefore = cpuSecondsOf(tail);
        const double before = processCpuSeconds();
        QElapsedTimer wall;
        wall.start();
        idle(kMeasureMs);
        out.cpu = processCpuSeconds() - before;
        out.seconds = wall.elapsed() / 1000.0;
        out.percent = 100.0 * out.cpu / out.seconds;
        out.farSide = 100.0 * (cpuSecondsOf(tail) - farBefore) / out.seconds;
        out.rows = monitor->store()->totalSamples() - rowsBefore;
        out.replotsPerSecond = (replots() - replotsBefore) / out.seconds;
        page.setRuns({});
    };
    Figures remote, local;
    measure(monitor::remoteRunAddress(server.alias(), run), remote);
    if (QTest::currentTestFailed())
        return;
    measure(run, local); // the peer: the same run followed as a local directory
    writer.kill();
    writer.waitForFinished();
    if (QTest::currentTestFailed())
        return;

    test::bench("studio.remote_follow_64_ranks_cpu", remote.percent, "%",
                QStringLiteral("peer=%1 ratio=%2 target=<=2 (%3 s CPU over %4 s; MonitorPage shown, over sshd on "
                               "loopback; peer: the same run as a local directory)")
                    .arg(local.percent, 0, 'f', 2)
                    .arg(remote.percent / local.percent, 0, 'f', 2)
                    .arg(remote.cpu, 0, 'f', 3)
                    .arg(remote.seconds, 0, 'f', 1));
    test::bench("studio.remote_follow_64_ranks_far_side_cpu", remote.farSide, "%",
                QStringLiteral("(accel tail on the host)"));
    test::bench("studio.remote_follow_64_ranks_rows", static_cast<double>(remote.rows), "rows",
                QStringLiteral("(metric lines received while measured; %1 ranks x %2 s = %3)")
                    .arg(kRanks)
                    .arg(remote.seconds, 0, 'f', 1)
                    .arg(kRanks * remote.seconds, 0, 'f', 0));
    test::bench("studio.remote_follow_64_ranks_replots_per_s", remote.replotsPerSecond, "charts/s",
                QStringLiteral("peer=%1 (chart redraws, every chart counted)").arg(local.replotsPerSecond, 0, 'f', 1));
    QVERIFY(remote.rows > 0);
    QVERIFY(local.rows > 0);
}

QTEST_MAIN(bench_StudioRemote)
#include "bench_studioremote.moc"
