// What one Monitor chart shows of a run, without widgets: the chart's specification (ChartSpec),
// the series of a run's MetricStore it picks (a named scalar per rank, and for device charts one
// series per GPU from the host's system samples), and what is read from them: the crosshair's
// lines at an x and the CSV export of every raw sample.
#pragma once

#include "app/studio/monitor/axisunits.h"
#include "monitor/metricstore.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace accel::app {

struct ChartSpec {
    QString title;
    // The scalars this chart shows, first found wins per rank (e.g. samples_per_s, then tokens_per_s).
    QStringList names;
    bool withMean = false;   // add the mean over ranks (at steps every rank reported)
    bool smoothable = false; // noisy (loss): the EMA is drawn over the raw curve; never for a schedule (lr)
    AxisUnit unit = AxisUnit::Plain;
    QString valueLabel;                          // y axis label; the unit is added
    monitor::XAxis xAxis = monitor::XAxis::Step; // Time: seconds since the run's first sample
    // Per-device series of the host's system samples (rank -1), named <devicePrefix><i><deviceSuffix>
    // (gpu0_util_percent): one curve per device i, called deviceLabel with %1 = i ("GPU %1").
    QString devicePrefix = QString();
    QString deviceSuffix = QString();
    QString deviceLabel = QString();
};

// One series a chart shows: a rank's scalar, or a device's (device >= 0, rank -1).
struct ShownSeries {
    int rank = -1;
    int device = -1;
    QString who; // "rank 1", "GPU 0"
    QString name;
    const monitor::Series *series = nullptr;
};

// A run as a chart sees it; `label` names it in overlays (several runs) and in the CSV.
struct ChartRun {
    const monitor::MetricStore *store = nullptr;
    QString label;
};

// The series of `store` that `spec` shows, ranks in order, then devices in index order.
QList<ShownSeries> shownSeries(const ChartSpec &spec, const monitor::MetricStore &store);
// Time charts count seconds from the earliest sample of the shown series (0 when there is none).
double timeOrigin(const QList<ShownSeries> &shown);
// One line per run and series: its value at the sample nearest to x (a step, or seconds since the
// run's start on a time chart), e.g. "rank 1: 2.31 (step 40)" or "run-a GPU 0: 97 % (12.5 s)".
QStringList readoutLines(const ChartSpec &spec, const QList<ChartRun> &runs, double x);
// Every raw sample behind the chart: run,rank,metric,step,time,value (mean/EMA not included).
bool writeSamplesCsv(const ChartSpec &spec, const QList<ChartRun> &runs, const QString &path, QString *error);

} // namespace accel::app
