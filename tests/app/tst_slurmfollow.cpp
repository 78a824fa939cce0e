// The studio follows SLURM jobs, multi-node runs included.
//  * A multi-node run: a real pair of `accel launch --num_machines 2 --machine_rank K --run_dir
//    PARENT/node<K>` (fakechild ranks) followed as one run through `accel tail --follow --json
//    PARENT` run by a LocalHost: ranks 0-3 arrive each once under their global numbers, the run's
//    state is combined from both nodes', and a node's failure is named (state, banner, events).
//  * The Runs page given such a folder on an SSH host (the test sshd): one row with the job's name,
//    the host and the combined state, followed in the Monitor with every rank; the main window
//    shows the Runs page when the SLURM queue asks for a run to be followed; a killed connection
//    resumes every node's files with no step or event lost or doubled.
//  * The SLURM queue panel's Follow on a real single-node SLURM cluster (SlurmTestCluster) reached
//    through the test sshd: a 2-rank tiny gpt job submitted with `accel slurm submit` ends with the
//    Runs page showing every rank's metrics and the state succeeded; a job that ends without a run
//    directory says so in its row.
// Skips with the reason where sshd or the SLURM daemons cannot run.
#include "app/remote/remoterunfollower.h"
#include "app/studio/cluster/slurmqueuepanel.h"
#include "app/studio/hardwarepage.h"
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/bannerbar.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/runspage.h"
#include "launcher/host.h"
#include "monitor/runcatalogue.h"
#include "monitor/runmonitor.h"
#include "tests/helpers/monitorsteps.h"
#include "tests/helpers/slurmtestcluster.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::app;

using accel::test::lossSteps;
using accel::test::oneTo;

namespace {

// The steps of the loss lines a rank wrote into its metrics file.
QList<qint64> stepsInFile(const QString &path)
{
    QList<qint64> steps;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return steps;
    for (const QByteArray &line : file.readAll().split('\n')) {
        const QJsonObject sample = QJsonDocument::fromJson(line).object();
        if (sample.contains(QStringLiteral("loss")) && sample.contains(QStringLiteral("step")))
            steps.append(sample.value(QStringLiteral("step")).toInteger());
    }
    return steps;
}

} // namespace

class tst_SlurmFollow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void followAppliesToJobsThatStarted();
    void multiNodeRunIsOneRunThroughLocalHost();
    void oneNodesFailureIsNamed();
    void runsPageGivesAMultiNodeRunOneRow();
    void followRequestShowsTheRunsPage();
    void multiNodeRunResumesAfterAKilledConnection();
    void followOnARealSlurmJobShowsEveryRank();
    void jobWithoutRunDirectoryIsSaid();

private:
    // Both nodes of a 2-machine x 2-rank fakechild job in parent/node0 and parent/node1; node 0's
    // ranks run `node0Arguments` (default: 30 metric lines), node 1's `node1Arguments` (default:
    // the same as node 0's).
    void launchTwoNodes(const QString &parent, const QStringList &node1Arguments = {},
                        const QStringList &node0Arguments = {});
    struct Followed {
        monitor::RunMonitor *monitor = nullptr;
        app::RemoteRunFollower *follower = nullptr;
        QString endReason;
    };
    void followToTheEnd(launcher::Host *host, const QString &parent, Followed &followed, BannerBar *banners);
    QString submit(const QStringList &arguments);
    void selectJob(SlurmQueuePanel &panel, const QString &id);
    int rowOf(const SlurmQueuePanel &panel, const QString &id) const;
    void requireCluster();

    QTemporaryDir m_dir;
    test::SshTestServer m_server;
    test::SlurmTestCluster m_cluster;
    QString m_accel;
    QString m_fakechild;
    QString m_sshReason;
    QString m_clusterReason;
};

void tst_SlurmFollow::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    m_fakechild = QDir(test::binDir()).filePath(QStringLiteral("fakechild"));
    QVERIFY2(QFile::exists(m_accel), "build the accel target");
    QVERIFY2(QFile::exists(m_fakechild), "build the fakechild target");
    qunsetenv("SSH_AUTH_SOCK");
    m_sshReason = test::SshTestServer::unavailableReason();
    if (m_sshReason.isEmpty()) {
        const QString error = m_server.start();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        m_clusterReason = m_cluster.start(m_dir.filePath(QStringLiteral("cluster")));
    } else {
        m_clusterReason = m_sshReason;
    }
    qputenv("ACCEL_SSH_DIR", m_server.clientDirectory().toLocal8Bit());
    qputenv("ACCEL_REMOTE_BIN", m_accel.toLocal8Bit());
}

void tst_SlurmFollow::cleanupTestCase()
{
    m_cluster.cancelAll();
    m_cluster.stop();
}

void tst_SlurmFollow::requireCluster()
{
    if (!m_clusterReason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no SLURM cluster here: ") + m_clusterReason));
}

void tst_SlurmFollow::launchTwoNodes(const QString &parent, const QStringList &node1Arguments,
                                     const QStringList &node0Arguments)
{
    const QString port = QString::number(test::SshTestServer::freeLoopbackPort());
    const QStringList ranks =
        !node0Arguments.isEmpty() ? node0Arguments : QStringList{QStringLiteral("--metrics"), QStringLiteral("30"),
                                                                 QStringLiteral("--sleep"),   QStringLiteral("1500"),
                                                                 QStringLiteral("--print"),   QStringLiteral("done")};
    for (int node = 0; node < 2; ++node) {
        const QString runDir = parent + QStringLiteral("/node%1").arg(node);
        const auto launched = test::runAccel(
            QStringList{QStringLiteral("launch"), QStringLiteral("--detach"), QStringLiteral("--json"),
                        QStringLiteral("--run_dir"), runDir, QStringLiteral("--num_processes"), QStringLiteral("4"),
                        QStringLiteral("--num_machines"), QStringLiteral("2"), QStringLiteral("--machine_rank"),
                        QString::number(node), QStringLiteral("--main_process_ip"), QStringLiteral("127.0.0.1"),
                        QStringLiteral("--main_process_port"), port, QStringLiteral("--no_python"), m_fakechild} +
                (node == 1 && !node1Arguments.isEmpty() ? node1Arguments : ranks),
            60000);
        QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
        QVERIFY(QFile::exists(runDir + QStringLiteral("/run.json")));
    }
}

void tst_SlurmFollow::followToTheEnd(launcher::Host *host, const QString &parent, Followed &followed,
                                     BannerBar *banners)
{
    followed.follower = new app::RemoteRunFollower(host, parent);
    followed.monitor = new monitor::RunMonitor(followed.follower, this);
    connect(followed.monitor, &monitor::RunMonitor::eventsAppended, this,
            [banners](const QList<monitor::RunEvent> &events) { banners->observe(QStringLiteral("job"), events); });
    connect(followed.monitor, &monitor::RunMonitor::ended, this,
            [&followed](const QString &reason) { followed.endReason = reason; });
    followed.monitor->start();
    QVERIFY2(QTest::qWaitFor([&] { return !followed.endReason.isEmpty(); }, 90000), "the stream did not end");
}

void tst_SlurmFollow::followAppliesToJobsThatStarted()
{
    launcher::slurm::SlurmJob job;
    job.id = QStringLiteral("12");
    job.workDir = QStringLiteral("/w");
    job.state = QStringLiteral("PENDING");
    QVERIFY(SlurmQueuePanel::canFollow(job)); // waited for
    job.state = QStringLiteral("RUNNING");
    job.nodeList = QStringLiteral("n1");
    QVERIFY(SlurmQueuePanel::canFollow(job));
    job.state = QStringLiteral("COMPLETED");
    job.elapsedSeconds = 30;
    QVERIFY(SlurmQueuePanel::canFollow(job)); // its run is there to read
    job.state = QStringLiteral("CANCELLED");  // cancelled while it waited: never started
    job.elapsedSeconds = 0;
    job.nodeList = QStringLiteral("None assigned");
    QVERIFY(!SlurmQueuePanel::canFollow(job));
    job.nodeList.clear();
    QVERIFY(!SlurmQueuePanel::canFollow(job));
    job.state = QStringLiteral("RUNNING");
    job.workDir.clear(); // nowhere to look for its run directory
    QVERIFY(!SlurmQueuePanel::canFollow(job));
}

void tst_SlurmFollow::multiNodeRunIsOneRunThroughLocalHost()
{
    const QString parent = m_dir.filePath(QStringLiteral("mn-ok"));
    launchTwoNodes(parent);
    launcher::LocalHost host(m_accel);
    Followed followed;
    BannerBar banners;
    followToTheEnd(&host, parent, followed, &banners);
    QCOMPARE(followed.endReason, QStringLiteral("run ended: succeeded"));
    QCOMPARE(followed.follower->runState(), QStringLiteral("succeeded"));
    QCOMPARE(followed.monitor->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"));
    // Ranks 0-3, each step once, under their global numbers.
    QList<int> ranks;
    for (int rank : followed.monitor->store()->ranks()) {
        if (rank >= 0)
            ranks.append(rank);
    }
    QCOMPARE(ranks, (QList<int>{0, 1, 2, 3}));
    for (int rank = 0; rank < 4; ++rank)
        QCOMPARE(lossSteps(followed.monitor, rank), oneTo(30));
    // Both nodes' events, each with its node; the ranks' exits under their global ranks.
    QSet<QString> eventNodes;
    QList<int> exited;
    auto *events = followed.monitor->eventsModel();
    const QStringList launcherEvents{QStringLiteral("started"), QStringLiteral("rank_started"),
                                     QStringLiteral("rank_exited"), QStringLiteral("finished")};
    for (int row = 0; row < events->rowCount(); ++row) {
        const QString name = events->index(row, 0).data(monitor::EventsModel::EventNameRole).toString();
        const QString shown = events->index(row, monitor::EventsModel::EventColumn).data().toString();
        if (!launcherEvents.contains(name))
            continue; // the monitor's own (a detector's) have no node
        QVERIFY2(shown == QStringLiteral("[node0] ") + name || shown == QStringLiteral("[node1] ") + name,
                 qPrintable(shown));
        eventNodes.insert(shown.mid(1, 5));
        if (name == QLatin1String("rank_exited"))
            exited.append(events->index(row, monitor::EventsModel::RankColumn).data().toInt());
    }
    QCOMPARE(eventNodes, (QSet<QString>{QStringLiteral("node0"), QStringLiteral("node1")}));
    std::sort(exited.begin(), exited.end());
    QCOMPARE(exited, (QList<int>{0, 1, 2, 3}));
    QVERIFY2(banners.messages().isEmpty(), qPrintable(banners.messages().join('\n')));
    const QJsonArray nodes = followed.monitor->manifest().value(QStringLiteral("nodes")).toArray();
    QCOMPARE(nodes.size(), 2);
}

void tst_SlurmFollow::oneNodesFailureIsNamed()
{
    const QString parent = m_dir.filePath(QStringLiteral("mn-fail"));
    launchTwoNodes(parent,
                   {QStringLiteral("--metrics"), QStringLiteral("3"), QStringLiteral("--exit"), QStringLiteral("3")});
    launcher::LocalHost host(m_accel);
    Followed followed;
    BannerBar banners;
    followToTheEnd(&host, parent, followed, &banners);
    QCOMPARE(followed.endReason, QStringLiteral("run ended: failed"));
    const QJsonObject manifest = followed.monitor->manifest();
    QCOMPARE(manifest.value(QStringLiteral("state")).toString(), QStringLiteral("failed"));
    QCOMPARE(manifest.value(QStringLiteral("decided_by")).toString(), QStringLiteral("node1"));
    const QString detail =
        manifest.value(QStringLiteral("states")).toArray().last().toObject().value(QStringLiteral("detail")).toString();
    QVERIFY2(detail.startsWith(QStringLiteral("node1")), qPrintable(detail));
    // node 0's ranks went on to their end; node 1's stopped at step 3.
    QCOMPARE(lossSteps(followed.monitor, 0), oneTo(30));
    QCOMPARE(lossSteps(followed.monitor, 3), oneTo(3));
    // The banner says which node failed, and no other node's.
    const QString banner = banners.messages().join('\n');
    QVERIFY2(banner.contains(QStringLiteral("job (node1) failed")), qPrintable(banner));
    QVERIFY2(!banner.contains(QStringLiteral("node0")), qPrintable(banner));
}

void tst_SlurmFollow::runsPageGivesAMultiNodeRunOneRow()
{
    if (!m_sshReason.isEmpty())
        QSKIP(qPrintable(m_sshReason));
    const QString parent = m_dir.filePath(QStringLiteral("mn-page"));
    launchTwoNodes(parent);
    RunsPage page;
    page.followRemoteRun(m_server.alias(), parent, QStringLiteral("mn-job (job 7)"), true);
    const QString address = monitor::remoteRunAddress(m_server.alias(), parent);
    QTRY_COMPARE_WITH_TIMEOUT(page.monitorPage()->runs(), QStringList{address}, 30000);
    auto *model = page.runsModel();
    const int row = model->rowOfAddress(address);
    QVERIFY(row >= 0);
    QCOMPARE(model->index(row, monitor::RunsModel::NameColumn).data().toString(), QStringLiteral("mn-job (job 7)"));
    QCOMPARE(model->index(row, monitor::RunsModel::HostColumn).data().toString(), m_server.alias());
    QCOMPARE(model->index(row, monitor::RunsModel::IdColumn).data().toString(), QStringLiteral("mn-page"));
    // The nodes' runs are not rows of their own.
    QCOMPARE(model->rowOfAddress(address + QStringLiteral("/node0")), -1);
    QCOMPARE(model->rowOfAddress(address + QStringLiteral("/node1")), -1);
    monitor::RunMonitor *run = page.monitorPage()->runMonitor(0);
    QVERIFY(run);
    for (int rank = 0; rank < 4; ++rank)
        QTRY_COMPARE_WITH_TIMEOUT(lossSteps(run, rank), oneTo(30), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(run->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"),
                              30000);
    // The row's state, combined from the nodes' as their host lists them.
    QVERIFY(QTest::qWaitFor(
        [&] {
            page.remoteCatalogue()->refresh();
            return model->index(model->rowOfAddress(address), monitor::RunsModel::StateColumn).data().toString() ==
                   QLatin1String("succeeded");
        },
        30000));
    QVERIFY(!page.stopButton()->isEnabled()); // ended (and its nodes are stopped by their job, not accel stop)
}

// The main window's wiring: the SLURM queue's followRequested shows the Runs page following the run.
void tst_SlurmFollow::followRequestShowsTheRunsPage()
{
    if (!m_sshReason.isEmpty())
        QSKIP(qPrintable(m_sshReason));
    const QString parent = m_dir.filePath(QStringLiteral("mn-window"));
    launchTwoNodes(parent);
    MainWindow window;
    auto *panel = window.hardwarePage()->findChild<SlurmQueuePanel *>();
    QVERIFY(panel);
    window.showPage(Page::Hardware);
    Q_EMIT panel->followRequested(m_server.alias(), parent, QStringLiteral("mn-window (job 8)"), true);
    QCOMPARE(window.currentPage(), Page::Runs);
    const QString address = monitor::remoteRunAddress(m_server.alias(), parent);
    QTRY_COMPARE_WITH_TIMEOUT(window.runsPage()->monitorPage()->runs(), QStringList{address}, 30000);
    monitor::RunMonitor *run = window.runsPage()->monitorPage()->runMonitor(0);
    QVERIFY(run);
    QTRY_COMPARE_WITH_TIMEOUT(run->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"),
                              30000);
}

// Followed like any remote run: a killed SSH connection is reconnected and every node's files
// resume from their offsets, so each rank's steps and each node's events arrive exactly once.
void tst_SlurmFollow::multiNodeRunResumesAfterAKilledConnection()
{
    if (!m_sshReason.isEmpty())
        QSKIP(qPrintable(m_sshReason));
    const QString parent = m_dir.filePath(QStringLiteral("mn-resume"));
    // Ten steps, a pause, ten more (the second run of steps restarts at 1 in the same file).
    const QStringList ranks{QStringLiteral("--metrics"), QStringLiteral("10"),        QStringLiteral("--sleep"),
                            QStringLiteral("6000"),      QStringLiteral("--metrics"), QStringLiteral("10")};
    launchTwoNodes(parent, ranks, ranks);
    RunsPage page;
    page.followRemoteRun(m_server.alias(), parent, QStringLiteral("mn-resume (job 9)"), true);
    const QString address = monitor::remoteRunAddress(m_server.alias(), parent);
    QTRY_COMPARE_WITH_TIMEOUT(page.monitorPage()->runs(), QStringList{address}, 30000);
    monitor::RunMonitor *run = page.monitorPage()->runMonitor(0);
    QVERIFY(run);
    auto *follower = qobject_cast<app::RemoteRunFollower *>(run->source());
    QVERIFY(follower);
    for (int rank = 0; rank < 4; ++rank)
        QTRY_COMPARE_WITH_TIMEOUT(lossSteps(run, rank), oneTo(10), 6000);
    QSignalSpy lost(follower, &app::RemoteRunFollower::connectionLost);
    QVERIFY(m_server.dropConnections() > 0);
    QVERIFY(lost.wait(20000));
    QTRY_COMPARE_WITH_TIMEOUT(run->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"),
                              60000);
    QVERIFY(follower->connections() >= 2);
    for (int rank = 0; rank < 4; ++rank) {
        const QString file = parent + QStringLiteral("/node%1/metrics/rank%2.jsonl").arg(rank / 2).arg(rank);
        QCOMPARE(stepsInFile(file), oneTo(10) + oneTo(10));
        QTRY_COMPARE_WITH_TIMEOUT(lossSteps(run, rank), oneTo(10) + oneTo(10), 10000);
    }
    int started = 0, exited = 0;
    auto *events = run->eventsModel();
    for (int row = 0; row < events->rowCount(); ++row) {
        const QString name = events->index(row, 0).data(monitor::EventsModel::EventNameRole).toString();
        started += name == QLatin1String("started") ? 1 : 0;
        exited += name == QLatin1String("rank_exited") ? 1 : 0;
    }
    QCOMPARE(started, 2); // one per node
    QCOMPARE(exited, 4);
}

QString tst_SlurmFollow::submit(const QStringList &arguments)
{
    const auto result = test::runAccel(
        QStringList{QStringLiteral("slurm"), QStringLiteral("submit"), QStringLiteral("--host"), m_server.alias(),
                    QStringLiteral("--json"), QStringLiteral("--remote_dir"), m_dir.filePath(QStringLiteral("submit")),
                    QStringLiteral("--remote_env"), QStringLiteral("SLURM_CONF=") + m_cluster.conf()} +
            arguments,
        60000);
    [&] { QVERIFY2(result.exitCode == 0, qPrintable(result.out + result.err)); }();
    return QJsonDocument::fromJson(result.out.toUtf8()).object().value(QStringLiteral("job_id")).toString();
}

// The panel on the test cluster's login node, its queue read and job `id` selected.
void tst_SlurmFollow::selectJob(SlurmQueuePanel &panel, const QString &id)
{
    panel.setAccelProgram(m_accel);
    panel.setRemoteEnvironment({QStringLiteral("SLURM_CONF=") + m_cluster.conf()});
    panel.setLoginHost(m_server.alias());
    QSignalSpy refreshed(&panel, &SlurmQueuePanel::refreshed);
    QVERIFY(panel.refresh() && refreshed.wait(60000));
    QVERIFY2(rowOf(panel, id) >= 0, qPrintable(panel.stateText()));
    QVERIFY(!panel.followButton()->isEnabled()); // nothing selected
    panel.table()->selectRow(rowOf(panel, id));
    QVERIFY(panel.followButton()->isEnabled());
}

int tst_SlurmFollow::rowOf(const SlurmQueuePanel &panel, const QString &id) const
{
    for (int row = 0; row < panel.table()->rowCount(); ++row) {
        if (panel.table()->item(row, 0) && panel.table()->item(row, 0)->text() == id)
            return row;
    }
    return -1;
}

void tst_SlurmFollow::followOnARealSlurmJobShowsEveryRank()
{
    requireCluster();
    const QString config = m_dir.filePath(QStringLiteral("multi-cpu.yaml"));
    QFile file(config);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_machines: 1\n"
               "num_processes: 2\nmachine_rank: 0\nmixed_precision: 'no'\nuse_cpu: true\n");
    file.close();
    const QString job = test::writeTinyGptJob(m_dir.path(), QStringLiteral("studio-follow"), 20, 60);
    QVERIFY(!job.isEmpty());
    const QString id = submit({QStringLiteral("--cpus_per_task"), QStringLiteral("2"), QStringLiteral("--job_name"),
                               QStringLiteral("studio-follow"), config, QStringLiteral("--job"), job});
    QVERIFY(!id.isEmpty());

    SlurmQueuePanel panel;
    selectJob(panel, id);
    if (QTest::currentTestFailed())
        return;

    RunsPage page;
    connect(&panel, &SlurmQueuePanel::followRequested, &page, &RunsPage::followRemoteRun);
    QSignalSpy requested(&panel, &SlurmQueuePanel::followRequested);
    panel.followButton()->click();
    QVERIFY(!panel.followButton()->isEnabled()); // its run directory is awaited
    QVERIFY2(panel.followNote(id).startsWith(QStringLiteral("waiting for its run directory")),
             qPrintable(panel.followNote(id)));
    QVERIFY2(requested.wait(240000) || requested.size() == 1, qPrintable(panel.followNote(id)));
    const QString runDir = m_dir.filePath(QStringLiteral("submit/accel-run-") + id);
    QCOMPARE(requested.first().at(0).toString(), m_server.alias());
    QCOMPARE(requested.first().at(1).toString(), runDir);
    QCOMPARE(requested.first().at(2).toString(), QStringLiteral("studio-follow (job %1)").arg(id));
    QCOMPARE(requested.first().at(3).toBool(), false);
    QVERIFY2(panel.followNote(id).startsWith(QStringLiteral("followed in Runs")), qPrintable(panel.followNote(id)));

    // The Runs page follows it alone; the run ends succeeded with every rank's metrics.
    const QString address = monitor::remoteRunAddress(m_server.alias(), runDir);
    QTRY_COMPARE_WITH_TIMEOUT(page.monitorPage()->runs(), QStringList{address}, 30000);
    monitor::RunMonitor *run = page.monitorPage()->runMonitor(0);
    QVERIFY(run);
    QTRY_COMPARE_WITH_TIMEOUT(run->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"),
                              240000);
    for (int rank = 0; rank < 2; ++rank) {
        const QList<qint64> written = stepsInFile(runDir + QStringLiteral("/metrics/rank%1.jsonl").arg(rank));
        QVERIFY(!written.isEmpty());
        QCOMPARE(written.last(), 20);
        QTRY_COMPARE_WITH_TIMEOUT(lossSteps(run, rank), written, 30000);
    }
    auto *model = page.runsModel();
    QVERIFY(QTest::qWaitFor(
        [&] {
            page.remoteCatalogue()->refresh();
            const int row = model->rowOfAddress(address);
            return row >= 0 &&
                   model->index(row, monitor::RunsModel::StateColumn).data().toString() == QLatin1String("succeeded");
        },
        30000));
    QCOMPARE(model->index(model->rowOfAddress(address), monitor::RunsModel::HostColumn).data().toString(),
             m_server.alias());
}

void tst_SlurmFollow::jobWithoutRunDirectoryIsSaid()
{
    requireCluster();
    const QString script = m_dir.filePath(QStringLiteral("no-run-dir.sbatch"));
    QFile file(script);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("#!/bin/bash\n#SBATCH --job-name=no-run-dir\n#SBATCH --cpus-per-task=1\nsleep 2\n");
    file.close();
    const QString id = submit({script});
    QVERIFY(!id.isEmpty());

    SlurmQueuePanel panel;
    selectJob(panel, id);
    if (QTest::currentTestFailed())
        return;
    QSignalSpy requested(&panel, &SlurmQueuePanel::followRequested);
    QSignalSpy failed(&panel, &SlurmQueuePanel::followFailed);
    QVERIFY(panel.followSelected());
    QVERIFY(failed.wait(120000));
    QCOMPARE(requested.size(), 0);
    QCOMPARE(failed.first().at(0).toString(), id);
    const QString note = panel.followNote(id);
    QVERIFY2(note.startsWith(QStringLiteral("not followed: ")) &&
                 note.contains(QStringLiteral("without a run directory")) &&
                 note.contains(QStringLiteral("slurm-%1.out").arg(id)),
             qPrintable(note));
    const int row = rowOf(panel, id);
    QCOMPARE(panel.table()->item(row, panel.table()->columnCount() - 1)->text(), note);
    QVERIFY2(panel.stateText().contains(id), qPrintable(panel.stateText()));
    QVERIFY(panel.followButton()->isEnabled()); // it may be asked again (e.g. after a fix)
}

QTEST_MAIN(tst_SlurmFollow)
#include "tst_slurmfollow.moc"
