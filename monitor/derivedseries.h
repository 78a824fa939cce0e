// Series computed from a store: rates of cumulative counters, sums over ranks, and scaling
// efficiency of a run against a baseline run.
#pragma once

#include "monitor/metricstore.h"

#include <optional>

namespace accel::monitor {

double median(std::vector<double> values); // NaN for an empty input; NaN entries are ignored

// Per-second rate of a cumulative counter (e.g. "samples" -> samples/s) between consecutive points.
Series rateOf(const Series &counter);

// A rank's throughput: the logged series `name` (e.g. "samples_per_s", "tokens_per_s") when present,
// else the rate of the matching counter ("samples", "tokens"), else empty.
Series throughput(const MetricStore &store, int rank, const QString &name);

// Sum of `name` over all ranks >= 0 at every step that every such rank reported (the global
// throughput when name is a per-rank rate).
Series globalSum(const MetricStore &store, const QString &name);

struct ScalingEfficiency {
    double runThroughput = 0; // median global throughput after warm-up
    double baselineThroughput = 0;
    int runWorldSize = 0;
    int baselineWorldSize = 0;
    // (run / baseline throughput) / (run / baseline world size): 1.0 is perfect linear scaling.
    double efficiency = 0;
};

// Compares the global `name` throughput of two runs, skipping the first `warmupFraction` of steps.
std::optional<ScalingEfficiency> scalingEfficiency(const MetricStore &run, const MetricStore &baseline,
                                                   const QString &name = QStringLiteral("samples_per_s"),
                                                   double warmupFraction = 0.2);

} // namespace accel::monitor
