// Starts and stops the Launch page's runs through the studio's accel, never blocking: on this
// machine `accel launch --detach --json ARGS` (the run id and directory parsed from its output)
// and `accel stop RUN_DIR`; on cluster hosts `accel launch --hosts H1,H2 --json ARGS` (one
// detached supervisor per host, the nodes' runs in a record) and `accel hosts stop RECORD`. It
// knows when Stop applies: while the local run is live (its run.json, polled), and for a cluster
// from a started launch until a stop reached every node.
#pragma once

#include "app/studio/cluster/clusterreports.h"
#include "launcher/accelcommand.h"

#include <QPointer>
#include <QProcessEnvironment>
#include <QTimer>

namespace accel::app {

class RunControl : public QObject {
    Q_OBJECT
public:
    explicit RunControl(QObject *parent = nullptr);
    ~RunControl() override; // a command still running is killed; the runs are detached and go on

    void setAccelProgram(const QString &program) { m_accel = program; }
    QString accelProgram() const { return m_accel; }

    // `accel launch --detach --json REST` for ARGUMENTS = launch REST (launch's own flags before
    // the program, whose arguments follow it untouched), with `environment`. False while a launch
    // is starting.
    bool startLocal(const QStringList &arguments, const QProcessEnvironment &environment);
    // `accel ARGUMENTS` where ARGUMENTS already carry --hosts and --json (see LaunchPage).
    bool startOnHosts(const QStringList &arguments);
    bool stop(); // false when there is nothing to stop or a stop is running

    bool isStarting() const { return !m_launch.isNull(); }
    bool isStopping() const { return !m_stop.isNull(); }
    bool canStop() const;
    bool isCluster() const { return m_cluster; }
    QString runId() const { return m_runId; }
    QString runDirectory() const { return m_runDir; }
    QString record() const { return m_cluster ? m_report.record : QString(); }
    const ClusterLaunchReport &clusterReport() const { return m_report; }

Q_SIGNALS:
    void launched(const QString &runId, const QString &runDirectory); // a local run
    void clusterLaunched(const QString &record);                      // every node's run started
    void launchFailed(const QString &message);
    void stopFinished(int exitCode, const QString &output);
    void changed(); // anything the buttons or the node table depend on

private:
    launcher::AccelCommand *startAccel(const QStringList &arguments, const QProcessEnvironment &environment);
    void onLocalDone(const launcher::AccelOutcome &outcome);
    void onClusterDone(const launcher::AccelOutcome &outcome);
    void onStopDone(const launcher::AccelOutcome &outcome);
    void watchRunState();
    QString failureText(const launcher::AccelOutcome &outcome, const QString &what) const;

    QString m_accel;
    QPointer<launcher::AccelCommand> m_launch;
    QPointer<launcher::AccelCommand> m_stop;
    QTimer m_runWatch;
    bool m_cluster = false;
    bool m_live = false; // the local run is not final yet / the cluster was not stopped yet
    QString m_runId;
    QString m_runDir;
    ClusterLaunchReport m_report;
};

} // namespace accel::app
