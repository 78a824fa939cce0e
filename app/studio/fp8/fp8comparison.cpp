#include "app/studio/fp8/fp8comparison.h"

#include "launcher/jsonoutput.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace accel::app {

QStringList fp8BenchShapes()
{
    return {QStringLiteral("gpt"), QStringLiteral("gpt-deep"), QStringLiteral("gpt-tiny")};
}

QStringList fp8BenchPrecisions()
{
    return {QStringLiteral("fp32"),         QStringLiteral("bf16"),         QStringLiteral("fp8-te"),
            QStringLiteral("fp8-msamp-o1"), QStringLiteral("fp8-msamp-o2"), QStringLiteral("fp8-ao")};
}

QStringList fp8BenchArguments(const Fp8ComparisonOptions &options)
{
    QStringList arguments = {QStringLiteral("bench"),         QStringLiteral("fp8"),
                             QStringLiteral("--json"),        QStringLiteral("--steps"),
                             QString::number(options.steps),  QStringLiteral("--threads"),
                             QString::number(options.threads)};
    if (!options.shapes.isEmpty())
        arguments << QStringLiteral("--shapes") << options.shapes.join(QLatin1Char(','));
    if (!options.precisions.isEmpty())
        arguments << QStringLiteral("--only") << options.precisions.join(QLatin1Char(','));
    if (!options.outputDirectory.isEmpty())
        arguments << QStringLiteral("--out") << options.outputDirectory;
    return arguments;
}

std::optional<Fp8Progress> parseFp8Progress(const QByteArray &line)
{
    const QJsonObject event = QJsonDocument::fromJson(line.trimmed()).object();
    if (event.value(QStringLiteral("schema")).toString() != QLatin1String(launcher::BenchFp8ProgressSchema) ||
        event.value(QStringLiteral("version")).toInt() != launcher::BenchFp8Version)
        return std::nullopt;
    Fp8Progress progress;
    progress.state = event.value(QStringLiteral("state")).toString();
    progress.shape = event.value(QStringLiteral("shape")).toString();
    progress.precision = event.value(QStringLiteral("precision")).toString();
    progress.run = event.value(QStringLiteral("run")).toInt();
    progress.runs = event.value(QStringLiteral("runs")).toInt();
    progress.step = event.value(QStringLiteral("step")).toInt();
    progress.steps = event.value(QStringLiteral("steps")).toInt();
    return progress;
}

namespace {

// A JSON number; null (what the CLI writes for NaN, e.g. no bf16 run to compare with) is NaN.
double numberOf(const QJsonValue &value)
{
    return value.isDouble() ? value.toDouble() : NAN;
}

bool readCurve(const QJsonValue &value, QVector<double> &x, QVector<double> &y)
{
    if (!value.isArray())
        return false;
    for (const QJsonValue &point : value.toArray()) {
        const QJsonArray pair = point.toArray();
        if (pair.size() != 2)
            return false;
        x.append(numberOf(pair[0]));
        y.append(numberOf(pair[1]));
    }
    return true;
}

} // namespace

std::optional<Fp8Comparison> parseFp8Comparison(const QByteArray &json, QString *error)
{
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(json.trimmed(), &parseError);
    if (!document.isObject()) {
        *error = QStringLiteral("accel bench fp8 --json: not a JSON object (%1)").arg(parseError.errorString());
        return std::nullopt;
    }
    const QJsonObject root = document.object();
    const QString schema = root.value(QStringLiteral("schema")).toString();
    const int version = root.value(QStringLiteral("version")).toInt();
    if (schema != QLatin1String(launcher::BenchFp8Schema) || version != launcher::BenchFp8Version) {
        *error = QStringLiteral("accel bench fp8 --json: schema %1 version %2; expected %3 version %4")
                     .arg(schema.isEmpty() ? QStringLiteral("(none)") : schema)
                     .arg(version)
                     .arg(QLatin1String(launcher::BenchFp8Schema))
                     .arg(launcher::BenchFp8Version);
        return std::nullopt;
    }
    Fp8Comparison comparison;
    comparison.steps = root.value(QStringLiteral("steps")).toInt();
    for (const QJsonValue &shape : root.value(QStringLiteral("shapes")).toArray())
        comparison.shapes << shape.toString();
    const QJsonArray runs = root.value(QStringLiteral("runs")).toArray();
    for (const QJsonValue &value : runs) {
        const QJsonObject object = value.toObject();
        Fp8ComparisonRun run;
        run.shape = object.value(QStringLiteral("shape")).toString();
        run.precision = object.value(QStringLiteral("precision")).toString();
        QVector<double> atSteps, atLoss;
        if (run.shape.isEmpty() || run.precision.isEmpty() ||
            !readCurve(object.value(QStringLiteral("loss")), run.lossSteps, run.loss) ||
            !readCurve(object.value(QStringLiteral("eval_loss_curve")), run.evalLossSteps, run.evalLoss) ||
            !readCurve(object.value(QStringLiteral("loss_at")), atSteps, atLoss)) {
            *error = QStringLiteral("accel bench fp8 --json: run %1: missing shape, precision, loss, "
                                    "eval_loss_curve or loss_at")
                         .arg(comparison.runs.size() + 1);
            return std::nullopt;
        }
        for (int i = 0; i < atSteps.size(); ++i)
            run.lossAt.push_back({atSteps[i], atLoss[i]});
        run.finalEvalLoss = numberOf(object.value(QStringLiteral("eval_loss")));
        run.evalVsBf16Percent = numberOf(object.value(QStringLiteral("eval_loss_vs_bf16_percent")));
        run.stepTimeS = numberOf(object.value(QStringLiteral("step_time_s")));
        run.weightBytes = numberOf(object.value(QStringLiteral("weight_bytes")));
        run.gradientBytes = numberOf(object.value(QStringLiteral("gradient_bytes")));
        run.optimizerBytes = numberOf(object.value(QStringLiteral("optimizer_state_bytes")));
        run.fp8Layers = object.value(QStringLiteral("fp8_linear_layers")).toInt();
        if (!comparison.shapes.contains(run.shape))
            comparison.shapes << run.shape;
        comparison.runs.push_back(std::move(run));
    }
    return comparison;
}

} // namespace accel::app
