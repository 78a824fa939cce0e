// What `accel bench fp8 --json` reports, as the studio's FP8 comparison reads it: the options that
// build its command line, the progress lines it writes on stderr (accel.bench-fp8.progress) and
// the result on stdout (accel.bench-fp8, version 1). Pure data, no widgets.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QVector>

#include <optional>
#include <utility>
#include <vector>

namespace accel::app {

struct Fp8ComparisonOptions {
    int steps = 500;
    int threads = 1;
    QStringList shapes;     // gpt, gpt-deep, gpt-tiny
    QStringList precisions; // fp32, bf16, fp8-te, fp8-msamp-o1, fp8-msamp-o2, fp8-ao
    QString outputDirectory;
};

// Every shape and precision the benchmark knows, in its order.
QStringList fp8BenchShapes();
QStringList fp8BenchPrecisions();
// `bench fp8 --json --steps N --threads N --shapes ... --only ... --out DIR`.
QStringList fp8BenchArguments(const Fp8ComparisonOptions &options);

struct Fp8Progress {
    QString state; // started, running, finished
    QString shape, precision;
    int run = 0, runs = 0, step = 0, steps = 0;
};
// One stderr line; nullopt for anything that is not a progress line.
std::optional<Fp8Progress> parseFp8Progress(const QByteArray &line);

struct Fp8ComparisonRun {
    QString shape, precision;
    std::vector<std::pair<double, double>> lossAt; // (step, training loss) at 1/5, 1/2 and all steps
    double finalEvalLoss = 0, evalVsBf16Percent = 0, stepTimeS = 0;
    double weightBytes = 0, gradientBytes = 0, optimizerBytes = 0;
    int fp8Layers = 0;
    QVector<double> lossSteps, loss;         // the training loss curve
    QVector<double> evalLossSteps, evalLoss; // the evaluation loss curve
};

struct Fp8Comparison {
    int steps = 0;
    QStringList shapes;
    std::vector<Fp8ComparisonRun> runs;
};
// The result document; nullopt with `error` naming what is wrong (not JSON, another schema or
// version, a missing field).
std::optional<Fp8Comparison> parseFp8Comparison(const QByteArray &json, QString *error);

} // namespace accel::app
