// What `accel bench fp8` makes of its runs: per shape and precision the means over the seeds, the
// difference from bf16 of the same seed with its standard error, the bytes as each recipe stores
// them, and from those the printed table and the JSON result's runs (docs/fp8.md).
#pragma once

#include "app/cli/cmd_bench_plot.h"

#include <QJsonArray>
#include <QString>

#include <vector>

namespace accel::cli {

struct BenchSummary {
    QString table;                    // the printed table, header first
    QJsonArray runs;                  // the JSON result's "runs", one per shape and precision
    std::vector<BenchRun> firstSeeds; // each shape and precision's run of the first seed: the curves drawn
};

// `runs` as trained (every shape, precision and seed; bf16 among them for the differences),
// `seeds` of them per shape and precision, the first being `firstSeed`.
BenchSummary summariseBench(const std::vector<BenchRun> &runs, int steps, int seeds, int firstSeed);

} // namespace accel::cli
