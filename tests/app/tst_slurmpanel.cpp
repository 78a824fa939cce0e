// The Hardware page's SLURM queue panel against a real single-node SLURM cluster (SlurmTestCluster:
// munged, slurmctld, slurmd started by the test) reached through a real sshd on loopback, with this
// build's accel as the studio's and the remote one: Refresh lists the jobs `accel slurm submit`
// submitted with their states, Cancel ends the selected running job (CANCELLED in the table) and is
// refused for an ended one, and an unreachable login node is said in the state line. Skips with the
// reason where the daemons or sshd cannot run.
#include "app/studio/cluster/clustersection.h"
#include "app/studio/cluster/slurmqueuepanel.h"
#include "tests/helpers/slurmtestcluster.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::app;

class tst_SlurmPanel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void queueJsonIsRead();
    void clusterTabHoldsThePanel();
    void refreshListsJobsAndCancelEndsTheSelectedOne();
    void unreachableLoginNodeIsSaid();

private:
    QString submit(const QString &name, const QByteArray &body);
    bool refreshAndWait(SlurmQueuePanel &panel);
    int rowOf(const SlurmQueuePanel &panel, const QString &id) const;

    QTemporaryDir m_dir;
    test::SshTestServer m_server;
    test::SlurmTestCluster m_cluster;
    QString m_accel;
    QString m_reason;
};

void tst_SlurmPanel::initTestCase()
{
    m_accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFile::exists(m_accel), "build the accel target");
    m_reason = test::SshTestServer::unavailableReason();
    if (m_reason.isEmpty()) {
        const QString error = m_server.start();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        m_reason = m_cluster.start(m_dir.filePath(QStringLiteral("cluster")));
    }
    qunsetenv("SSH_AUTH_SOCK");
    qputenv("ACCEL_SSH_DIR", m_server.clientDirectory().toLocal8Bit());
    qputenv("ACCEL_REMOTE_BIN", m_accel.toLocal8Bit());
}

void tst_SlurmPanel::cleanupTestCase()
{
    m_cluster.cancelAll();
    m_cluster.stop();
}

// A job submitted with the CLI, as a person would; returns its id.
QString tst_SlurmPanel::submit(const QString &name, const QByteArray &body)
{
    const QString script = m_dir.filePath(name + QStringLiteral(".sbatch"));
    QFile file(script);
    if (!file.open(QIODevice::WriteOnly))
        return {};
    file.write("#!/bin/bash\n#SBATCH --job-name=" + name.toUtf8() + "\n#SBATCH --cpus-per-task=1\n" + body);
    file.close();
    const auto result = test::runAccel({"slurm", "submit", "--host", m_server.alias(), "--json", "--remote_dir",
                                        m_dir.filePath(QStringLiteral("submit")), "--remote_env",
                                        "SLURM_CONF=" + m_cluster.conf(), script});
    return QJsonDocument::fromJson(result.out.toUtf8()).object().value(QStringLiteral("job_id")).toString();
}

bool tst_SlurmPanel::refreshAndWait(SlurmQueuePanel &panel)
{
    QSignalSpy refreshed(&panel, &SlurmQueuePanel::refreshed);
    if (!panel.refresh())
        return false;
    return refreshed.wait(60000);
}

int tst_SlurmPanel::rowOf(const SlurmQueuePanel &panel, const QString &id) const
{
    for (int row = 0; row < panel.table()->rowCount(); ++row) {
        if (panel.table()->item(row, 0) && panel.table()->item(row, 0)->text() == id)
            return row;
    }
    return -1;
}

void tst_SlurmPanel::queueJsonIsRead()
{
    const QByteArray json = R"({"schema":"accel.slurm-queue","version":1,"accounting":"completion",
        "accounting_message":"from the log","host":"login1","jobs":[{"id":"12","name":"a b","state":"RUNNING",
        "elapsed":"1:02","elapsed_seconds":62,"nodes":2,"reason":"None","node_list":"n[1-2]","work_dir":"/w",
        "partition":"gpu","final":false,"source":"squeue"}]})";
    auto view = parseSlurmQueueJson(json);
    QVERIFY(view);
    QCOMPARE(view->host, QStringLiteral("login1"));
    QCOMPARE(view->jobs.size(), 1);
    QCOMPARE(view->jobs.at(0).nodeList, QStringLiteral("n[1-2]"));
    QCOMPARE(view->jobs.at(0).elapsedSeconds, 62);
    QVERIFY(!parseSlurmQueueJson(R"({"schema":"accel.slurm-queue","version":2,"jobs":[]})"));
    QVERIFY(!parseSlurmQueueJson("squeue: error"));
}

void tst_SlurmPanel::clusterTabHoldsThePanel()
{
    ClusterSection section;
    QVERIFY(section.findChild<SlurmQueuePanel *>() != nullptr);
}

void tst_SlurmPanel::refreshListsJobsAndCancelEndsTheSelectedOne()
{
    if (!m_reason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no SLURM cluster here: ") + m_reason));
    const QString quick = submit(QStringLiteral("panel-quick"), "true\n");
    const QString slow = submit(QStringLiteral("panel-long"), "sleep 300\n");
    QVERIFY2(!quick.isEmpty() && !slow.isEmpty(), "accel slurm submit failed");

    SlurmQueuePanel panel;
    panel.setAccelProgram(m_accel);
    panel.setRemoteEnvironment({QStringLiteral("SLURM_CONF=") + m_cluster.conf()});
    panel.setLoginHost(m_server.alias());
    QVERIFY(!panel.cancelButton()->isEnabled()); // nothing selected
    // The quick job completes and the long one runs.
    QVERIFY(test::waitFor(
        [&] {
            if (!refreshAndWait(panel))
                return false;
            const int q = rowOf(panel, quick);
            const int s = rowOf(panel, slow);
            return q >= 0 && s >= 0 && panel.table()->item(q, 2)->text() == QLatin1String("COMPLETED") &&
                   panel.table()->item(s, 2)->text() == QLatin1String("RUNNING");
        },
        90000));
    QVERIFY2(panel.stateText().contains(m_server.alias()), qPrintable(panel.stateText()));
    QCOMPARE(panel.table()->item(rowOf(panel, slow), 1)->text(), QStringLiteral("panel-long"));
    QCOMPARE(panel.table()->item(rowOf(panel, slow), 5)->text(), QStringLiteral("localhost"));

    // An ended job cannot be cancelled.
    panel.table()->selectRow(rowOf(panel, quick));
    QVERIFY(!panel.cancelButton()->isEnabled());
    QVERIFY(!panel.cancelSelected());

    panel.table()->selectRow(rowOf(panel, slow));
    QVERIFY(panel.cancelButton()->isEnabled());
    QSignalSpy cancelled(&panel, &SlurmQueuePanel::cancelFinished);
    QSignalSpy refreshed(&panel, &SlurmQueuePanel::refreshed);
    panel.cancelButton()->click();
    QVERIFY(cancelled.wait(120000));
    QVERIFY2(panel.stateText().contains(QStringLiteral("Job %1: RUNNING -> CANCELLED").arg(slow)),
             qPrintable(panel.stateText()));
    QVERIFY(refreshed.wait(60000));
    QCOMPARE(panel.table()->item(rowOf(panel, slow), 2)->text(), QStringLiteral("CANCELLED"));
    QVERIFY(!panel.cancelButton()->isEnabled()); // the selection stays on the job, which has ended
}

void tst_SlurmPanel::unreachableLoginNodeIsSaid()
{
    if (!test::SshTestServer::unavailableReason().isEmpty())
        QSKIP(qPrintable(test::SshTestServer::unavailableReason()));
    SlurmQueuePanel panel;
    panel.setAccelProgram(m_accel);
    panel.setLoginHost(QStringLiteral("127.0.0.1:%1").arg(test::SshTestServer::freeLoopbackPort()));
    QVERIFY(refreshAndWait(panel));
    QVERIFY2(panel.stateText().startsWith(QStringLiteral("The queue could not be read:")) &&
                 panel.stateText().contains(QStringLiteral("127.0.0.1")),
             qPrintable(panel.stateText()));
    QCOMPARE(panel.table()->rowCount(), 0);
}

QTEST_MAIN(tst_SlurmPanel)
#include "tst_slurmpanel.moc"
