// The multi-node cluster form: one description of the whole cluster (a host table, processes per
// host, the main host, the port) over a base config, linted live (core/config/clusterplan.h);
// Write saves every node's config as node-<rank>.yaml in the chosen folder, and only when the
// lint has no errors.
#pragma once

#include "core/common/result.h"
#include "core/config/clusterconfig.h"
#include "core/config/clusterplan.h"

#include <QDialog>

#include <string>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace accel::app {

class ClusterForm : public QDialog {
    Q_OBJECT
public:
    // `base` carries the training settings every node shares (distributed type, precision, ...).
    explicit ClusterForm(const config::ClusterConfig &base, QWidget *parent = nullptr);

    // What the lint knows about this machine (probed at construction; tests describe one).
    void setLocalMachine(config::LocalMachine local);
    // Replaces the host table (one row per host, the devices column left empty).
    void setHosts(const QStringList &hosts);
    void setProcessesPerHost(int processes);
    void setPort(int port);
    void setOutputFolder(const QString &folder);

    QTableWidget *hostTable() const { return m_hosts; }
    QComboBox *mainHostBox() const { return m_mainHost; }
    QSpinBox *processesBox() const { return m_processes; }
    QSpinBox *portBox() const { return m_port; }
    QPushButton *writeButton() const { return m_write; }
    // The plan for what the form shows now, and its messages as shown.
    const config::ClusterPlan &plan() const { return m_plan; }
    QStringList messages() const;

    // Writes node-<rank>.yaml into the output folder; refuses while the lint has errors.
    Result<std::vector<std::string>> write();

Q_SIGNALS:
    void written(const QStringList &paths);

private:
    void addHostRow(const QString &name);
    void removeSelectedHosts();
    void hostsEdited();
    void relint();
    void chooseFolder();
    config::ClusterPlanInput input() const;

    config::ClusterConfig m_base;
    config::LocalMachine m_local;
    config::ClusterPlan m_plan;
    QTableWidget *m_hosts = nullptr;
    QSpinBox *m_processes = nullptr;
    QComboBox *m_mainHost = nullptr;
    QSpinBox *m_port = nullptr;
    QLineEdit *m_folder = nullptr;
    QListWidget *m_messages = nullptr;
    QLabel *m_summary = nullptr;
    QPushButton *m_write = nullptr;
    bool m_updating = false;
};

} // namespace accel::app
