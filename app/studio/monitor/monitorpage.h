// MonitorPage: the Monitor view of one or several runs. Each run is followed by its own
// monitor::RunMonitor (re-attaching to a live run keeps it updating); the panel grid (PanelGrid:
// a chart per logged key, in sections, arranged per project) overlays every selected run, one
// colour per run, the legends naming runs by their display names; the ranks table, logs and events
// show the run chosen in "Details for". Above the charts: x as step, wall time or time since the
// start, the smoothing (0 none .. 0.99 heavy, as in W&B), the Panels menu; the detail run's state,
// progress and ETA with a triage card when it failed (RunStatusPanel); banners for hangs,
// stragglers and failures; the offer to read metrics from printed output for a script that logs
// none (StdoutOffer). While no run has a metric the charts' place says why (starting, failed before
// its first metric, prints only, ...). When the GPU charts have no data but others do, a line says
// that the runs carry no GPU samples. A run on another host (an address "ssh://HOST/dir",
// monitor/runcatalogue.h) is followed by a RemoteRunFollower over that host's SSH
// session into the same pipeline; while its connection is down a line says "Reconnecting to
// HOST…", and it resumes where the stream stopped.
#pragma once

#include "app/studio/monitor/metricpanels.h"
#include "monitor/runmonitor.h"

#include <QHash>
#include <QList>
#include <QMap>
#include <QTimer>
#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSlider;
class QStackedWidget;
class QTableView;
class QTabWidget;
class QToolButton;

namespace accel::app {

class BannerBar;
class EventsTimeline;
class LogView;
class MetricPlot;
class PanelGrid;
class RankMemoryPanel;
class RunStatusPanel;
class RemoteHosts;
class StdoutOffer;

class MonitorPage : public QWidget {
    Q_OBJECT
public:
    using Chart = BuiltInChart;
    static constexpr Chart LossChart = app::LossChart, LrChart = app::LrChart, ThroughputChart = app::ThroughputChart,
                           MemoryChart = app::MemoryChart, GradNormChart = app::GradNormChart,
                           EvalLossChart = app::EvalLossChart, CpuChart = app::CpuChart,
                           GpuUtilChart = app::GpuUtilChart, GpuMemoryChart = app::GpuMemoryChart,
                           ChartCount = app::BuiltInChartCount;

    explicit MonitorPage(QWidget *parent = nullptr);
    ~MonitorPage() override;

    // Where remote runs are reached (RunsPage's; must outlive the page's monitors). Without it a
    // remote address is shown as not followed.
    void setRemoteHosts(RemoteHosts *hosts) { m_remoteHosts = hosts; }
    // Follows these run directories or remote addresses (replacing the current ones; unchanged
    // ones keep their data).
    void setRuns(const QStringList &runDirectories);
    QStringList runs() const;
    // The names legends and "Details for" give runs, by address (RunsPage's display names). A run
    // without one is named by its annotations' display name, else run.json's name (local), or its
    // folder's name on its host. Runs of the same name get their id's last part added.
    void setRunNames(const QHash<QString, QString> &names);
    QStringList runLabels() const;
    monitor::RunMonitor *runMonitor(int index) const { return m_runs.value(index).monitor; }
    int detailRun() const;
    void setDetailRun(int index);

    PanelGrid *panels() const { return m_grid; }
    MetricPlot *chart(Chart chart) const;
    MetricPlot *panel(const QString &key) const;
    // Smoothing of every noisy chart as in W&B and TensorBoard: 0 none .. 0.99 heavy.
    void setSmoothing(double smoothing);
    double smoothing() const;
    void setXMode(XMode mode);
    XMode xMode() const;
    // Reads metrics from a run's printed output (its monitor starts again from the files); the
    // choice is remembered for the runs of the project.
    void setStdoutMetrics(int runIndex, bool enabled);
    bool stdoutMetrics(int runIndex) const { return m_runs.value(runIndex).stdoutMetrics; }
    QString project() const { return m_project; }

    QTableView *ranksView() const { return m_ranksView; }
    LogView *logView() const { return m_logView; }
    EventsTimeline *eventsView() const { return m_eventsView; }
    RankMemoryPanel *memoryPanel() const { return m_memory; } // measured vs predicted bytes per rank
    BannerBar *banners() const { return m_banners; }
    RunStatusPanel *statusPanel() const { return m_status; }
    StdoutOffer *stdoutOffer() const { return m_stdoutOffer; }
    // Why there are no charts (empty while some run has data).
    QString emptyStateText() const;
    // Shown when the runs have samples but none of GPU use (no NVML where they ran).
    QLabel *gpuNote() const { return m_gpuNote; }
    // The remote runs' connection state ("Reconnecting to gpu1… (attempt 2, in 0.5 s): ..."),
    // hidden while every stream flows.
    QLabel *remoteState() const { return m_remoteState; }
    QComboBox *xModeBox() const { return m_xMode; }
    QSlider *smoothingSlider() const { return m_smoothSlider; }
    QToolButton *panelsButton() const { return m_panelsButton; }

    bool exportPng(Chart chart, const QString &path);
    bool exportCsv(Chart chart, const QString &path, QString *error = nullptr);

Q_SIGNALS:
    void statusMessage(const QString &message);

private:
    struct Run {
        QString directory;
        QString label;
        QString project; // run.json's name
        bool stdoutMetrics = false;
        monitor::RunMonitor *monitor = nullptr;
    };
    bool startMonitor(Run &run);
    bool relabel(); // true when a run's name changed
    void rebuildCharts();
    void updateDetails();
    void updateEmptyState();
    void askExport(const QString &key, bool png);
    void fillPanelsMenu();
    monitor::RunMonitor *followRemote(const QString &host, const QString &path, const QString &label);
    void setRemoteLine(const QString &label, const QString &line);
    void updateRedrawInterval();

    QList<Run> m_runs;
    QHash<QString, QString> m_names; // setRunNames()
    QString m_project;
    PanelGrid *m_grid = nullptr;
    QStackedWidget *m_chartsArea = nullptr; // the grid, or why there is none
    QLabel *m_noData = nullptr;
    BannerBar *m_banners = nullptr;
    RunStatusPanel *m_status = nullptr;
    StdoutOffer *m_stdoutOffer = nullptr;
    QLabel *m_empty = nullptr;
    QLabel *m_gpuNote = nullptr;
    QLabel *m_remoteState = nullptr;
    QMap<QString, QString> m_remoteLines; // per remote run label
    RemoteHosts *m_remoteHosts = nullptr;
    QWidget *m_content = nullptr;
    QComboBox *m_detailCombo = nullptr;
    QComboBox *m_xMode = nullptr;
    QSlider *m_smoothSlider = nullptr;
    QDoubleSpinBox *m_smoothValue = nullptr;
    QToolButton *m_panelsButton = nullptr;
    QTableView *m_ranksView = nullptr;
    QMetaObject::Connection m_ranksSizing; // fits the columns when ranks appear
    LogView *m_logView = nullptr;
    EventsTimeline *m_eventsView = nullptr;
    RankMemoryPanel *m_memory = nullptr;
    QTabWidget *m_tabs = nullptr;
    QTimer m_emptyTimer; // the empty state follows the runs' states and logs
};

} // namespace accel::app
