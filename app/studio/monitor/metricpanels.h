// The Monitor's panels, without widgets: its built-in charts (loss, learning rate, throughput, the
// system's CPU, memory and GPUs; BuiltInChart order), and a panel for every other key a run logs,
// each in a section: the key's prefix before '/' ("train/acc" in "train", as W&B groups them),
// "Charts" for the built-in training charts and keys without a prefix, "System" for what the
// supervisor samples. Keys the built-in charts show (lr and learning_rate, samples_per_s and
// it_per_s, gpu0_util_percent, ...) get no panel of their own; tokens_per_s has one.
#pragma once

#include "app/studio/monitor/chartseries.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace accel::app {

enum BuiltInChart {
    LossChart,
    LrChart,
    ThroughputChart,
    MemoryChart,
    GradNormChart,
    EvalLossChart,
    CpuChart,
    GpuUtilChart,   // per rank (gpu_util_percent when a script logs it) and per GPU of the host
    GpuMemoryChart, // per rank (the launcher's mem_device_bytes) and per GPU of the host
    BuiltInChartCount
};

// The built-in charts' specifications, indexed by BuiltInChart.
const QList<ChartSpec> &builtInCharts();
// A panel's key: a built-in chart's first name ("loss", "samples_per_s"), else the logged key.
QString panelKey(BuiltInChart chart);
// The built-in chart of this panel key, or -1.
int builtInChartOf(const QString &key);
// True when a built-in chart shows this logged key (so it gets no panel of its own).
bool shownByBuiltInChart(const QString &name);
// Keys that are no metric to chart (a process id).
bool isBookkeeping(const QString &name);

// A panel for one logged key: its title is the key; the unit follows its suffix (_bytes, _percent,
// _per_s, _s); counters and schedules (lr, epoch, step) are never smoothed. `systemOnly`: a key
// only the supervisor's system samples have (x in time, the host's series too).
ChartSpec specForKey(const QString &key, bool systemOnly);

QString chartsSection();
QString systemSection();
// The section a panel belongs to.
QString sectionOf(const QString &key, bool systemOnly);
// Sections in the order shown: Charts, then prefixes alphabetically, then System.
bool sectionLessThan(const QString &a, const QString &b);

} // namespace accel::app
