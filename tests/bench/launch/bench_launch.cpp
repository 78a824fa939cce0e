// Launch overhead of `accel launch` against Debian's torchrun for 2 trivial ranks (/bin/true via
// --no_python), median of N runs (ACCEL_BENCH_RUNS, default 5), plus how long a failing rank
// takes to bring a hanging peer down. Prints BENCH lines for packaging/bench.sh.
#include "tests/helpers/testsupport.h"

#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

namespace {

double medianMs(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values.empty() ? 0.0 : values[values.size() / 2];
}

double timeRun(const QString &program, const QStringList &arguments, int *exitCode)
{
    QElapsedTimer clock;
    clock.start();
    const auto result = accel::test::runProgram(program, arguments, 120000);
    *exitCode = result.exitCode;
    return static_cast<double>(clock.nsecsElapsed()) / 1e6;
}

int runs()
{
    const int n = qEnvironmentVariableIntValue("ACCEL_BENCH_RUNS");
    return n > 0 ? n : 5;
}

} // namespace

class bench_Launch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void overheadAgainstTorchrun()
    {
        QTemporaryDir dir;
        const QString accel = accel::test::binDir() + QStringLiteral("/accel");
        std::vector<double> ours;
        for (int i = 0; i < runs(); ++i) {
            int code = -1;
            ours.push_back(
                timeRun(accel,
                        {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                         QStringLiteral("2"), QStringLiteral("--main_process_port"), QStringLiteral("0"),
                         QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("run%1").arg(i)),
                         QStringLiteral("--no_python"), QStringLiteral("/bin/true")},
                        &code));
            QCOMPARE(code, 0);
        }
        const double accelMs = medianMs(ours);

        // torchrun from the project's Python environment (set by CTest).
        const QString python = qEnvironmentVariable("ACCEL_PYTHON", QStringLiteral("python3"));
        const auto probe = accel::test::runProgram(
            python, {QStringLiteral("-c"), QStringLiteral("import torch.distributed.run")}, 120000);
        if (probe.exitCode != 0) {
            std::printf("BENCH launch_overhead_2ranks %.1f ms target=<=0.2x_torchrun\n", accelMs);
            QSKIP("torch.distributed.run is not importable: no torchrun to compare with");
        }
        std::vector<double> peer;
        for (int i = 0; i < runs(); ++i) {
            int code = -1;
            peer.push_back(
                timeRun(python,
                        {QStringLiteral("-m"), QStringLiteral("torch.distributed.run"), QStringLiteral("--redirects"),
                         QStringLiteral("1"), QStringLiteral("--tee"), QStringLiteral("1"),
                         QStringLiteral("--monitor_interval"), QStringLiteral("0.1"),
                         QStringLiteral("--nproc_per_node"), QStringLiteral("2"), QStringLiteral("--master_port"),
                         QStringLiteral("0"), QStringLiteral("--no_python"), QStringLiteral("/bin/true")},
                        &code));
            QCOMPARE(code, 0);
        }
        const double torchrunMs = medianMs(peer);
        std::printf("BENCH launch_overhead_2ranks %.1f ms peer=%.1f ratio=%.3f target=<=0.2x_torchrun\n", accelMs,
                    torchrunMs, accelMs / torchrunMs);
    }

    void failureTeardown()
    {
        // Rank 1 fails after 200 ms; rank 0 hangs: time from the failure to the supervisor's exit.
        QTemporaryDir dir;
        const QString accel = accel::test::binDir() + QStringLiteral("/accel");
        std::vector<double> times;
        for (int i = 0; i < runs(); ++i) {
            int code = -1;
            const double ms =
                timeRun(accel,
                        {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                         QStringLiteral("2"), QStringLiteral("--run_dir"),
                         dir.filePath(QStringLiteral("fail%1").arg(i)), QStringLiteral("--no_mirror"),
                         QStringLiteral("--no_python"), accel::test::binDir() + QStringLiteral("/fakechild"),
                         QStringLiteral("--sleep"), QStringLiteral("200"), QStringLiteral("--if-rank"),
                         QStringLiteral("1"), QStringLiteral("--exit"), QStringLiteral("1"), QStringLiteral("--hang")},
                        &code);
            QCOMPARE(code, 1);
            times.push_back(ms - 200.0);
        }
        std::printf("BENCH launch_failure_teardown_2ranks %.1f ms target=<2000ms\n", medianMs(times));
    }
};

QTEST_GUILESS_MAIN(bench_Launch)
#include "bench_launch.moc"
