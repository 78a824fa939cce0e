// What one Monitor chart shows of a run, without widgets: the chart's specification (ChartSpec),
// the series of a run's MetricStore it picks (a named scalar per rank, the host's series of a
// system key, and for device charts one series per GPU from the host's system samples), where x
// comes from (XMode: steps, wall-clock time, or seconds since the run's first sample), and what is
// read from them: the crosshair's lines at an x and the CSV export of every raw sample.
#pragma once

#include "app/studio/monitor/axisunits.h"
#include "monitor/metricstore.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace accel::app {

// The Monitor's x axis, one choice for the page.
enum class XMode { Step, WallTime, RelativeTime };

struct ChartSpec {
    QString title;
    // The scalars this chart shows, first found wins per rank (e.g. samples_per_s, then it_per_s).
    QStringList names;
    bool withMean = false;   // add the mean over ranks (at steps every rank reported)
    bool smoothable = false; // noisy (loss): the EMA is drawn over the raw curve; never for a schedule (lr)
    AxisUnit unit = AxisUnit::Plain;
    QString valueLabel;                          // y axis label; the unit is added
    monitor::XAxis xAxis = monitor::XAxis::Step; // Time: samples without steps (the system's), never on steps
    // Per-device series of the host's system samples (rank -1), named <devicePrefix><i><deviceSuffix>
    // (gpu0_util_percent): one curve per device i, called deviceLabel with %1 = i ("GPU %1").
    QString devicePrefix = QString();
    QString deviceSuffix = QString();
    QString deviceLabel = QString();
    bool hostSeries = false; // also the host's series of these names (rank -1, "host")
};

// The x a chart really uses: charts of samples without steps count time where steps were chosen.
XMode effectiveXMode(const ChartSpec &spec, XMode chosen);

// One series a chart shows: a rank's scalar, or a device's (device >= 0, rank -1).
struct ShownSeries {
    int rank = -1;
    int device = -1;
    QString who; // "rank 1", "GPU 0", "host"
    QString name;
    const monitor::Series *series = nullptr;
};

// A run as a chart sees it; `label` names it in overlays (several runs) and in the CSV.
struct ChartRun {
    const monitor::MetricStore *store = nullptr;
    QString label;
};

// The series of `store` that `spec` shows, ranks in order, then the host's, then devices in index order.
QList<ShownSeries> shownSeries(const ChartSpec &spec, const monitor::MetricStore &store);
// Relative time counts seconds from the run's first sample of any kind (the same for every chart).
double timeOrigin(const monitor::MetricStore &store);
// The x of sample i of a series in this mode (relative time from `origin`).
double sampleX(const monitor::Series &series, size_t i, XMode mode, double origin);
// "step 40", "12.5 s", "14:03:22": where a sample is, for readouts.
QString formatX(double x, XMode mode);
// One line per run and series: its value at the sample nearest to x (in the chart's x mode), e.g.
// "rank 1: 2.31 (step 40)" or "run-a GPU 0: 97 % (12.5 s)". A run with one series is named by
// its label alone in overlays.
QStringList readoutLines(const ChartSpec &spec, const QList<ChartRun> &runs, double x, XMode mode);
// Every raw sample behind the chart: run,rank,metric,step,time,value (mean/EMA not included).
bool writeSamplesCsv(const ChartSpec &spec, const QList<ChartRun> &runs, const QString &path, QString *error);

} // namespace accel::app
