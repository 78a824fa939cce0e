// From starting `accel launch --hosts node0,node1` (network pre-flight included) to every rank
// running, on two network-namespace nodes x 2 ranks of a trivial program, median of N rounds
// (ACCEL_BENCH_RUNS, default 5), against its peer: OpenSSH's `ssh NODE true` to both nodes at
// once (the bare SSH handshakes). Also `accel hosts doctor` on the same nodes. Prints BENCH lines
// for packaging/bench.sh.
#include "tests/helpers/netnssshnodes.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <vector>

namespace {

double medianMs(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values.empty() ? 0.0 : values[values.size() / 2];
}

int runs()
{
    const int n = qEnvironmentVariableIntValue("ACCEL_BENCH_RUNS");
    return n > 0 ? n : 5;
}

double elapsedMs(const QElapsedTimer &clock)
{
    return static_cast<double>(clock.nsecsElapsed()) / 1e6;
}

} // namespace

class bench_HostsLaunch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void launchToEveryRankRunningAgainstSshHandshakes();
};

void bench_HostsLaunch::launchToEveryRankRunningAgainstSshHandshakes()
{
    accel::test::NetnsSshNodes nodes(2);
    if (const QString reason = nodes.makeNetwork(); !reason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no network namespaces here: ") + reason));
    const QString error = nodes.startServers();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QString bin = accel::test::binDir();
    const QString accel = QDir(bin).filePath(QStringLiteral("accel"));
    const QString client = nodes.clientDirectory();
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("ACCEL_SSH_DIR"), client);
    environment.insert(QStringLiteral("ACCEL_REMOTE_BIN"), accel);
    environment.remove(QStringLiteral("SSH_AUTH_SOCK"));

    // Peer: OpenSSH's client running `true` on both nodes at once.
    std::vector<double> handshakes;
    for (int round = 0; round < runs(); ++round) {
        QElapsedTimer clock;
        clock.start();
        std::vector<std::unique_ptr<QProcess>> clients;
        for (const QString &node : {QStringLiteral("node0"), QStringLiteral("node1")}) {
            clients.push_back(std::make_unique<QProcess>());
            clients.back()->setProcessEnvironment(environment);
            clients.back()->start(QStringLiteral("ssh"), {"-F", QDir(client).filePath("config"), "-o",
                                                          "UserKnownHostsFile=" + QDir(client).filePath("known_hosts"),
                                                          "-o", "BatchMode=yes", node, "true"});
        }
        for (auto &process : clients) {
            QVERIFY(process->waitForFinished(30000));
            QVERIFY2(process->exitCode() == 0, process->readAllStandardError().constData());
        }
        handshakes.push_back(elapsedMs(clock));
    }
    const double sshMs = medianMs(handshakes);

    QTemporaryDir data;
    const QString fakechild = QDir(bin).filePath(QStringLiteral("fakechild"));
    std::vector<double> launches;
    for (int round = 0; round < runs(); ++round) {
        const QString marker = accel::test::newMarker();
        const QString record = data.filePath(QStringLiteral("cluster-%1.json").arg(round));
        const QString started = data.filePath(QStringLiteral("started-%1-{rank}").arg(round));
        QProcess launch;
        launch.setProcessEnvironment(environment);
        QElapsedTimer clock;
        clock.start();
        launch.start(accel, {"launch", "--hosts", "node0,node1", "--record", record, "--remote_env",
                             "XDG_DATA_HOME=" + data.path(), "--main_process_port", QString::number(29700 + round),
                             "--num_processes", "4", "--no_python", fakechild, "--marker", marker, "--touch", started,
                             "--hang"});
        const bool running = accel::test::waitFor(
            [&] {
                for (int rank = 0; rank < 4; ++rank) {
                    if (!QFile::exists(data.filePath(QStringLiteral("started-%1-%2").arg(round).arg(rank))))
                        return false;
                }
                return true;
            },
            60000);
        launches.push_back(elapsedMs(clock));
        QVERIFY(launch.waitForFinished(60000));
        QVERIFY2(running && launch.exitCode() == 0,
                 qPrintable(launch.readAllStandardOutput() + launch.readAllStandardError()));
        QProcess stop;
        stop.setProcessEnvironment(environment);
        stop.start(accel, {"hosts", "stop", record});
        QVERIFY(stop.waitForFinished(60000));
        QCOMPARE(stop.exitCode(), 0);
        QVERIFY(accel::test::waitFor([&] { return accel::test::processesWithMarker(marker).isEmpty(); }, 30000));
    }
    const double launchMs = medianMs(launches);
    std::printf("BENCH hosts_launch_2nodes_x2_ranks_running %.1f ms peer=%.1f ratio=%.2f target=<=peer+2000ms\n",
                launchMs, sshMs, launchMs / sshMs);

    std::vector<double> doctors;
    for (int round = 0; round < runs(); ++round) {
        QProcess doctor;
        doctor.setProcessEnvironment(environment);
        QElapsedTimer clock;
        clock.start();
        doctor.start(accel, {"hosts", "doctor", "node0,node1", "--main_process_port", "29690"});
        QVERIFY(doctor.waitForFinished(60000));
        doctors.push_back(elapsedMs(clock));
        QVERIFY2(doctor.exitCode() == 0, doctor.readAllStandardOutput().constData());
    }
    const double doctorMs = medianMs(doctors);
    std::printf("BENCH hosts_doctor_2nodes %.1f ms peer=%.1f ratio=%.2f target=<60000ms\n", doctorMs, sshMs,
                doctorMs / sshMs);
    qInfo("launch rounds (ms): %s; ssh rounds (ms): %s", qPrintable([&] {
              QStringList list;
              for (double v : launches)
                  list << QString::number(v, 'f', 0);
              return list.join(QLatin1Char(' '));
          }()),
          qPrintable([&] {
              QStringList list;
              for (double v : handshakes)
                  list << QString::number(v, 'f', 0);
              return list.join(QLatin1Char(' '));
          }()));
    QVERIFY2(launchMs <= sshMs + 2000, "more than 2 s beyond the SSH handshakes");
}

QTEST_GUILESS_MAIN(bench_HostsLaunch)
#include "bench_hostslaunch.moc"
