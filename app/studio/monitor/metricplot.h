// MetricPlot: one chart of the Monitor view (loss, lr, throughput, memory, CPU, ...) over the
// MetricStores of one or several runs. Store signals only schedule a redraw; a ~30 Hz coalescing
// timer rebuilds the graphs, each series decimated to the plot's pixel width, so a run with
// millions of samples costs the same per frame as a short one. Axes carry units (bytes in
// KiB/MiB/GiB); the legend sits below the plot so it never covers data; noisy series draw their
// moving average over the faint raw curve; a crosshair reads every rank's value at the pointer;
// wheel and drag zoom and pan, a double-click goes back to following the data.
#pragma once

#include "app/studio/monitor/chartseries.h"
#include "monitor/metricstore.h"

#include <QColor>
#include <QList>
#include <QPointer>
#include <QStringList>
#include <QTimer>
#include <QWidget>

class QCustomPlot;
class QCPItemStraightLine;
class QCPTextElement;

namespace accel::app {

class MetricPlot : public QWidget {
    Q_OBJECT
public:
    explicit MetricPlot(const ChartSpec &spec, QWidget *parent = nullptr);
    MetricPlot(const QString &title, const QStringList &names, bool withMean, QWidget *parent = nullptr);
    ~MetricPlot() override;

    // One curve set per run; the colour is the run's in overlays (ranks of a single run get their own).
    void addStore(const monitor::MetricStore *store, const QString &runLabel, const QColor &color);
    void clearStores();
    int storeCount() const { return m_stores.size(); }
    bool hasData() const { return m_rawPoints > 0; }

    // Exponential moving average weight of the newest sample, 0 (off, default) .. 1 exclusive.
    // Applies only to smoothable charts; the raw curve stays visible (fainter) under the average.
    void setSmoothing(double weight);
    double smoothing() const { return m_smoothing; }
    bool isSmoothed() const { return m_smoothing > 0 && m_spec.smoothable; }
    void setRedrawInterval(int milliseconds); // default 33 (~30 Hz)

    void scheduleReplot(); // coalesced: at most one redraw per interval
    void replotNow();

    // Zoom and pan stop the axes from following new data until resetView() (or a double-click).
    bool isFollowingData() const { return m_following; }
    void resetView();

    // One line per run and series (rank or GPU): its value at the sample nearest to x (a step, or
    // seconds since the run's start on a time chart), e.g. "rank 1: 2.31 (step 40)". The crosshair
    // shows these.
    QStringList readout(double x) const;
    // Moves the crosshair to x as the pointer does; returns the text shown (empty off the data).
    QString showCrosshair(double x);
    QString crosshairText() const { return m_crosshairText; }

    QCustomPlot *plot() const { return m_plot; }
    const ChartSpec &spec() const { return m_spec; }
    QString title() const { return m_spec.title; }
    // The title as drawn (with the note that replaces a legend of more than kMaxLegendEntries).
    QString shownTitle() const;
    // More curves than this get no legend entries (16 rows of names would take the chart's room and
    // most of its redraw time); the title says how many there are, the crosshair reads each.
    static constexpr int kMaxLegendEntries = 16;
    QStringList names() const { return m_spec.names; }
    int replotCount() const { return m_replots; }
    // Points currently drawn over all graphs, and the raw samples behind them.
    qint64 drawnPoints() const;
    qint64 rawPoints() const { return m_rawPoints; }

    bool savePng(const QString &path, int width = 0, int height = 0);
    // Every raw sample behind the chart: run,rank,metric,step,time,value (mean/EMA not included).
    bool saveCsv(const QString &path, QString *error = nullptr) const;

Q_SIGNALS:
    void dataPresenceChanged(bool hasData);

protected:
    void changeEvent(QEvent *event) override;

private:
    struct Source {
        QPointer<const monitor::MetricStore> store;
        QString label;
        QColor color;
    };
    QList<ChartRun> chartRuns() const; // the stores still alive, with their labels
    void rebuild();
    void applyPalette();
    void fitTickCount();
    void onMouseMove(QMouseEvent *event);

    ChartSpec m_spec;
    double m_smoothing = 0;
    bool m_following = true;
    int m_tickLabelLine = 1; // height of a value tick label, for fitTickCount()
    QList<Source> m_stores;
    QList<QMetaObject::Connection> m_connections;
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_titleElement = nullptr; // the title; says "hover for values" instead of a long legend
    QCPItemStraightLine *m_crosshair = nullptr;
    QString m_crosshairText;
    QTimer m_timer;
    int m_replots = 0;
    qint64 m_rawPoints = 0;
};

} // namespace accel::app
