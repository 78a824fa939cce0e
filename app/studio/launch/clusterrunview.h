// The Launch page's result of a cluster launch: the record `accel hosts stop` takes and one row per
// node (host, machine rank, state, run id, run directory on that host, what accel said).
#pragma once

#include "app/studio/cluster/clusterreports.h"

#include <QWidget>

class QLabel;
class QTableWidget;

namespace accel::app {

class ClusterRunView : public QWidget {
    Q_OBJECT
public:
    explicit ClusterRunView(QWidget *parent = nullptr);
    void showReport(const ClusterLaunchReport &report);
    QTableWidget *table() const { return m_nodes; }

private:
    QLabel *m_record = nullptr;
    QTableWidget *m_nodes = nullptr;
};

} // namespace accel::app
