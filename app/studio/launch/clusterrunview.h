// The Launch page's result of a cluster launch: the record `accel hosts stop` takes and one row per
// node (host, machine rank, state, run id, run directory on that host, what accel said). While the
// nodes' runs go on, their states are listed from every host (`accel runs --json` over SSH,
// RemoteCatalogue) every few seconds, so the table follows them; once every node's run has ended
// on its own, ended() says so (the page then disables Stop) and the state line names the states.
#pragma once

#include "app/studio/cluster/clusterreports.h"
#include "monitor/runsmodel.h"

#include <QHash>
#include <QWidget>

class QLabel;
class QTableWidget;

namespace accel::app {

class RemoteCatalogue;
class RemoteHosts;

class ClusterRunView : public QWidget {
    Q_OBJECT
public:
    explicit ClusterRunView(QWidget *parent = nullptr);
    ~ClusterRunView() override;

    void showReport(const ClusterLaunchReport &report);
    QTableWidget *table() const { return m_nodes; }
    QLabel *stateLabel() const { return m_state; }
    // Every started node's run has reached a final state (succeeded, failed, stopped, lost).
    bool hasEnded() const { return m_ended; }
    // The started nodes' runs as monitor addresses ("ssh://HOST/run/dir"), machine 0 first.
    QStringList runAddresses() const;
    void setPollInterval(int milliseconds); // default 3000

Q_SIGNALS:
    void ended();   // every started node's run ended on its own (once per launch)
    void changed(); // a report was shown or the runs ended: what the page's buttons depend on

private:
    void onListed(const QString &destination, const QList<accel::monitor::RunInfo> &runs);
    void fillTable();

    QLabel *m_record = nullptr;
    QLabel *m_state = nullptr;
    QTableWidget *m_nodes = nullptr;
    RemoteHosts *m_hosts = nullptr;
    RemoteCatalogue *m_catalogue = nullptr;
    ClusterLaunchReport m_report;
    QHash<QString, QString> m_listedStates; // run address -> the state its host listed
    bool m_ended = false;
};

} // namespace accel::app
