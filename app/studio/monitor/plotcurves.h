// The curves a MetricPlot draws, built from the series of its runs: one per rank, the mean over
// ranks, and for smoothed charts the moving averages drawn over their (faint) raw curves. Pure
// data, no widgets, so the rules (what is smoothed, which curve is in the legend) live in one place.
#pragma once

#include "app/studio/monitor/chartseries.h"
#include "monitor/series.h"

#include <QColor>
#include <QList>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

namespace accel::app {

struct Curve {
    QString name;
    QColor color;
    double width = 1;
    const double *x = nullptr;
    const double *y = nullptr;
    size_t count = 0;
    bool sorted = true;
    bool faint = false;  // a raw curve under its moving average (not in the legend)
    bool dashed = false; // a device's curve (GPU i) beside the ranks'
};

struct RunCurves {
    QString label;         // empty for a single run
    QColor color;          // the run's colour in overlays
    double timeOrigin = 0; // relative time: seconds are counted from here
    struct Rank {
        int rank;
        const monitor::Series *series;
        QString who;     // "rank 1", "GPU 0"; empty: "rank <rank>"
        int device = -1; // >= 0: a device's series (not part of the mean over ranks)
    };
    QList<Rank> ranks;
};

struct CurveOptions {
    XMode x = XMode::Step;
    bool withMean = false;
    double smoothing = 0;      // as in W&B and TensorBoard: 0 none .. 0.99 heavy (smoothed())
    bool positiveOnly = false; // a log axis: values <= 0 become gaps
    QColor meanColor;
};

class CurveSet {
public:
    // With smoothing every raw curve is kept (faint) and its average is added after all raw
    // curves, so graph i stays raw curve i. A run of one series is named by its label alone.
    void addRun(const RunCurves &run, const CurveOptions &options);
    QList<Curve> curves() const { return m_raw + m_smoothed; }
    // The finite x range over every curve; false when there is none.
    bool xRange(double &xMin, double &xMax) const;

private:
    const double *keep(std::vector<double> values);

    QList<Curve> m_raw;
    QList<Curve> m_smoothed;
    std::vector<std::unique_ptr<std::vector<double>>> m_buffers; // outlive the curves pointing in
};

QColor rankColor(int rank);
// Debiased EMA over the raw values as W&B and TensorBoard draw it: `smoothing` is the weight of
// the average so far (0 = the raw values, 0.99 = very smooth), each new value gets 1 - smoothing.
// NaN samples leave the average unchanged and stay NaN.
std::vector<double> smoothed(const std::vector<double> &values, double smoothing);
// Index of the sample whose x (step or time) is nearest to `x`; none for an empty series.
std::optional<size_t> nearestSample(const monitor::Series &series, monitor::XAxis axis, double x);

} // namespace accel::app
