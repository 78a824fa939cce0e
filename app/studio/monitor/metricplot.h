// MetricPlot: one chart of the Monitor view (loss, lr, throughput, memory, grad norm) over the
// MetricStores of one or several runs. Store signals only schedule a redraw; a ~30 Hz coalescing
// timer rebuilds the graphs, each series decimated to the plot's pixel width, so a run with
// millions of samples costs the same per frame as a short one.
#pragma once

#include "monitor/metricstore.h"

#include <QColor>
#include <QList>
#include <QPointer>
#include <QStringList>
#include <QTimer>
#include <QWidget>

class QCustomPlot;

namespace accel::app {

class MetricPlot : public QWidget {
    Q_OBJECT
public:
    // `names`: the scalars this chart shows, first found wins per rank (e.g. samples_per_s, then
    // tokens_per_s). `withMean`: add the mean over ranks (at steps every rank reported).
    MetricPlot(const QString &title, const QStringList &names, bool withMean, QWidget *parent = nullptr);
    ~MetricPlot() override;

    // One curve set per run; the colour is the run's in overlays (ranks of a single run get their own).
    void addStore(const monitor::MetricStore *store, const QString &runLabel, const QColor &color);
    void clearStores();
    int storeCount() const { return m_stores.size(); }

    // Exponential moving average weight of the newest sample, 0 (off, default) .. 1 exclusive.
    void setSmoothing(double weight);
    double smoothing() const { return m_smoothing; }
    void setRedrawInterval(int milliseconds); // default 33 (~30 Hz)

    void scheduleReplot(); // coalesced: at most one redraw per interval
    void replotNow();

    QCustomPlot *plot() const { return m_plot; }
    QString title() const { return m_title; }
    QStringList names() const { return m_names; }
    int replotCount() const { return m_replots; }
    // Points currently drawn over all graphs, and the raw samples behind them.
    qint64 drawnPoints() const;
    qint64 rawPoints() const { return m_rawPoints; }

    bool savePng(const QString &path, int width = 0, int height = 0);
    // Every raw sample behind the chart: run,rank,metric,step,time,value (mean/EMA not included).
    bool saveCsv(const QString &path, QString *error = nullptr) const;

private:
    struct Source {
        QPointer<const monitor::MetricStore> store;
        QString label;
        QColor color;
    };
    QString nameFor(const monitor::MetricStore &store, int rank) const;
    void rebuild();

    QString m_title;
    QStringList m_names;
    bool m_withMean = false;
    double m_smoothing = 0;
    QList<Source> m_stores;
    QList<QMetaObject::Connection> m_connections;
    QCustomPlot *m_plot = nullptr;
    QTimer m_timer;
    int m_replots = 0;
    qint64 m_rawPoints = 0;
};

} // namespace accel::app
