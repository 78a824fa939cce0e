// MetricPlot: one chart (panel) of the Monitor view over the MetricStores of one or several runs.
// Store signals only schedule a redraw; a ~30 Hz coalescing timer rebuilds the graphs, each series
// decimated to the plot's pixel width, so a run with millions of samples costs the same per frame
// as a short one. Axes carry units (bytes in KiB/MiB/GiB), x is steps, wall time or seconds since
// the run's start, y linear or logarithmic. The legend sits below the plot (a click hides a curve,
// hovering one highlights it); noisy series draw their moving average over the faint raw curve; a
// series of one point is drawn as a marker. The hover readout is drawn in the plot next to the
// pointer and follows it; hovered() lets the page move every other panel's crosshair along
// (showSyncedCrosshair). Wheel and drag zoom and pan, a double-click goes back to following the
// data. Without data the plot says why (setEmptyText) on clean axes.
#pragma once

#include "app/studio/monitor/chartseries.h"
#include "monitor/metricstore.h"

#include <QColor>
#include <QList>
#include <QPointer>
#include <QSet>
#include <QStringList>
#include <QTimer>
#include <QWidget>

class QCustomPlot;
class QCPAbstractLegendItem;
class QCPItemStraightLine;
class QCPItemText;
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

    // Smoothing as in W&B and TensorBoard: 0 (off, default) .. 0.99 (heavy). Applies only to
    // smoothable charts; the raw curve stays visible (fainter) under the average.
    void setSmoothing(double smoothing);
    double smoothing() const { return m_smoothing; }
    bool isSmoothed() const { return m_smoothing > 0 && m_spec.smoothable; }
    void setXMode(XMode mode);
    XMode xMode() const { return effectiveXMode(m_spec, m_xMode); } // what the axis shows
    void setLogScale(bool logarithmic);                             // y axis; values <= 0 are not drawn
    bool isLogScale() const { return m_logScale; }
    // Shown in the plot (on clean axes) while it has no data.
    void setEmptyText(const QString &text);
    QString emptyText() const { return m_emptyText; }
    void setRedrawInterval(int milliseconds); // default 33 (~30 Hz)

    void scheduleReplot(); // coalesced: at most one redraw per interval
    void replotNow();

    // Zoom and pan stop the axes from following new data until resetView() (or a double-click).
    bool isFollowingData() const { return m_following; }
    void resetView();

    // One line per run and series: its value at the sample nearest to x (x in xMode()), e.g.
    // "rank 1: 2.31 (step 40)". The crosshair shows these.
    QStringList readout(double x) const;
    // Moves the crosshair to x and shows the readout box (beside `pointer` when given, in plot
    // pixels, else in the top left corner); returns its text (title and lines; empty off the data).
    QString showCrosshair(double x, QPoint pointer = QPoint(-1, -1));
    // Another panel is hovered at x: this one's crosshair and readout go there too.
    QString showSyncedCrosshair(double x) { return showCrosshair(x); }
    void hideCrosshair();
    QString crosshairText() const { return m_crosshairText; }
    bool isCrosshairShown() const;

    // Legend: a curve (by its name) hidden by a click, or highlighted while the pointer is on it.
    void setCurveHidden(const QString &name, bool hidden);
    QSet<QString> hiddenCurves() const { return m_hiddenCurves; }
    void setHighlightedCurve(const QString &name); // empty: none
    QString highlightedCurve() const { return m_highlighted; }
    QStringList curveNames() const; // the legend's entries, in order

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
    void hovered(double x);                   // the pointer is over the plot at x (in xMode())
    void hoverLeft();                         // the pointer left the plot
    void menuRequested(const QPoint &global); // a right click: the page offers what can be done

protected:
    void changeEvent(QEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    struct Source {
        QPointer<const monitor::MetricStore> store;
        QString label;
        QColor color;
    };
    QList<ChartRun> chartRuns() const; // the stores still alive, with their labels
    void rebuild();
    void applyAxes();
    void applyPens();
    void applyPalette();
    void fitTickCount();
    void onMouseMove(QMouseEvent *event);
    void onLegendClick(QCPAbstractLegendItem *item);
    QString legendNameAt(const QPoint &position) const;
    void placeReadout(QPoint pointer);

    static constexpr int kRawAlphaUnderAverage = 70; // a raw curve's alpha under its moving average

    ChartSpec m_spec;
    double m_smoothing = 0;
    XMode m_xMode = XMode::Step;
    XMode m_axesMode = XMode::Step; // the mode the x axis was last set up for
    bool m_logScale = false;
    bool m_following = true;
    int m_tickLabelLine = 1; // height of a value tick label, for fitTickCount()
    QString m_emptyText;
    QSet<QString> m_hiddenCurves;
    QString m_highlighted;
    QList<Source> m_stores;
    QList<QMetaObject::Connection> m_connections;
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_titleElement = nullptr; // the title; says "hover for values" instead of a long legend
    QCPItemStraightLine *m_crosshair = nullptr;
    QCPItemText *m_readout = nullptr;    // the values at the crosshair
    QCPItemText *m_emptyLabel = nullptr; // emptyText() while there is no data
    QString m_crosshairText;
    QTimer m_timer;
    int m_replots = 0;
    qint64 m_rawPoints = 0;
};

} // namespace accel::app
