// The Hardware page's SLURM queue (Cluster tab): a login node, "Refresh" running `accel slurm
// queue --host H --json`, a table of the jobs (id, name, state, elapsed, nodes, reason or nodes)
// and "Cancel job" running `accel slurm cancel --host H JOBID --json` for the selected job that has
// not ended, then refreshing. Both run through a LocalHost (the studio's own accel, which reaches
// the login node over SSH); nothing here speaks SSH or parses squeue.
// "Follow" (a job that has started, or is waiting to) runs `accel slurm follow --host H JOBID
// --json --events` until its accel.tail stream starts, i.e. until the job's run directory (every
// node's, for a multi-node job) holds run.json, then stops it and asks for the run to be followed
// (followRequested: the Runs page follows it over SSH like any remote run). Meanwhile the job's
// row says that it waits; a job that ends without a run directory says so there.
#pragma once

#include "core/common/result.h"
#include "launcher/host.h"
#include "launcher/slurm.h"

#include <QGroupBox>
#include <QHash>
#include <QList>

#include <map>

#include <memory>

class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace accel::app {

// What `accel slurm queue --json` (accel.slurm-queue, version 1) says. Pure.
struct SlurmQueueView {
    QString host;
    QString accountingMessage;
    QList<launcher::slurm::SlurmJob> jobs;
};
Result<SlurmQueueView> parseSlurmQueueJson(const QByteArray &json);

class SlurmQueuePanel : public QGroupBox {
    Q_OBJECT
public:
    explicit SlurmQueuePanel(QWidget *parent = nullptr);
    ~SlurmQueuePanel() override;

    void setAccelProgram(const QString &program); // default: accel beside the studio, else PATH
    // KEY=VALUE for the SLURM commands on the login node (accel's --remote_env).
    void setRemoteEnvironment(const QStringList &environment) { m_remoteEnvironment = environment; }
    void setLoginHost(const QString &host);
    QString loginHost() const;

    // Start the commands; false (with the reason in the panel's state line) without a login node,
    // without a selected live job, or while one is running.
    bool refresh();
    bool cancelSelected();
    // Follows the selected job (see above); false when it cannot apply (the reason in the state line).
    bool followSelected();
    // Whether Follow applies: the job has a working directory and did not end without ever starting.
    static bool canFollow(const launcher::slurm::SlurmJob &job);
    bool isBusy() const { return m_command != nullptr; }

    const QList<launcher::slurm::SlurmJob> &jobs() const { return m_jobs; }
    QTableWidget *table() const { return m_table; }
    QPushButton *cancelButton() const { return m_cancelButton; }
    QPushButton *followButton() const { return m_followButton; }
    // What the Follow column says for that job ("waiting for its run directory ...", a failure).
    QString followNote(const QString &jobId) const;
    QString stateText() const;

Q_SIGNALS:
    void refreshed();      // the table shows a new answer (or the state line the failure)
    void cancelFinished(); // scancel's answer is in the state line; a refresh follows
    // The job's run directory exists on `host`: `runDirectory` (for a multi-node job the folder of
    // its node<K> run directories, `multiNode`); `name` is "<job name> (job <id>)".
    void followRequested(const QString &host, const QString &runDirectory, const QString &name, bool multiNode);
    void followFailed(const QString &jobId, const QString &message);

private:
    using Handler = void (SlurmQueuePanel::*)(const launcher::AccelOutcome &);
    bool start(const QStringList &arguments, Handler handler);
    void onQueueDone(const launcher::AccelOutcome &outcome);
    void onCancelDone(const launcher::AccelOutcome &outcome);
    struct Follow;
    void onFollowOutput(const QString &jobId, const QByteArray &standardOutput, const QByteArray &standardError);
    void onFollowDone(const QString &jobId, const launcher::AccelOutcome &outcome);
    void setFollowNote(const QString &jobId, const QString &note);
    void fillTable();
    const launcher::slurm::SlurmJob *selectedJob() const;
    void updateButtons();

    QString m_accel;
    std::unique_ptr<launcher::LocalHost> m_host;
    std::unique_ptr<launcher::HostCommand> m_command;
    QStringList m_remoteEnvironment;
    QList<launcher::slurm::SlurmJob> m_jobs;
    QLineEdit *m_hostEdit = nullptr;
    QPushButton *m_refreshButton = nullptr;
    QPushButton *m_cancelButton = nullptr;
    QPushButton *m_followButton = nullptr;
    std::map<QString, std::unique_ptr<Follow>> m_follows; // jobs whose run directory is awaited
    QHash<QString, QString> m_followNotes;
    QLabel *m_state = nullptr;
    QTableWidget *m_table = nullptr;
};

} // namespace accel::app
