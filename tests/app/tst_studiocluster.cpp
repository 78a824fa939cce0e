// The studio's side of remote clusters against a real sshd on loopback (SshTestServer), with this
// build's accel as the studio's and as the remote one (ACCEL_REMOTE_BIN) and a private SSH folder
// (ACCEL_SSH_DIR): the Hardware page's Cluster tab checks a host and shows its card, asks about an
// unknown host key (the fingerprint ssh-keygen computes) and records it on Accept, refuses a changed
// key without an Accept button, and runs the network pre-flight; the Launch page starts a job on the
// host with `accel launch --hosts` (and on two network-namespace nodes where they can be made),
// shows every node, and Stop leaves no process of it.
#include "app/studio/cluster/clustercards.h"
#include "app/studio/cluster/clustersection.h"
#include "app/studio/cluster/hostkeydialog.h"
#include "app/studio/cluster/hostlist.h"
#include "app/studio/hardwarecards.h"
#include "app/studio/hardwarepage.h"
#include "app/studio/launch/launchpage.h"
#include "tests/helpers/accelpackages.h"
#include "tests/helpers/netnssshnodes.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGroupBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::app;

namespace {

QString labelText(const QWidget *parent, const QString &name)
{
    const auto *label = parent->findChild<QLabel *>(name);
    return label ? label->text() : QStringLiteral("<no label %1>").arg(name);
}

// What ssh-keygen says the key of a known_hosts line is: "SHA256:...".
QString keygenFingerprint(const QString &knownHostsLine)
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("line"));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return {};
    file.write(knownHostsLine.toUtf8() + '\n');
    file.close();
    const auto listed = test::runProgram(QStringLiteral("ssh-keygen"), {QStringLiteral("-lf"), path});
    return listed.out.section(QLatin1Char(' '), 1, 1);
}

} // namespace

class tst_StudioCluster : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void hostListIsCheckedAndRemembered();
    void reportsOfAnotherSchemaOrVersionAreRefused();
    void clusterCheckShowsAnOkCard();
    void hostWithoutAccelIsInstalledFromItsCard();
    void unknownHostKeyAsksThenAcceptMakesTheNextCheckOk();
    void changedHostKeyIsRefusedWithoutAccept();
    void preflightShowsVerdictsPerHost();
    void launchPageTakesUpTheCheckedHosts();
    void launchOnHostsAndStopLeavesNoProcess();
    void launchOnTwoNetworkNamespaceNodes();

private:
    void runClusterJob(const QStringList &hosts, const QString &mainAddress);
    ClusterSection *checkedSection(HardwarePage &page, const QString &host);
    test::SshTestServer m_server;
    QString m_accel;
};

void tst_StudioCluster::initTestCase()
{
    if (const QString reason = test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    m_accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFileInfo(m_accel).isExecutable(), "build the accel target");
    qunsetenv("SSH_AUTH_SOCK");
    const QString error = m_server.start();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    // The studio's accel (a child of this process) reads these; the hosts run this build's accel.
    qputenv("ACCEL_SSH_DIR", m_server.clientDirectory().toLocal8Bit());
    qputenv("ACCEL_REMOTE_BIN", m_accel.toLocal8Bit());
}

void tst_StudioCluster::hostListIsCheckedAndRemembered()
{
    QCOMPARE(*parseHostList(QStringLiteral(" gpu1, alice@gpu2:2222 gpu1,,")),
             QStringList({QStringLiteral("gpu1"), QStringLiteral("alice@gpu2:2222")}));
    const auto bad = parseHostList(QStringLiteral("gpu1, gpu$(reboot)"));
    QVERIFY(!bad);
    QVERIFY2(QString::fromStdString(bad.error().toString()).contains(QStringLiteral("'gpu$(reboot)'")),
             bad.error().toString().c_str());
    QVERIFY(!parseHostList(QStringLiteral(" , ")));
    QVERIFY(!parseHostList(QStringLiteral("-oProxyCommand=x")));

    HardwarePage page;
    ClusterSection *section = page.clusterSection();
    section->setHosts({QStringLiteral("gpu 1")}); // two hosts: fine
    QVERIFY(section->checkButton()->isEnabled());
    section->setHosts({QStringLiteral("gpu;1")});
    QVERIFY(!section->checkButton()->isEnabled());
    QVERIFY(!section->preflightButton()->isEnabled());
    QVERIFY(!section->checkHosts());
    QVERIFY2(labelText(section, QStringLiteral("clusterState")).contains(QStringLiteral("'gpu;1'")),
             qPrintable(labelText(section, QStringLiteral("clusterState"))));
}

void tst_StudioCluster::reportsOfAnotherSchemaOrVersionAreRefused()
{
    const auto none = parseHostsCheck("accel hosts check: no hosts given\n");
    QVERIFY(!none);
    QVERIFY2(none.error().toString().find("printed no JSON") != std::string::npos, none.error().toString().c_str());
    const auto other = parseHostsCheck(R"({"schema": "accel.doctor", "version": 1})");
    QVERIFY(!other);
    QVERIFY2(other.error().toString().find("expected schema accel.hosts-check, got 'accel.doctor'") !=
                 std::string::npos,
             other.error().toString().c_str());
    const auto newer = parseHostsLaunch(R"({"schema": "accel.hosts-launch", "version": 2})");
    QVERIFY(!newer);
    QVERIFY2(newer.error().toString().find("version 2 is newer") != std::string::npos,
             newer.error().toString().c_str());
    const auto stop = parseHostsStop(R"({"schema": "accel.hosts-stop", "version": 1, "ok": false, "nodes": [
        {"host": "gpu1", "run_dir": "/r/1", "stopped": true, "state": "stopped", "message": ""},
        {"host": "gpu2", "run_dir": "/r/2", "stopped": false, "state": null, "message": "unreachable"}]})");
    QVERIFY(stop);
    QCOMPARE(stop->ok, false);
    QCOMPARE(static_cast<int>(stop->nodes.size()), 2);
    QCOMPARE(stop->nodes[0].state, QStringLiteral("stopped"));
    QCOMPARE(stop->nodes[1].stopped, false);
    QCOMPARE(stop->nodes[1].message, QStringLiteral("unreachable"));
}

ClusterSection *tst_StudioCluster::checkedSection(HardwarePage &page, const QString &host)
{
    ClusterSection *section = page.clusterSection();
    section->setAccelProgram(m_accel);
    section->setHosts({host});
    QSignalSpy finished(section, &ClusterSection::checkFinished);
    section->checkButton()->click();
    if (!finished.wait(60000))
        return nullptr;
    return section;
}

void tst_StudioCluster::clusterCheckShowsAnOkCard()
{
    HardwarePage page;
    page.showCluster();
    ClusterSection *section = checkedSection(page, m_server.alias());
    QVERIFY(section);
    const HostCheck *check = section->hostCheck(m_server.alias());
    QVERIFY(check);
    QVERIFY2(check->ok(), qPrintable(check->status + QStringLiteral(": ") + check->message));
    QVERIFY(!section->hostKeyDialog());
    QCOMPARE(rememberedHosts(), QStringList{m_server.alias()});

    // The card shows what the host's own `accel env` reports (the host is this machine).
    const auto env = test::runAccel({QStringLiteral("env"), QStringLiteral("--json"), QStringLiteral("--no_python")});
    QCOMPARE(env.exitCode, 0);
    const QJsonObject report = QJsonDocument::fromJson(env.out.toUtf8()).object();
    auto *card = page.findChild<QWidget *>(QStringLiteral("hostCard:accel-test"));
    QVERIFY(card);
    QCOMPARE(card->findChild<QLabel *>(QStringLiteral("hostStatus:accel-test"))->property("status").toString(),
             QStringLiteral("ok"));
    QCOMPARE(labelText(card, QStringLiteral("hostAccel:accel-test")), report.value("accel_version").toString());
    QCOMPARE(labelText(card, QStringLiteral("hostCpus:accel-test")),
             QString::number(report.value("cpu").toObject().value("logical_cpus").toInt()));
    QCOMPARE(labelText(card, QStringLiteral("hostMemory:accel-test")),
             formatBytes(static_cast<uint64_t>(report.value("memory").toObject().value("total_bytes").toDouble())));
    QVERIFY(!card->findChild<QLabel *>(QStringLiteral("hostFix:accel-test"))); // nothing to do

    // A host without accel says what to do, beside the ok one.
    QTemporaryDir dir;
    const QString unreachable = QStringLiteral("127.0.0.1:%1").arg(test::SshTestServer::freeLoopbackPort());
    section->setHosts({m_server.alias(), unreachable});
    QSignalSpy finished(section, &ClusterSection::checkFinished);
    QVERIFY(section->checkHosts());
    QVERIFY(!section->checkButton()->isEnabled()); // while it runs
    QVERIFY(finished.wait(60000));
    QVERIFY(section->hostCheck(m_server.alias())->ok());
    QCOMPARE(section->hostCheck(unreachable)->status, QStringLiteral("unreachable"));
    const QString fix = labelText(&page, QStringLiteral("hostFix:") + unreachable);
    QVERIFY2(fix.contains(QStringLiteral("sshd runs on ") + unreachable), qPrintable(fix));
    QVERIFY(section->checkButton()->isEnabled());
}

// A host whose ssh commands find no accel (its own home folder: sshd's SetEnv HOME) gets "Install
// accel here" on its card; the button runs the studio's `accel hosts install HOST --json` with this
// build's accel package (packaging/package.sh), and the check that follows finds the installed accel
// on the host's PATH: the card turns ok. A host of another version is offered the same.
void tst_StudioCluster::hostWithoutAccelIsInstalledFromItsCard()
{
    HostCheck mismatch;
    mismatch.host = QStringLiteral("gpu9");
    mismatch.status = QStringLiteral("version_mismatch");
    QPushButton *offered = nullptr;
    std::unique_ptr<QGroupBox> card(
        createHostCard(mismatch, QStringLiteral(ACCEL_VERSION), nullptr, nullptr, &offered));
    QVERIFY(offered);
    QCOMPARE(offered->objectName(), QStringLiteral("installAccel:gpu9"));
    mismatch.status = QStringLiteral("unreachable");
    card.reset(createHostCard(mismatch, QStringLiteral(ACCEL_VERSION), nullptr, nullptr, &offered));
    QVERIFY(!offered);

    QTemporaryDir scratch;
    const QString packages = scratch.filePath(QStringLiteral("dist"));
    const QString made = test::makeAccelPackages(packages);
    QVERIFY2(made.isEmpty(), qPrintable(made));
    const QString home = scratch.filePath(QStringLiteral("home"));
    QVERIFY(QDir().mkpath(home));
    test::SshTestServer fresh;
    fresh.setSessionEnvironment({QStringLiteral("HOME=") + home});
    const QString started = fresh.start();
    QVERIFY2(started.isEmpty(), qPrintable(started));
    const QByteArray sshDir = qgetenv("ACCEL_SSH_DIR"), remoteBin = qgetenv("ACCEL_REMOTE_BIN");
    qputenv("ACCEL_SSH_DIR", fresh.clientDirectory().toLocal8Bit());
    qunsetenv("ACCEL_REMOTE_BIN"); // the hosts' PATH decides
    qputenv("ACCEL_PACKAGES_DIR", packages.toLocal8Bit());
    const auto restore = qScopeGuard([&] {
        qputenv("ACCEL_SSH_DIR", sshDir);
        qputenv("ACCEL_REMOTE_BIN", remoteBin);
        qunsetenv("ACCEL_PACKAGES_DIR");
    });

    HardwarePage page;
    page.showCluster();
    ClusterSection *section = checkedSection(page, fresh.alias());
    QVERIFY(section);
    QCOMPARE(section->hostCheck(fresh.alias())->status, QStringLiteral("accel_not_found"));
    auto *install = page.findChild<QPushButton *>(QStringLiteral("installAccel:") + fresh.alias());
    QVERIFY(install);
    QVERIFY2(
        labelText(&page, QStringLiteral("hostFix:") + fresh.alias()).contains(QStringLiteral("Install accel here")),
        qPrintable(labelText(&page, QStringLiteral("hostFix:") + fresh.alias())));
    QSignalSpy installed(section, &ClusterSection::installFinished);
    QSignalSpy checked(section, &ClusterSection::checkFinished);
    install->click();
    QVERIFY(installed.wait(120000));
    QVERIFY2(installed.at(0).at(0).toBool(), qPrintable(labelText(section, QStringLiteral("clusterState"))));
    QVERIFY(checked.wait(60000));
    const HostCheck *check = section->hostCheck(fresh.alias());
    QVERIFY2(check->ok(), qPrintable(check->status + QStringLiteral(": ") + check->message));
    QCOMPARE(check->accelVersion, QStringLiteral(ACCEL_VERSION));
    QVERIFY(!page.findChild<QPushButton *>(QStringLiteral("installAccel:") + fresh.alias()));
    QVERIFY(QFileInfo(home + QStringLiteral("/.local/bin/accel")).isExecutable());
}

void tst_StudioCluster::unknownHostKeyAsksThenAcceptMakesTheNextCheckOk()
{
    const QString knownHosts = m_server.writeClientFile(QStringLiteral("known_hosts_studio"), QByteArray());
    m_server.addAlias(QStringLiteral("accel-test-new"), {QStringLiteral("UserKnownHostsFile ") + knownHosts});
    HardwarePage page;
    ClusterSection *section = checkedSection(page, QStringLiteral("accel-test-new"));
    QVERIFY(section);
    QCOMPARE(section->hostCheck(QStringLiteral("accel-test-new"))->status, QStringLiteral("host_key_unknown"));
    HostKeyDialog *dialog = section->hostKeyDialog();
    QVERIFY(dialog);
    QVERIFY(dialog->isVisible());
    QVERIFY(!dialog->isChangedKey());
    const QString fingerprint = keygenFingerprint(m_server.knownHostsLine());
    QVERIFY(fingerprint.startsWith(QStringLiteral("SHA256:")));
    QCOMPARE(labelText(dialog, QStringLiteral("hostKeyFingerprint")), fingerprint);
    QCOMPARE(labelText(dialog, QStringLiteral("hostKeyType")), QStringLiteral("ssh-ed25519"));
    QCOMPARE(labelText(dialog, QStringLiteral("hostKeyHost")), QStringLiteral("accel-test-new"));
    QCOMPARE(labelText(dialog, QStringLiteral("hostKeyFile")), knownHosts);
    QFile file(knownHosts);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), QByteArray()); // nothing recorded before the answer
    file.close();

    QSignalSpy finished(section, &ClusterSection::checkFinished);
    QVERIFY(dialog->acceptButton());
    dialog->acceptButton()->click();
    QVERIFY(finished.wait(60000));
    const HostCheck *check = section->hostCheck(QStringLiteral("accel-test-new"));
    QVERIFY2(check->ok(), qPrintable(check->status + QStringLiteral(": ") + check->message));
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.readAll().contains(m_server.knownHostsLine().section(QLatin1Char(' '), 2, 2).toLatin1()));
    QTRY_VERIFY(!section->hostKeyDialog());

    // Recorded: the next check is ok and asks nothing.
    QVERIFY(section->checkHosts());
    QVERIFY(finished.wait(60000));
    QVERIFY(section->hostCheck(QStringLiteral("accel-test-new"))->ok());
    QVERIFY(!section->hostKeyDialog());
}

void tst_StudioCluster::changedHostKeyIsRefusedWithoutAccept()
{
    const QStringList otherKey = m_server.makeKey(QStringLiteral("studio_other_host_key")).split(QLatin1Char(' '));
    const QString knownHosts = m_server.writeClientFile(QStringLiteral("known_hosts_studio_changed"),
                                                        QStringLiteral("[127.0.0.1]:%1 %2 %3\n")
                                                            .arg(m_server.port())
                                                            .arg(otherKey.value(0), otherKey.value(1))
                                                            .toUtf8());
    m_server.addAlias(QStringLiteral("accel-test-changed"), {QStringLiteral("UserKnownHostsFile ") + knownHosts});
    HardwarePage page;
    ClusterSection *section = checkedSection(page, QStringLiteral("accel-test-changed"));
    QVERIFY(section);
    QCOMPARE(section->hostCheck(QStringLiteral("accel-test-changed"))->status, QStringLiteral("host_key_changed"));
    HostKeyDialog *dialog = section->hostKeyDialog();
    QVERIFY(dialog);
    QVERIFY(dialog->isChangedKey());
    QVERIFY(!dialog->acceptButton());
    QVERIFY(!dialog->findChild<QPushButton *>(QStringLiteral("acceptHostKey")));
    QVERIFY2(labelText(dialog, QStringLiteral("hostKeyMessage")).contains(QStringLiteral("WARNING")),
             qPrintable(labelText(dialog, QStringLiteral("hostKeyMessage"))));
    QCOMPARE(labelText(dialog, QStringLiteral("hostKeyFingerprint")), keygenFingerprint(m_server.knownHostsLine()));
    const QString command = labelText(dialog, QStringLiteral("hostKeyRemoveCommand"));
    QCOMPARE(command, QStringLiteral("ssh-keygen -R '[127.0.0.1]:%1' -f %2").arg(m_server.port()).arg(knownHosts));
    const QString fix = labelText(&page, QStringLiteral("hostFix:accel-test-changed"));
    QVERIFY2(fix.contains(QStringLiteral("ssh-keygen -R")), qPrintable(fix));

    dialog->reject();
    QTRY_VERIFY(!section->hostKeyDialog());
    QFile file(knownHosts);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.readAll().contains(otherKey.value(1).toLatin1())); // untouched
    // The card's button shows the refusal again, still without Accept.
    auto *review = page.findChild<QPushButton *>(QStringLiteral("reviewHostKey:accel-test-changed"));
    QVERIFY(review);
    review->click();
    QVERIFY(section->hostKeyDialog() && !section->hostKeyDialog()->acceptButton());
    section->hostKeyDialog()->reject();
}

void tst_StudioCluster::preflightShowsVerdictsPerHost()
{
    HardwarePage page;
    ClusterSection *section = page.clusterSection();
    section->setAccelProgram(m_accel);
    section->setHosts({m_server.alias()});
    QSignalSpy finished(section, &ClusterSection::preflightFinished);
    section->preflightButton()->click();
    QVERIFY(finished.wait(90000));
    auto *table = page.findChild<QTableWidget *>(QStringLiteral("doctorChecks"));
    QVERIFY2(table, qPrintable(labelText(section, QStringLiteral("clusterState"))));
    bool accelOk = false;
    for (int row = 0; row < table->rowCount(); ++row) {
        QCOMPARE(table->item(row, 1)->text(), m_server.alias());
        accelOk = accelOk || (table->item(row, 0)->text() == QLatin1String("accel") &&
                              table->item(row, 2)->text() == QLatin1String("ok"));
    }
    QVERIFY(table->rowCount() >= 3); // accel, interface, listen at least
    QVERIFY(accelOk);
}

void tst_StudioCluster::runClusterJob(const QStringList &hosts, const QString &mainAddress)
{
    QTemporaryDir data; // the nodes' run directories and what the ranks write
    const QString marker = test::newMarker();
    const QString script = data.filePath(QStringLiteral("wait.py"));
    QFile scriptFile(script);
    QVERIFY(scriptFile.open(QIODevice::WriteOnly));
    scriptFile.write("import os, sys, time\n"
                     "path = sys.argv[sys.argv.index('--ready') + 1].replace('{rank}', os.environ['RANK'])\n"
                     "open(path, 'w').write(os.environ['MASTER_ADDR'])\n"
                     "time.sleep(600)\n");
    scriptFile.close();
    const int port = test::SshTestServer::freeLoopbackPort();
    const QString config = data.filePath(QStringLiteral("cluster.yaml"));
    QFile configFile(config);
    QVERIFY(configFile.open(QIODevice::WriteOnly));
    configFile.write(QStringLiteral("distributed_type: MULTI_CPU\nmixed_precision: 'no'\nnum_processes: 2\n"
                                    "use_cpu: true\nmain_process_port: %1\n")
                         .arg(port)
                         .toUtf8());
    configFile.close();

    LaunchPage page;
    page.setAccelProgram(m_accel);
    page.setConfigFile(config);
    page.setScript(script, QStringLiteral("--marker %1 --ready %2").arg(marker, data.filePath("ready-{rank}")));
    page.setInterpreter(QStringLiteral("/usr/bin/python3"));
    page.setHostEnvironment(QStringLiteral("XDG_DATA_HOME=") + data.path());
    QVERIFY(!page.runsOnHosts());
    page.setHosts(hosts);
    QVERIFY(page.runsOnHosts());
    const QString command = page.findChild<QPlainTextEdit *>(QStringLiteral("commandPreview"))->toPlainText();
    QVERIFY2(command.startsWith(QStringLiteral("accel launch --hosts %1 --json --main_process_port %2 "
                                               "--remote_env PYTHON_EXEC=/usr/bin/python3 --remote_env "
                                               "XDG_DATA_HOME=%3 --config_file %4 %5")
                                    .arg(hosts.join(QLatin1Char(',')))
                                    .arg(port)
                                    .arg(data.path(), config, script)),
             qPrintable(command));
    QVERIFY(page.launchButton()->isEnabled());
    QVERIFY(!page.stopButton()->isEnabled());

    QSignalSpy launched(&page, &LaunchPage::clusterLaunched);
    QSignalSpy failed(&page, &LaunchPage::launchFailed);
    page.launchButton()->click();
    QVERIFY(page.isBusy());
    QVERIFY(!page.launchButton()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(launched.count() + failed.count() > 0, 90000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    const QString record = launched.first().first().toString();
    QVERIFY(QFileInfo::exists(record));
    QCOMPARE(page.clusterRecord(), record);

    // One row per node: started, with the run it started there (each node writes to this machine's
    // file system here).
    QTableWidget *nodes = page.nodeTable();
    QVERIFY(nodes->isVisibleTo(&page));
    QCOMPARE(nodes->rowCount(), hosts.size());
    for (int row = 0; row < hosts.size(); ++row) {
        QCOMPARE(nodes->item(row, 0)->text(), hosts[row]);
        QCOMPARE(nodes->item(row, 1)->text(), QString::number(row));
        QCOMPARE(nodes->item(row, 2)->text(), QStringLiteral("started"));
        const QString runDir = nodes->item(row, 4)->text();
        QVERIFY2(runDir.startsWith(data.path()), qPrintable(runDir));
        QCOMPARE(QFileInfo(runDir).fileName(), nodes->item(row, 3)->text());
        QVERIFY(QFileInfo::exists(runDir + QStringLiteral("/run.json")));
    }
    for (int rank = 0; rank < 2; ++rank) {
        QFile ready(data.filePath(QStringLiteral("ready-%1").arg(rank)));
        QTRY_VERIFY_WITH_TIMEOUT(ready.size() > 0, 30000);
        QVERIFY(ready.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(ready.readAll()), mainAddress);
    }
    QVERIFY(test::processesWithMarker(marker).size() >= 2);
    QVERIFY(page.stopButton()->isEnabled());
    QVERIFY(page.monitorButton()->isEnabled()); // opens the nodes' runs in the Monitor

    QSignalSpy stopped(&page, &LaunchPage::stopFinished);
    page.stopButton()->click();
    QVERIFY(!page.stopButton()->isEnabled()); // while it stops
    QTRY_COMPARE_WITH_TIMEOUT(stopped.count(), 1, 60000);
    QVERIFY2(stopped.first().first().toInt() == 0, qPrintable(stopped.first().at(1).toString()));
    QTRY_VERIFY_WITH_TIMEOUT(test::processesWithMarker(marker).isEmpty(), 20000);
    QVERIFY(!page.stopButton()->isEnabled()); // every node stopped: nothing left to stop
    for (int row = 0; row < hosts.size(); ++row)
        QCOMPARE(nodes->item(row, 2)->text(), QStringLiteral("stopped"));
}

void tst_StudioCluster::launchPageTakesUpTheCheckedHosts()
{
    rememberHosts({QStringLiteral("gpu1"), QStringLiteral("gpu2")});
    LaunchPage page;
    auto *hosts = page.findChild<QLineEdit *>(QStringLiteral("launchHosts"));
    QCOMPARE(hosts->text(), QStringLiteral("gpu1, gpu2"));
    QVERIFY(!hosts->isEnabled()); // this machine is the default
    // Checked on the Hardware page meanwhile: shown when the page is shown again.
    rememberHosts({QStringLiteral("node7")});
    page.show();
    QCOMPARE(hosts->text(), QStringLiteral("node7"));
    // A list edited here stays.
    page.hide();
    hosts->setText(QStringLiteral("mine"));
    rememberHosts({QStringLiteral("node8")});
    page.show();
    QCOMPARE(hosts->text(), QStringLiteral("mine"));
    QTemporaryDir dir;
    QFile config(dir.filePath(QStringLiteral("c.yaml")));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write("distributed_type: MULTI_CPU\nnum_processes: 2\nuse_cpu: true\n");
    config.close();
    page.setConfigFile(config.fileName());
    page.setScript(QStringLiteral("train.py"));
    page.setHostEnvironment(QStringLiteral("GOOD=1 bad"));
    page.setRunOnHosts(true);
    QVERIFY(!page.launchButton()->isEnabled());
    QVERIFY2(page.commandText().contains(QStringLiteral("expected KEY=VALUE")) &&
                 page.commandText().contains(QStringLiteral("'bad'")),
             qPrintable(page.commandText()));
}

void tst_StudioCluster::launchOnHostsAndStopLeavesNoProcess()
{
    runClusterJob({m_server.alias()}, QStringLiteral("127.0.0.1"));
}

void tst_StudioCluster::launchOnTwoNetworkNamespaceNodes()
{
    // Two nodes with their own network and sshd, reached over a bridge (needs root).
    test::NetnsSshNodes testbed(2);
    if (const QString reason = testbed.makeNetwork(); !reason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no network namespaces here: ") + reason));
    const QString error = testbed.startServers();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QByteArray loopbackFolder = qgetenv("ACCEL_SSH_DIR");
    qputenv("ACCEL_SSH_DIR", testbed.clientDirectory().toLocal8Bit());
    runClusterJob({QStringLiteral("node0"), QStringLiteral("node1")}, testbed.nodeAddress(0));
    qputenv("ACCEL_SSH_DIR", loopbackFolder);
}

QTEST_MAIN(tst_StudioCluster)
#include "tst_studiocluster.moc"
