// The loss curves of `accel bench fp8` as one PNG: a panel per model shape, a curve per precision.
#pragma once

#include <QString>

#include <utility>
#include <vector>

namespace accel::cli {

struct BenchRun {
    QString shape, precision;
    std::vector<std::pair<double, double>> loss, evalLoss; // (step, value)
    double stepTimeS = 0;
    double parameters = 0, fp8Weights = 0;
    int convertedLayers = 0;
    int seed = 0; // the job's seed (weights and data order)
};

// Draws with QPainter on a QImage (an offscreen QGuiApplication is created when none exists).
bool writeLossCurves(const std::vector<BenchRun> &runs, const QString &path, QString *error);

} // namespace accel::cli
