// Where the Launch page runs: this machine, or cluster hosts over SSH (machine 0 first, the list
// shared with the Hardware page's Cluster tab) with KEY=VALUE settings for accel on every host.
// For hosts it gives the `accel launch` options that route the launch there.
#pragma once

#include "core/common/result.h"
#include "core/config/clusterconfig.h"

#include <QStringList>
#include <QWidget>

class QComboBox;
class QLineEdit;

namespace accel::app {

class LaunchTarget : public QWidget {
    Q_OBJECT
public:
    explicit LaunchTarget(QWidget *parent = nullptr);

    void setRunOnHosts(bool onHosts);
    bool runsOnHosts() const;
    void setHosts(const QStringList &hosts); // also chooses the hosts
    Result<QStringList> hosts() const;
    void setHostEnvironment(const QString &text);

    // `--hosts H1,H2 --json`, the config's main address and port (they apply to the pre-flight
    // and every node), `--remote_env PYTHON_EXEC=...` for another interpreter, and one
    // `--remote_env` per KEY=VALUE of the environment field. Errors name the field.
    Result<QStringList> hostArguments(const config::ClusterConfig &config, const QString &interpreter) const;

Q_SIGNALS:
    void changed();

protected:
    // Takes up the list the Hardware page checked last, unless the field was edited here.
    void showEvent(QShowEvent *event) override;

private:
    QComboBox *m_target = nullptr;
    QLineEdit *m_hosts = nullptr;
    QLineEdit *m_environment = nullptr;
    QString m_remembered; // the remembered list as last put into the field
};

} // namespace accel::app
