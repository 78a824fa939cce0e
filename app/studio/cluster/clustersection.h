// The Hardware page's Cluster section: a host list (remembered in the studio's settings), "Check
// hosts" running `accel hosts check H1,H2 --json` with one card per host, and "Network pre-flight"
// running `accel hosts doctor H1,H2 --json` with a verdict per check and host. Both run through a
// LocalHost (the studio's own accel, which reaches the hosts over SSH); nothing here speaks SSH.
// An unknown host key opens HostKeyDialog; Accept checks that host again with
// --accept-new-host-key. A changed key opens the refusal, which has no Accept.
#pragma once

#include "app/studio/cluster/clusterreports.h"
#include "app/studio/cluster/hostkeydialog.h"
#include "launcher/host.h"

#include <QPointer>
#include <QStringList>
#include <QWidget>

#include <deque>
#include <memory>

class QLabel;
class QLineEdit;
class QPushButton;
class QVBoxLayout;

namespace accel::app {

class ClusterSection : public QWidget {
    Q_OBJECT
public:
    explicit ClusterSection(QWidget *parent = nullptr);
    ~ClusterSection() override;

    void setAccelProgram(const QString &program); // default: accel beside the studio, else PATH
    void setHosts(const QStringList &hosts);
    QStringList hosts() const;

    // Start the commands; false (with the reason in the section's state line) for a bad host list
    // or while one is running.
    bool checkHosts();
    bool runPreflight();
    // `accel hosts install HOST --json`, then the hosts are checked again.
    bool installOn(const QString &host);
    bool isBusy() const;

    const std::vector<HostCheck> &hostChecks() const { return m_checks; }
    const HostCheck *hostCheck(const QString &host) const;
    // The host key question on screen, if any.
    HostKeyDialog *hostKeyDialog() const { return m_dialog; }
    QPushButton *checkButton() const { return m_checkButton; }
    QPushButton *preflightButton() const { return m_doctorButton; }

Q_SIGNALS:
    void checkFinished();          // cards rebuilt after `accel hosts check` (also after an accepted key)
    void installFinished(bool ok); // `accel hosts install` ended; a check follows when it installed
    void preflightFinished();      // verdicts shown after `accel hosts doctor`
    void statusMessage(const QString &message);

private:
    using Handler = void (ClusterSection::*)(const launcher::AccelOutcome &);
    bool startCommand(const QStringList &arguments, Handler handler, int timeoutMs = 0); // 0: the default limit
    bool startOnHosts(const QString &action, Handler handler); // `accel hosts ACTION H1,H2 --json`
    void onCheckDone(const launcher::AccelOutcome &outcome);
    void onAcceptDone(const launcher::AccelOutcome &outcome);
    void onDoctorDone(const launcher::AccelOutcome &outcome);
    void onInstallDone(const launcher::AccelOutcome &outcome);
    void mergeChecks(const std::vector<HostCheck> &checks);
    void rebuildCards();
    void askAboutKey(const QString &host);
    void askNext();
    void onDialogFinished(int result);
    void setState(const QString &text);
    void updateButtons();

    QString m_accel;
    std::unique_ptr<launcher::LocalHost> m_host;
    std::unique_ptr<launcher::HostCommand> m_command;
    QString m_runningAction; // "hosts check", while m_command runs
    QString m_localVersion;
    std::vector<HostCheck> m_checks;
    std::deque<QString> m_keyQuestions; // hosts whose key is still to be asked about
    QPointer<HostKeyDialog> m_dialog;
    QLineEdit *m_hostsEdit = nullptr;
    QPushButton *m_checkButton = nullptr;
    QPushButton *m_doctorButton = nullptr;
    QLabel *m_state = nullptr;
    QWidget *m_cards = nullptr;
    QVBoxLayout *m_doctorArea = nullptr;
};

} // namespace accel::app
