#include "app/cli/cmd_bench_summary.h"

#include <QJsonObject>

#include <algorithm>
#include <cmath>

namespace accel::cli {

namespace {

// Bytes of weights, gradients and optimizer state as each recipe stores them (the formats; this
// CPU emulation holds FP16 / FP8 values in float32 tensors except MS-AMP O2's moments).
struct Bytes {
    double weights = 0, gradients = 0, optimizer = 0;
};
Bytes storageBytes(const QString &precision, double parameters, double fp8Weights)
{
    const double other = parameters - fp8Weights;
    if (precision == QLatin1String("fp8-msamp-o1"))
        return {2 * fp8Weights + 4 * other, 1 * fp8Weights + 4 * other, 8 * parameters};
    if (precision == QLatin1String("fp8-msamp-o2"))
        return {2 * fp8Weights + 4 * other, 1 * fp8Weights + 4 * other, 3 * parameters};
    return {4 * parameters, 4 * parameters, 8 * parameters};
}

double lossAt(const BenchRun &run, double step)
{
    for (const auto &[s, loss] : run.loss) {
        if (s >= step)
            return loss;
    }
    return NAN;
}

QString number(double value, int decimals)
{
    return std::isnan(value) ? QStringLiteral("-") : QString::number(value, 'f', decimals);
}

double mean(const std::vector<double> &values)
{
    double sum = 0;
    for (double v : values)
        sum += v;
    return values.empty() ? double(NAN) : sum / double(values.size());
}

// The standard error of the mean: the sample standard deviation over the square root of the
// count (undefined for one value).
double standardError(const std::vector<double> &values)
{
    if (values.size() < 2)
        return NAN;
    const double m = mean(values);
    double squares = 0;
    for (double v : values)
        squares += (v - m) * (v - m);
    return std::sqrt(squares / double(values.size() - 1) / double(values.size()));
}

} // namespace

BenchSummary summariseBench(const std::vector<BenchRun> &runs, int steps, int seeds, int firstSeed)
{
    const std::vector<double> at = {double(steps) / 5, double(steps) / 2, double(steps)};
    auto finalEval = [](const BenchRun &run) { return run.evalLoss.empty() ? NAN : run.evalLoss.back().second; };
    // bf16's final evaluation loss of the same shape and seed.
    auto bf16Eval = [&](const BenchRun &run) {
        for (const BenchRun &other : runs) {
            if (other.shape == run.shape && other.seed == run.seed && other.precision == QLatin1String("bf16"))
                return finalEval(other);
        }
        return double(NAN);
    };
    BenchSummary summary;
    summary.table = QStringLiteral("%1 %2 %3 %4 %5 %6 %7 %8 %9 %10 %11")
                        .arg(QStringLiteral("shape"), -9)
                        .arg(QStringLiteral("precision"), -13)
                        .arg(QStringLiteral("loss@%1").arg(at[0]), 9)
                        .arg(QStringLiteral("loss@%1").arg(at[1]), 9)
                        .arg(QStringLiteral("loss@%1").arg(at[2]), 9)
                        .arg(QStringLiteral("eval"), 7)
                        .arg(QStringLiteral("vs bf16"), 8)
                        .arg(QStringLiteral("ms/step"), 8)
                        .arg(QStringLiteral("weights"), 8)
                        .arg(QStringLiteral("grads"), 8)
                        .arg(QStringLiteral("optim"), 8);
    summary.table +=
        seeds > 1 ? QStringLiteral(" %1  vs bf16 per seed\n").arg(QStringLiteral("se"), 6) : QStringLiteral("\n");
    for (const BenchRun &run : runs) {
        if (run.seed != firstSeed)
            continue;
        summary.firstSeeds.push_back(run);
        std::vector<double> evals, differences, stepTimes;
        std::vector<std::vector<double>> lossAtSteps(at.size());
        QJsonArray seedList, evalList, differenceList;
        for (const BenchRun &same : runs) {
            if (same.shape != run.shape || same.precision != run.precision)
                continue;
            const double eval = finalEval(same);
            const double difference = (eval - bf16Eval(same)) / bf16Eval(same) * 100;
            evals.push_back(eval);
            differences.push_back(difference);
            stepTimes.push_back(same.stepTimeS);
            for (size_t i = 0; i < at.size(); ++i)
                lossAtSteps[i].push_back(lossAt(same, at[i]));
            seedList.append(same.seed);
            evalList.append(eval);
            differenceList.append(difference);
        }
        std::sort(stepTimes.begin(), stepTimes.end());
        const double eval = mean(evals);
        const double difference = mean(differences);
        const double differenceError = standardError(differences);
        const double stepTime = stepTimes[stepTimes.size() / 2];
        const Bytes bytes = storageBytes(run.precision, run.parameters, run.fp8Weights);
        auto kib = [](double b) { return QStringLiteral("%1K").arg(b / 1024, 0, 'f', 0); };
        auto percent = [](double value) {
            return std::isnan(value) ? QStringLiteral("-") : QString::asprintf("%+.2f%%", value);
        };
        summary.table += QStringLiteral("%1 %2 %3 %4 %5 %6 %7 %8 %9 %10 %11")
                             .arg(run.shape, -9)
                             .arg(run.precision, -13)
                             .arg(number(mean(lossAtSteps[0]), 4), 9)
                             .arg(number(mean(lossAtSteps[1]), 4), 9)
                             .arg(number(mean(lossAtSteps[2]), 4), 9)
                             .arg(number(eval, 4), 7)
                             .arg(percent(difference), 8)
                             .arg(number(stepTime * 1000, 1), 8)
                             .arg(kib(bytes.weights), 8)
                             .arg(kib(bytes.gradients), 8)
                             .arg(kib(bytes.optimizer), 8);
        if (seeds > 1) {
            summary.table += QStringLiteral(" %1").arg(number(differenceError, 2), 6);
            QStringList perSeed;
            for (double value : differences)
                perSeed << percent(value);
            summary.table += QStringLiteral("  ") + perSeed.join(QLatin1Char(' '));
        }
        summary.table += QLatin1Char('\n');
        QJsonArray curve, evalCurve, lossAtJson;
        for (const auto &[step, loss] : run.loss)
            curve.append(QJsonArray{step, loss});
        for (const auto &[step, loss] : run.evalLoss)
            evalCurve.append(QJsonArray{step, loss});
        for (size_t i = 0; i < at.size(); ++i)
            lossAtJson.append(QJsonArray{at[i], mean(lossAtSteps[i])});
        summary.runs.append(QJsonObject{{QStringLiteral("shape"), run.shape},
                                        {QStringLiteral("precision"), run.precision},
                                        {QStringLiteral("parameters"), run.parameters},
                                        {QStringLiteral("fp8_weights"), run.fp8Weights},
                                        {QStringLiteral("fp8_linear_layers"), run.convertedLayers},
                                        {QStringLiteral("eval_loss"), eval},
                                        {QStringLiteral("eval_loss_vs_bf16_percent"), difference},
                                        {QStringLiteral("eval_loss_vs_bf16_percent_se"),
                                         std::isnan(differenceError) ? QJsonValue() : QJsonValue(differenceError)},
                                        {QStringLiteral("step_time_s"), stepTime},
                                        {QStringLiteral("weight_bytes"), bytes.weights},
                                        {QStringLiteral("gradient_bytes"), bytes.gradients},
                                        {QStringLiteral("optimizer_state_bytes"), bytes.optimizer},
                                        {QStringLiteral("loss_at"), lossAtJson},
                                        {QStringLiteral("seeds"), seedList},
                                        {QStringLiteral("eval_loss_per_seed"), evalList},
                                        {QStringLiteral("eval_loss_vs_bf16_percent_per_seed"), differenceList},
                                        {QStringLiteral("eval_loss_curve"), evalCurve},
                                        {QStringLiteral("loss"), curve}});
    }
    return summary;
}

} // namespace accel::cli
