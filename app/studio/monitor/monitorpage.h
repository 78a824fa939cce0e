// MonitorPage: the Monitor view of one or several runs. Each run is followed by its own
// monitor::RunMonitor (re-attaching to a live run keeps it updating); the charts overlay every
// selected run (one colour per run), while the ranks table, logs and events show the run chosen
// in "Details for". Above the charts: the detail run's state, progress and ETA, a triage card
// when it failed (RunStatusPanel), and banners for hangs, stragglers and failures. Charts with
// no data are hidden (the rest take their room) once any chart has data; when the GPU charts are
// hidden so, a line says that the runs carry no GPU samples. A run on another host (an address
// "ssh://HOST/dir", monitor/runcatalogue.h) is followed by a launcher::RemoteRunFollower over that
// host's SSH session into the same pipeline; while its connection is down a line says
// "Reconnecting to HOST…", and it resumes where the stream stopped.
#pragma once

#include "monitor/runmonitor.h"

#include <QList>
#include <QMap>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QTableView;
class QTabWidget;

namespace accel::app {

class BannerBar;
class EventsTimeline;
class LogView;
class MetricPlot;
class RankMemoryPanel;
class RunStatusPanel;
class RemoteHosts;

class MonitorPage : public QWidget {
    Q_OBJECT
public:
    enum Chart {
        LossChart,
        LrChart,
        ThroughputChart,
        MemoryChart,
        GradNormChart,
        EvalLossChart,
        CpuChart,
        GpuUtilChart,   // per rank (gpu_util_percent when a script logs it) and per GPU of the host
        GpuMemoryChart, // per rank (the launcher's mem_device_bytes) and per GPU of the host
        ChartCount
    };

    explicit MonitorPage(QWidget *parent = nullptr);
    ~MonitorPage() override;

    // Where remote runs are reached (RunsPage's; must outlive the page's monitors). Without it a
    // remote address is shown as not followed.
    void setRemoteHosts(RemoteHosts *hosts) { m_remoteHosts = hosts; }
    // Follows these run directories or remote addresses (replacing the current ones; unchanged
    // ones keep their data).
    void setRuns(const QStringList &runDirectories);
    QStringList runs() const;
    monitor::RunMonitor *runMonitor(int index) const { return m_runs.value(index).monitor; }
    int detailRun() const;
    void setDetailRun(int index);

    MetricPlot *chart(Chart chart) const { return m_charts.value(chart); }
    void setSmoothing(double weight); // EMA weight for the noisy charts (loss, grad norm, throughput), 0 = off
    QTableView *ranksView() const { return m_ranksView; }
    LogView *logView() const { return m_logView; }
    EventsTimeline *eventsView() const { return m_eventsView; }
    RankMemoryPanel *memoryPanel() const { return m_memory; } // measured vs predicted bytes per rank
    BannerBar *banners() const { return m_banners; }
    RunStatusPanel *statusPanel() const { return m_status; }
    // Shown when the runs have samples but none of GPU use (no NVML where they ran).
    QLabel *gpuNote() const { return m_gpuNote; }
    // The remote runs' connection state ("Reconnecting to gpu1… (attempt 2, in 0.5 s): ..."),
    // hidden while every stream flows.
    QLabel *remoteState() const { return m_remoteState; }

    bool exportPng(Chart chart, const QString &path);
    bool exportCsv(Chart chart, const QString &path, QString *error = nullptr);

Q_SIGNALS:
    void statusMessage(const QString &message);

private:
    struct Run {
        QString directory;
        QString label;
        monitor::RunMonitor *monitor = nullptr;
    };
    void rebuildCharts();
    void updateDetails();
    void layoutCharts();
    void askExport(bool png);
    monitor::RunMonitor *followRemote(const QString &host, const QString &path, const QString &label);
    void setRemoteLine(const QString &label, const QString &line);
    void updateRedrawInterval();

    QList<Run> m_runs;
    QList<MetricPlot *> m_charts;
    BannerBar *m_banners = nullptr;
    RunStatusPanel *m_status = nullptr;
    QGridLayout *m_grid = nullptr;
    QLabel *m_empty = nullptr;
    QLabel *m_gpuNote = nullptr;
    QLabel *m_remoteState = nullptr;
    QMap<QString, QString> m_remoteLines; // per remote run label
    RemoteHosts *m_remoteHosts = nullptr;
    QWidget *m_content = nullptr;
    QComboBox *m_detailCombo = nullptr;
    QCheckBox *m_smoothBox = nullptr;
    QDoubleSpinBox *m_smoothWeight = nullptr;
    QComboBox *m_exportChart = nullptr;
    QTableView *m_ranksView = nullptr;
    QMetaObject::Connection m_ranksSizing; // fits the columns when ranks appear
    LogView *m_logView = nullptr;
    EventsTimeline *m_eventsView = nullptr;
    RankMemoryPanel *m_memory = nullptr;
    QTabWidget *m_tabs = nullptr;
};

} // namespace accel::app
