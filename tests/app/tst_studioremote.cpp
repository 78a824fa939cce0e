// The studio monitoring runs on SSH hosts, against a real sshd on loopback (SshTestServer) with this
// build's accel as the remote one: the Runs page lists a host's runs (accel runs --json there) beside
// this machine's with a Host column; opening one follows every rank through RemoteRunFollower into
// the Monitor's pipeline, across killed SSH connections ("Reconnecting to HOST…"), with every step
// exactly once; a Runs page made anew re-attaches the live runs of a cluster launch record; an
// unreachable host is named while the page goes on; the Launch page's cluster view notices a run
// that ended on its own (Stop disabled, state shown) and opens its nodes' runs in the monitor.
#include "app/remote/remoterunfollower.h"
#include "app/studio/launch/clusterrunview.h"
#include "app/studio/launch/launchpage.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/remotecatalogue.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/monitor/stackdialog.h"
#include "launcher/clusterrecord.h"
#include "launcher/rundirectory.h"
#include "monitor/runcatalogue.h"
#include "tests/helpers/monitorsteps.h"
#include "tests/helpers/runfiles.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <memory>

using namespace accel;
using namespace accel::app;
using accel::test::append;
using accel::test::lossSteps;
using accel::test::metricLine;
using accel::test::oneTo;

namespace {

// run.json of a live run as the launcher writes it (id, name, state, created, settings).
void writeRunManifest(const QString &runDir, const QString &state, const QString &name)
{
    QSaveFile file(runDir + QStringLiteral("/run.json"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QJsonDocument(QJsonObject{{QStringLiteral("schema"), QStringLiteral("accel.run")},
                                         {QStringLiteral("version"), 1},
                                         {QStringLiteral("id"), QFileInfo(runDir).fileName()},
                                         {QStringLiteral("name"), name},
                                         {QStringLiteral("state"), state},
                                         {QStringLiteral("created"), QDateTime::currentSecsSinceEpoch()},
                                         {QStringLiteral("settings"), QJsonObject{{"num_processes", 2}}}})
                   .toJson(QJsonDocument::Compact));
    QVERIFY(file.commit());
}

QString makeRun(const QString &root, const QString &id, const QString &state)
{
    const QString run = QDir(root).filePath(id);
    QDir().mkpath(run + QStringLiteral("/metrics"));
    QDir().mkpath(run + QStringLiteral("/logs"));
    writeRunManifest(run, state, id.section(QLatin1Char('-'), 0, 0));
    return run;
}

int rowOfAddress(RunsPage &page, const QString &address)
{
    return page.runsModel()->rowOfAddress(address);
}

} // namespace

class tst_StudioRemote : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void listingsAndRecordsOfAnotherKindAreRefusedByName();
    void remoteRunsAreListedWithTheirHost();
    void remoteRunIsFollowedAcrossKilledConnections();
    void newRunsPageReattachesARecordedLiveRun();
    void unreachableHostIsNamedAndThePageStaysUsable();
    void clusterViewNoticesARunThatEndedOnItsOwn();

private:
    test::SshTestServer m_server;
    QTemporaryDir m_remote; // the host's XDG_DATA_HOME (its accel runs with it)
    QString m_accel;
    QString m_remoteRoot; // the host's default runs root
};

void tst_StudioRemote::initTestCase()
{
    if (const QString reason = test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    m_accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFileInfo(m_accel).isExecutable(), "build the accel target");
    qunsetenv("SSH_AUTH_SOCK");
    QVERIFY(m_remote.isValid());
    const QString error = m_server.start();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    // The remote accel: this build's, with a data folder of its own (sshd gives the session the
    // account's real HOME), so its default runs root is the test's.
    const QString wrapper = m_remote.filePath(QStringLiteral("remote-accel"));
    QFile script(wrapper);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(QStringLiteral("#!/bin/sh\nXDG_DATA_HOME='%1' exec '%2' \"$@\"\n")
                     .arg(m_remote.filePath(QStringLiteral("data")), m_accel)
                     .toUtf8());
    script.close();
    QVERIFY(script.setPermissions(script.permissions() | QFileDevice::ExeOwner));
    m_remoteRoot = m_remote.filePath(QStringLiteral("data/accel-studio/runs"));
    QVERIFY(QDir().mkpath(m_remoteRoot));
    qputenv("ACCEL_SSH_DIR", m_server.clientDirectory().toLocal8Bit());
    qputenv("ACCEL_REMOTE_BIN", wrapper.toLocal8Bit());
    QDir().mkpath(launcher::RunDirectory::defaultRunsRoot()); // this machine's (the test's own HOME)
}

void tst_StudioRemote::listingsAndRecordsOfAnotherKindAreRefusedByName()
{
    const auto none = monitor::parseRunsListing(QStringLiteral("gpu1"), "bash: accel: command not found\n");
    QVERIFY(!none);
    QCOMPARE(QString::fromStdString(none.error().toString()),
             QStringLiteral("gpu1: accel runs --json: printed no JSON object: 'bash: accel: command not found'"));
    const auto other = monitor::parseRunsListing(QStringLiteral("gpu1"), R"({"schema": "accel.env", "version": 1})");
    QVERIFY(!other);
    QVERIFY2(other.error().toString().find("expected schema accel.runs, got 'accel.env'") != std::string::npos,
             other.error().toString().c_str());
    const auto newer =
        monitor::parseRunsListing(QStringLiteral("gpu1"), R"({"schema": "accel.runs", "version": 2, "runs": []})");
    QVERIFY(!newer);
    QVERIFY2(newer.error().toString().find("version 2 is newer") != std::string::npos,
             newer.error().toString().c_str());
    // Entries without an absolute path cannot be followed there and are left out.
    const auto listed =
        monitor::parseRunsListing(QStringLiteral("gpu1"), R"({"schema": "accel.runs", "version": 1, "runs": [
            {"id": "a", "path": "/r/a", "state": "running", "num_processes": 4},
            {"id": "b", "path": "relative/b", "state": "running"}]})");
    QVERIFY(listed);
    QCOMPARE(listed->size(), 1);
    QCOMPARE(listed->first().address(), QStringLiteral("ssh://gpu1/r/a"));
    QCOMPARE(listed->first().configSummary, QStringLiteral("4 processes"));
    QString host, path;
    QVERIFY(monitor::parseRemoteRunAddress(QStringLiteral("ssh://alice@node7:2222/r/a b"), &host, &path));
    QCOMPARE(host, QStringLiteral("alice@node7:2222"));
    QCOMPARE(path, QStringLiteral("/r/a b"));
    QVERIFY(!monitor::parseRemoteRunAddress(QStringLiteral("/home/alice/runs/r1")));
    QVERIFY(!monitor::parseRemoteRunAddress(QStringLiteral("ssh:///r/a")));

    QTemporaryDir dir;
    QFile file(dir.filePath(QStringLiteral("bad.json")));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"schema": "accel.hosts-launch", "version": 1, "nodes": []})");
    file.close();
    const auto record = launcher::readClusterRecord(file.fileName());
    QVERIFY(!record);
    QVERIFY2(record.error().toString().find(file.fileName().toStdString()) != std::string::npos &&
                 record.error().toString().find("schema accel.cluster-run") != std::string::npos,
             record.error().toString().c_str());
    QVERIFY(launcher::recentClusterRecords(20, dir.path()).isEmpty()); // skipped, not fatal
}

void tst_StudioRemote::remoteRunsAreListedWithTheirHost()
{
    const QString remote = makeRun(m_remoteRoot, QStringLiteral("listed-20260101-000001"), QStringLiteral("running"));
    const QString local = makeRun(launcher::RunDirectory::defaultRunsRoot(), QStringLiteral("here-20260101-000002"),
                                  QStringLiteral("succeeded"));
    RunsPage page;
    QAbstractItemModelTester tester(page.runsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(page.runsModel()->rowOf(QFileInfo(local).fileName()) >= 0);
    page.setRemoteHosts({m_server.alias()});
    const QString address = monitor::remoteRunAddress(m_server.alias(), remote);
    QCOMPARE(address, QStringLiteral("ssh://accel-test") + remote);
    QTRY_VERIFY_WITH_TIMEOUT(rowOfAddress(page, address) >= 0, 30000);
    auto *model = page.runsModel();
    const int row = rowOfAddress(page, address);
    QCOMPARE(model->index(row, monitor::RunsModel::HostColumn).data().toString(), m_server.alias());
    QCOMPARE(model->index(row, monitor::RunsModel::IdColumn).data().toString(), QFileInfo(remote).fileName());
    QCOMPARE(model->index(row, monitor::RunsModel::StateColumn).data().toString(), QStringLiteral("running"));
    QCOMPARE(model->index(row, monitor::RunsModel::NameColumn).data().toString(), QStringLiteral("listed"));
    QCOMPARE(model->index(row, monitor::RunsModel::IdColumn).data(monitor::RunsModel::PathRole).toString(), address);
    const int localRow = model->rowOf(QFileInfo(local).fileName());
    QCOMPARE(model->index(localRow, monitor::RunsModel::HostColumn).data().toString(), QStringLiteral("this machine"));
    QVERIFY(!page.remoteHostsState()->isVisible());

    // The hang autopsy reaches a run there: the run menu's Capture stacks runs `accel stack` on the
    // host over SSH (this run has no ranks, so the remote accel says so, naming the run).
    page.selectRuns({address});
    QTRY_COMPARE_WITH_TIMEOUT(page.selectedRuns(), QStringList{address}, 10000);
    {
        std::unique_ptr<QMenu> menu(page.createRunMenu(nullptr));
        const auto actions = menu->actions();
        auto stacks = std::find_if(actions.begin(), actions.end(),
                                   [](QAction *action) { return action->text() == QLatin1String("Capture stacks"); });
        QVERIFY(stacks != actions.end() && (*stacks)->isEnabled());
        (*stacks)->trigger();
        app::StackDialog *dialog = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((dialog = page.findChild<app::StackDialog *>()) && !dialog->reportText().isEmpty(),
                                 30000);
        QVERIFY2(dialog->reportText().contains(
                     QStringLiteral("accel stack: no rank of run %1 is running").arg(QFileInfo(remote).fileName())),
                 qPrintable(dialog->reportText()));
        dialog->close();
    }

    // The state there changes: the next listing says so; a run removed there leaves the list.
    writeRunManifest(remote, QStringLiteral("failed"), QStringLiteral("listed"));
    page.remoteCatalogue()->refresh();
    QTRY_COMPARE_WITH_TIMEOUT(
        model->index(rowOfAddress(page, address), monitor::RunsModel::StateColumn).data().toString(),
        QStringLiteral("failed"), 30000);
    QVERIFY(QDir(remote).removeRecursively());
    page.remoteCatalogue()->refresh();
    QTRY_VERIFY_WITH_TIMEOUT(rowOfAddress(page, address) < 0, 30000);
    QVERIFY(model->rowOf(QFileInfo(local).fileName()) >= 0); // this machine's rows stay
    QVERIFY(QDir(local).removeRecursively());
}

void tst_StudioRemote::remoteRunIsFollowedAcrossKilledConnections()
{
    const QString run = makeRun(m_remoteRoot, QStringLiteral("follow-20260101-000003"), QStringLiteral("running"));
    constexpr int kFirst = 5, kSteps = 120;
    for (int rank = 0; rank < 2; ++rank) {
        QByteArray lines;
        for (int step = 1; step <= kFirst; ++step)
            lines += metricLine(rank, step);
        append(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank), lines);
    }
    append(run + QStringLiteral("/logs/rank0.log"), "hello from rank 0\n");

    RunsPage page;
    page.setRemoteHosts({m_server.alias()});
    const QString address = monitor::remoteRunAddress(m_server.alias(), run);
    page.openRuns({address});
    QTRY_COMPARE_WITH_TIMEOUT(page.monitorPage()->runs(), QStringList{address}, 30000);
    QVERIFY(page.selectedRuns().contains(address));
    monitor::RunMonitor *monitor = page.monitorPage()->runMonitor(0);
    QVERIFY(monitor);
    auto *follower = qobject_cast<app::RemoteRunFollower *>(monitor->source());
    QVERIFY2(follower, "a remote run is followed by a RemoteRunFollower");
    // Every rank's first steps reach the monitor's model (ranks table, charts' store, logs).
    QTRY_COMPARE_WITH_TIMEOUT(lossSteps(monitor, 1), oneTo(kFirst), 30000);
    QCOMPARE(lossSteps(monitor, 0), oneTo(kFirst));
    QTRY_VERIFY_WITH_TIMEOUT(monitor->ranksModel()->rowCount() >= 2, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(monitor->logModel()->rowCount() >= 1, 10000);

    QStringList reconnectLines;
    connect(follower, &app::RemoteRunFollower::connectionLost, this,
            [&] { reconnectLines << page.monitorPage()->remoteState()->text(); });
    QSignalSpy streams(follower, &app::RemoteRunFollower::streamStarted);
    QSignalSpy ended(monitor, &monitor::RunMonitor::ended);

    // The run goes on (one line per rank every 15 ms) while the SSH connection is killed twice.
    int step = kFirst;
    QTimer writer;
    connect(&writer, &QTimer::timeout, this, [&] {
        if (step >= kSteps)
            return writer.stop();
        ++step;
        for (int rank = 0; rank < 2; ++rank)
            append(run + QStringLiteral("/metrics/rank%1.jsonl").arg(rank), metricLine(rank, step));
    });
    writer.start(15);
    for (int drop = 1; drop <= 2; ++drop) {
        const int before = follower->connections();
        QTRY_VERIFY_WITH_TIMEOUT(step >= kFirst + drop * (kSteps - kFirst) / 3, 30000);
        QVERIFY(m_server.dropConnections() > 0);
        QTRY_VERIFY_WITH_TIMEOUT(follower->connections() > before && streams.count() >= drop, 30000);
    }
    QTRY_VERIFY_WITH_TIMEOUT(!writer.isActive(), 30000);
    writeRunManifest(run, QStringLiteral("succeeded"), QStringLiteral("follow"));
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 30000);

    QVERIFY2(reconnectLines.size() >= 2, qPrintable(reconnectLines.join('|')));
    for (const QString &line : std::as_const(reconnectLines))
        QVERIFY2(line.startsWith(QStringLiteral("Reconnecting to accel-test…")), qPrintable(line));
    QVERIFY(!page.monitorPage()->remoteState()->isVisible()); // streaming again, then ended
    QVERIFY(follower->failure().isEmpty());
    QCOMPARE(follower->runState(), QStringLiteral("succeeded"));
    // Every step of every rank exactly once, in order.
    QCOMPARE(lossSteps(monitor, 0), oneTo(kSteps));
    QCOMPARE(lossSteps(monitor, 1), oneTo(kSteps));
}

void tst_StudioRemote::newRunsPageReattachesARecordedLiveRun()
{
    // A cluster launch recorded as accel hosts launch records it, its runs in a folder of their own
    // on the host (as --remote_env XDG_DATA_HOME=... puts them), one still running, one finished.
    QTemporaryDir elsewhere;
    const QString live = makeRun(elsewhere.path(), QStringLiteral("live-20260101-000004"), QStringLiteral("running"));
    const QString done = makeRun(elsewhere.path(), QStringLiteral("done-20260101-000005"), QStringLiteral("succeeded"));
    for (const QString &run : {live, done})
        append(run + QStringLiteral("/metrics/rank0.jsonl"), metricLine(0, 1) + metricLine(0, 2));
    QJsonArray nodes;
    for (const QString &run : {live, done})
        nodes.append(QJsonObject{{"host", m_server.alias()},
                                 {"machine_rank", nodes.size()},
                                 {"started", true},
                                 {"run_id", QFileInfo(run).fileName()},
                                 {"run_dir", run}});
    QDir().mkpath(launcher::clusterRecordsDirectory());
    const QString recordPath = QDir(launcher::clusterRecordsDirectory()).filePath(QStringLiteral("r.json"));
    QFile record(recordPath);
    QVERIFY(record.open(QIODevice::WriteOnly));
    record.write(QJsonDocument(QJsonObject{{"schema", "accel.cluster-run"},
                                           {"version", 1},
                                           {"created", "2026-01-01T00:00:04Z"},
                                           {"main_process_ip", "127.0.0.1"},
                                           {"main_process_port", 29500},
                                           {"nodes", nodes}})
                     .toJson());
    record.close();
    QVERIFY(launcher::readClusterRecord(recordPath));

    const QString liveAddress = monitor::remoteRunAddress(m_server.alias(), live);
    const QString doneAddress = monitor::remoteRunAddress(m_server.alias(), done);
    {
        RunsPage page; // as at the studio's start: the record is read, the host listed
        QTRY_VERIFY_WITH_TIMEOUT(page.monitorPage()->runs().contains(liveAddress), 30000);
        QVERIFY(rowOfAddress(page, doneAddress) >= 0);              // listed,
        QVERIFY(!page.monitorPage()->runs().contains(doneAddress)); // not followed: it has ended
        const monitor::RunMonitor *monitor =
            page.monitorPage()->runMonitor(int(page.monitorPage()->runs().indexOf(liveAddress)));
        QTRY_COMPARE_WITH_TIMEOUT(lossSteps(monitor, 0), oneTo(2), 30000);
        append(live + QStringLiteral("/metrics/rank0.jsonl"), metricLine(0, 3));
        QTRY_COMPARE_WITH_TIMEOUT(lossSteps(monitor, 0), oneTo(3), 30000);
    }
    // Once the run has ended, a new page lists it without following it.
    writeRunManifest(live, QStringLiteral("stopped"), QStringLiteral("live"));
    {
        RunsPage page;
        QTRY_VERIFY_WITH_TIMEOUT(rowOfAddress(page, liveAddress) >= 0, 30000);
        QTest::qWait(200);
        QVERIFY(!page.monitorPage()->runs().contains(liveAddress));
    }
    QVERIFY(QFile::remove(recordPath));
}

void tst_StudioRemote::unreachableHostIsNamedAndThePageStaysUsable()
{
    const QString local = makeRun(launcher::RunDirectory::defaultRunsRoot(), QStringLiteral("usable-20260101-000006"),
                                  QStringLiteral("succeeded"));
    const QString remote = makeRun(m_remoteRoot, QStringLiteral("beside-20260101-000007"), QStringLiteral("running"));
    const QString nowhere = QStringLiteral("127.0.0.1:%1").arg(test::SshTestServer::freeLoopbackPort());
    RunsPage page;
    page.setRemoteHosts({nowhere, m_server.alias()});
    // The reachable host's runs come while the other one is still being tried or has failed.
    QTRY_VERIFY_WITH_TIMEOUT(rowOfAddress(page, monitor::remoteRunAddress(m_server.alias(), remote)) >= 0, 30000);
    QTRY_VERIFY_WITH_TIMEOUT(page.remoteHostsState()->isVisibleTo(&page), 60000);
    const QString state = page.remoteHostsState()->text();
    QVERIFY2(state.contains(nowhere) && state.contains(QStringLiteral("cannot be listed")), qPrintable(state));
    QVERIFY2(!state.contains(QStringLiteral("accel-test")), qPrintable(state));
    QVERIFY(page.remoteCatalogue()->problem(nowhere).startsWith(nowhere + QStringLiteral(": ")));
    // The page works on: a local run opens in the monitor.
    page.selectRuns({local});
    QCOMPARE(page.monitorPage()->runs(), QStringList{QDir::cleanPath(local)});
    QVERIFY(QDir(local).removeRecursively());
    QVERIFY(QDir(remote).removeRecursively());
}

void tst_StudioRemote::clusterViewNoticesARunThatEndedOnItsOwn()
{
    // A real cluster launch on the loopback host: a script that writes metrics and ends by itself.
    QTemporaryDir data;
    const QString script = data.filePath(QStringLiteral("short.py"));
    QFile scriptFile(script);
    QVERIFY(scriptFile.open(QIODevice::WriteOnly));
    scriptFile.write("import time\ntime.sleep(2)\n");
    scriptFile.close();
    const QString config = data.filePath(QStringLiteral("cluster.yaml"));
    QFile configFile(config);
    QVERIFY(configFile.open(QIODevice::WriteOnly));
    configFile.write(QStringLiteral("distributed_type: MULTI_CPU\nmixed_precision: 'no'\nnum_processes: 2\n"
                                    "use_cpu: true\nmain_process_port: %1\n")
                         .arg(test::SshTestServer::freeLoopbackPort())
                         .toUtf8());
    configFile.close();
    LaunchPage page;
    page.setAccelProgram(m_accel);
    page.setConfigFile(config);
    page.setScript(script);
    page.setInterpreter(QStringLiteral("/usr/bin/python3"));
    page.setHostEnvironment(QStringLiteral("XDG_DATA_HOME=") + data.path());
    page.setHosts({m_server.alias()});
    auto *view = page.findChild<ClusterRunView *>();
    QVERIFY(view);
    view->setPollInterval(300);
    QSignalSpy launched(&page, &LaunchPage::clusterLaunched);
    QSignalSpy failed(&page, &LaunchPage::launchFailed);
    QSignalSpy ended(view, &ClusterRunView::ended);
    QSignalSpy open(&page, &LaunchPage::openRemoteMonitorRequested);
    page.launchButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(launched.count() + failed.count() > 0, 90000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    const QString runDir = page.nodeTable()->item(0, 4)->text();
    QVERIFY(page.stopButton()->isEnabled());
    QVERIFY(page.monitorButton()->isEnabled());
    page.monitorButton()->click();
    QCOMPARE(open.count(), 1);
    QCOMPARE(open.first().first().toStringList(), QStringList{monitor::remoteRunAddress(m_server.alias(), runDir)});

    // Nobody presses Stop: the run ends by itself there, and the view sees it.
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
    QVERIFY(view->hasEnded());
    QCOMPARE(page.nodeTable()->item(0, 2)->text(), QStringLiteral("succeeded"));
    QVERIFY(!page.stopButton()->isEnabled());
    QVERIFY(view->stateLabel()->isVisibleTo(&page));
    QVERIFY2(view->stateLabel()->text().contains(QStringLiteral("accel-test: succeeded")),
             qPrintable(view->stateLabel()->text()));
}

QTEST_MAIN(tst_StudioRemote)
#include "tst_studioremote.moc"
