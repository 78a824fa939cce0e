// RunsPage: the studio's "Runs" page. The runs under the runs root (RunsModel, refreshed live)
// on top, newest first; selecting one or several shows them in the MonitorView below, overlaid
// on its charts ("Compare with…" adds a run to the selection, also with the list hidden). At
// start-up the newest run is selected, so a run that is still going is re-attached at once.
// Runs of cluster hosts are rows too (Host column): listed over SSH by a RemoteCatalogue (the
// Cluster tab's hosts and those of the cluster launch records), followed through the same
// monitor pipeline; the live runs of recorded launches are followed again at start-up. A host
// that cannot be listed is named above the list; the page goes on with the others.
// followRemoteRun() (the SLURM queue's "Follow") follows a run on a host once it is listed there;
// a multi-node job's folder of node<K> run directories is one row, its state combined from its
// nodes' (monitor/noderuns.h), and one run in the Monitor.
// "Stop" runs `accel stop RUN` (there, for a remote run) and never blocks the GUI thread.
// The table has a column per hyperparameter (those that differ between the listed runs are shown,
// the others are a right click on the header away), a filter ("lr>1e-4 tag:sweep baseline") and
// sorting by any column; "Diff" compares the selected runs' hyperparameters. Names, tags and notes
// are edited in place; a run's right-click menu also opens its folder, exports it as an archive
// and deletes it with its files (RunActions). The Monitor names runs by their display names.
#pragma once

#include "app/studio/monitor/remotecatalogue.h"
#include "launcher/hostcommand.h"
#include "monitor/runsmodel.h"

#include <QSet>

#include <QPointer>
#include <QWidget>

class QLabel;
class QLineEdit;
class QMenu;
class QPushButton;
class QSplitter;
class QToolButton;
class QTableView;

namespace accel::app {

class MonitorPage;
class RemoteHosts;
class RunActions;
class RunsColumns;
class RunsFilter;

class RunsPage : public QWidget {
    Q_OBJECT
public:
    explicit RunsPage(QWidget *parent = nullptr);
    ~RunsPage() override;

    // Default: launcher::RunDirectory::defaultRunsRoot().
    void setRunsRoot(const QString &root);
    QString runsRoot() const { return m_model.runsRoot(); }
    // The accel program for "Stop" (default: accel beside this program, else accel on PATH).
    void setAccelProgram(const QString &program) { m_accel = program; }
    QString accelProgram() const { return m_accel; }

    // The SSH hosts whose runs are listed beside this machine's (replacing the list; the hosts of
    // cluster launch records stay). Default: the Cluster tab's remembered hosts.
    void setRemoteHosts(const QStringList &destinations);
    // Reads the cluster launch records in `directory` (empty: launcher::clusterRecordsDirectory()):
    // their hosts and run folders are listed, and their runs still live there are followed.
    void reattachClusterRuns(const QString &directory = {});
    // Shows these runs (RunInfo::address()) in the monitor; remote ones once their host listed them.
    void openRuns(const QStringList &addresses);
    // Follows the run at `path` on `destination` alone in the monitor, once that host lists it
    // (its folder is listed from now on). `multiNode`: `path` is a folder of node<K> run
    // directories (a multi-node SLURM job's), which `accel runs` does not list as one run: it gets
    // a row of its own named `name`, whose state is combined from its nodes', and the Monitor
    // follows all its nodes as one run.
    void followRemoteRun(const QString &destination, const QString &path, const QString &name, bool multiNode);
    RemoteCatalogue *remoteCatalogue() const { return m_catalogue; }
    RemoteHosts *remoteHosts() const { return m_remoteHosts; }
    QLabel *remoteHostsState() const { return m_hostsState; }

    monitor::RunsModel *runsModel() { return &m_model; }
    QTableView *runsView() const { return m_view; }
    RunsFilter *runsFilter() const { return m_sorted; }
    QLineEdit *filterEdit() const { return m_filter; }
    RunActions *runActions() const { return m_actions; }
    QPushButton *diffButton() const { return m_diff; }
    // The right-click menu of the selected runs, and of the table's header (its columns).
    QMenu *createRunMenu(QWidget *parent);
    QMenu *createColumnsMenu(QWidget *parent);
    // Columns (RunsColumns): hyperparameters shown when their values differ between the listed
    // runs, unless the header's menu said otherwise (kept in the settings).
    void setColumnShown(int column, bool shown);
    bool isColumnShown(int column) const;
    MonitorPage *monitorPage() const { return m_monitor; }
    QPushButton *stopButton() const { return m_stop; }
    // `accel stack` of the one selected live run (also in the run menu: Capture stacks).
    QPushButton *stacksButton() const { return m_stacks; }
    // Hides or shows the run list (the Monitor then takes the whole page).
    void setRunListVisible(bool visible);
    bool isRunListVisible() const;
    void setRunListHeight(int pixels); // the rest goes to the Monitor

    QStringList selectedRuns() const; // run addresses (a directory here), in view order
    void selectRuns(const QStringList &runDirectories);
    // "Compare with…": the runs not selected (view order), and adding one to the selection.
    QToolButton *compareButton() const { return m_compare; }
    QStringList compareCandidates() const;
    bool compareWith(const QString &runDirectory);
    // Runs `accel stop` for every selected live run; false when none is live.
    bool stopSelected();
    bool isStopping() const { return !m_stopQueue.isEmpty() || m_process; }

Q_SIGNALS:
    void statusMessage(const QString &message);
    void stopFinished(const QString &runDirectory, int exitCode, const QString &output);

private:
    void onSelectionChanged();
    void updateButtons();
    void startNextStop();
    // `accel stack` of one live run, shown in a StackDialog.
    void captureStacks(const QString &run);
    void selectNewestOnce();
    void fillCompareMenu();
    int sourceRowOf(const QString &address) const;
    void onRemoteListed(const QString &destination, QList<monitor::RunInfo> runs);
    bool isStoppable(const QModelIndex &index) const;
    void updateHostsState();
    void updateSources();
    void updateRunNames();

    monitor::RunsModel m_model;
    RunsFilter *m_sorted = nullptr;
    QTableView *m_view = nullptr;
    QLineEdit *m_filter = nullptr;
    RunActions *m_actions = nullptr;
    RunsColumns *m_columns = nullptr;
    QPushButton *m_diff = nullptr;
    QPushButton *m_stop = nullptr;
    QPushButton *m_stacks = nullptr;
    QPushButton *m_refresh = nullptr;
    QPushButton *m_listToggle = nullptr;
    QToolButton *m_compare = nullptr;
    QSplitter *m_splitter = nullptr;
    QLabel *m_rootLabel = nullptr;
    MonitorPage *m_monitor = nullptr;
    QString m_accel;
    QStringList m_stopQueue;
    QPointer<launcher::HostCommand> m_process;
    QLabel *m_hostsState = nullptr;
    RemoteHosts *m_remoteHosts = nullptr;
    RemoteCatalogue *m_catalogue = nullptr;
    QStringList m_hosts;                    // setRemoteHosts()
    QList<CatalogueSource> m_recordSources; // the folders of recorded runs on their hosts
    QSet<QString> m_reattach;               // recorded runs: followed if live once listed
    QStringList m_toOpen;                   // openRuns() of runs not listed yet
    QList<CatalogueSource> m_followSources; // the folders of runs given to followRemoteRun()
    QHash<QString, QString> m_multiNode;    // address of a multi-node run's folder -> its name
    QString m_toFollow;                     // followRemoteRun() of a run not listed yet
    QString m_stopping;
    bool m_autoSelected = false;
};

} // namespace accel::app
