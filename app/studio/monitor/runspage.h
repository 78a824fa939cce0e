// RunsPage: the studio's "Runs" page. The runs under the runs root (RunsModel, refreshed live)
// on top, newest first; selecting one or several shows them in the MonitorView below, overlaid
// on its charts ("Compare with…" adds a run to the selection, also with the list hidden). At
// start-up the newest run is selected, so a run that is still going is re-attached at once.
// "Stop" runs `accel stop RUN` as an AccelCommand and never blocks the GUI thread.
#pragma once

#include "launcher/accelcommand.h"
#include "monitor/runsmodel.h"

#include <QPointer>
#include <QWidget>

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QSplitter;
class QToolButton;
class QTableView;

namespace accel::app {

class MonitorPage;

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

    monitor::RunsModel *runsModel() { return &m_model; }
    QTableView *runsView() const { return m_view; }
    MonitorPage *monitorPage() const { return m_monitor; }
    QPushButton *stopButton() const { return m_stop; }
    // Hides or shows the run list (the Monitor then takes the whole page).
    void setRunListVisible(bool visible);
    bool isRunListVisible() const;

    QStringList selectedRuns() const; // run directories, in view order
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
    void selectNewestOnce();
    void fillCompareMenu();

    monitor::RunsModel m_model;
    QSortFilterProxyModel *m_sorted = nullptr;
    QTableView *m_view = nullptr;
    QPushButton *m_stop = nullptr;
    QPushButton *m_refresh = nullptr;
    QPushButton *m_listToggle = nullptr;
    QToolButton *m_compare = nullptr;
    QSplitter *m_splitter = nullptr;
    QLabel *m_rootLabel = nullptr;
    MonitorPage *m_monitor = nullptr;
    QString m_accel;
    QStringList m_stopQueue;
    QPointer<launcher::AccelCommand> m_process;
    QString m_stopping;
    bool m_autoSelected = false;
};

} // namespace accel::app
