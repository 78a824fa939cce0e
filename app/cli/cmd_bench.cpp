// accel bench fp8: trains the gpt recipe in two shapes from the same initial weights and data under
// fp32, bf16 and each FP8 recipe (one accel-worker process per run, as `accel-worker JOB.yaml`),
// then prints a table (loss at fixed steps, final evaluation loss and its difference from bf16,
// step time, bytes of weights / gradients / optimizer state) and draws the loss curves to a PNG.
// The worker does the training; this program only reads its metrics (docs/metrics.md).
#include "app/cli/argparser.h"
#include "app/cli/cmd_bench_plot.h"
#include "app/cli/command.h"

#include "monitor/metricsparser.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#ifndef ACCEL_BENCH_SOURCE_ROOT
#define ACCEL_BENCH_SOURCE_ROOT ""
#endif

namespace accel::cli {

namespace {

struct Shape {
    const char *name;
    int layers, heads, embedding;
};
const Shape shapes[] = {{"gpt", 2, 2, 64}, {"gpt-deep", 4, 2, 32}};

struct Precision {
    const char *name;
    const char *mixedPrecision;
    std::vector<std::pair<const char *, const char *>> env;
};
const std::vector<Precision> precisions = {
    {"fp32", "no", {}},
    {"bf16", "bf16", {}},
    {"fp8-te", "fp8", {{"ACCELERATE_FP8_BACKEND", "TE"}, {"ACCELERATE_FP8_AMAX_HISTORY_LEN", "16"}}},
    {"fp8-msamp-o1", "fp8", {{"ACCELERATE_FP8_BACKEND", "MSAMP"}, {"ACCELERATE_FP8_OPT_LEVEL", "O1"}}},
    {"fp8-msamp-o2", "fp8", {{"ACCELERATE_FP8_BACKEND", "MSAMP"}, {"ACCELERATE_FP8_OPT_LEVEL", "O2"}}},
    {"fp8-ao", "fp8", {{"ACCELERATE_FP8_BACKEND", "AO"}}},
};

QString findCorpus()
{
    const QString exeDir = QFileInfo(QStringLiteral("/proc/self/exe")).canonicalPath();
    QStringList candidates = {exeDir + QStringLiteral("/../share/accel-studio/corpus/corpus.txt"),
                              exeDir + QStringLiteral("/../resources/corpus/corpus.txt")};
    if (const QString source = qEnvironmentVariable("ACCEL_SOURCE_DIR"); !source.isEmpty())
        candidates << source + QStringLiteral("/resources/corpus/corpus.txt");
    candidates << QStringLiteral(ACCEL_BENCH_SOURCE_ROOT "/resources/corpus/corpus.txt");
    for (const QString &candidate : candidates) {
        if (QFileInfo::exists(candidate))
            return QFileInfo(candidate).canonicalFilePath();
    }
    return {};
}

// Resolved once, before the first run: /proc/self/exe stops resolving if this program's file is
// replaced while the benchmark runs (a rebuild).
const QString &workerProgram()
{
    static const QString program = [] {
        if (const QString set = qEnvironmentVariable("ACCEL_WORKER_PROGRAM"); !set.isEmpty())
            return set;
        return QFileInfo(QStringLiteral("/proc/self/exe")).canonicalPath() + QStringLiteral("/accel-worker");
    }();
    return program;
}

QByteArray jobText(const Shape &shape, const QString &corpus, int steps)
{
    return QStringLiteral("recipe: gpt\nname: bench-fp8\nseed: 42\noutput_dir: out\n"
                          "model: {n_layer: %1, n_head: %2, n_embd: %3, block_size: 64, dropout: 0.0}\n"
                          "data: {corpus: \"%4\", eval_fraction: 0.05}\n"
                          "training: {max_steps: %5, batch_size: 16, learning_rate: 2.0e-3, warmup_steps: %6, "
                          "min_lr_ratio: 0.1, weight_decay: 0.01, grad_clip: 1.0, log_every: 10, eval_every: %7, "
                          "eval_batches: 8, resume: none}\n"
                          "sample: {length: 0}\n")
        .arg(shape.layers)
        .arg(shape.heads)
        .arg(shape.embedding)
        .arg(corpus)
        .arg(steps)
        .arg(std::max(1, steps / 10))
        .arg(std::max(1, steps / 5))
        .toUtf8();
}

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

BenchRun runOne(const Shape &shape, const Precision &precision, const QString &dir, const QString &corpus, int steps,
                int threads, QString *error)
{
    BenchRun run;
    run.shape = QString::fromLatin1(shape.name);
    run.precision = QString::fromLatin1(precision.name);
    QDir().mkpath(dir);
    QFile job(dir + QStringLiteral("/job.yaml"));
    if (!job.open(QIODevice::WriteOnly) || job.write(jobText(shape, corpus, steps)) < 0) {
        *error = dir + QStringLiteral("/job.yaml: cannot write");
        return run;
    }
    job.close();
    const QString metricsPath = dir + QStringLiteral("/metrics.jsonl");
    QFile::remove(metricsPath);
    QProcess worker;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char *name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "ACCELERATE_USE_CPU"})
        env.remove(QLatin1String(name));
    const QStringList inherited = env.keys();
    for (const QString &name : inherited) {
        if (name.startsWith(QLatin1String("ACCELERATE_FP8_")))
            env.remove(name);
    }
    env.insert(QStringLiteral("ACCELERATE_MIXED_PRECISION"), QLatin1String(precision.mixedPrecision));
    for (const auto &[name, value] : precision.env)
        env.insert(QLatin1String(name), QLatin1String(value));
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QString::number(threads));
    env.insert(QStringLiteral("ACCEL_METRICS_FILE"), metricsPath);
    worker.setProcessEnvironment(env);
    worker.setWorkingDirectory(dir);
    worker.setProcessChannelMode(QProcess::MergedChannels);
    worker.start(workerProgram(), {dir + QStringLiteral("/job.yaml")});
    if (!worker.waitForStarted(30000)) {
        *error = workerProgram() + QStringLiteral(": cannot start (this build has no libtorch runtime?)");
        return run;
    }
    worker.waitForFinished(-1);
    const QString output = QString::fromUtf8(worker.readAll());
    QFile log(dir + QStringLiteral("/worker.log"));
    if (log.open(QIODevice::WriteOnly))
        log.write(output.toUtf8());
    if (worker.exitStatus() != QProcess::NormalExit || worker.exitCode() != 0) {
        const QStringList lines = output.trimmed().split(QLatin1Char('\n'));
        *error = QStringLiteral("%1 %2 failed (exit %3): %4")
                     .arg(run.shape, run.precision)
                     .arg(worker.exitCode())
                     .arg(lines.isEmpty() ? QString() : lines.last());
        return run;
    }
    if (auto m = QRegularExpression(QStringLiteral(" (\\d+) parameters")).match(output); m.hasMatch())
        run.parameters = m.captured(1).toDouble();
    if (auto m = QRegularExpression(QStringLiteral("converted (\\d+) of (\\d+) Linear layers \\((\\d+) weights\\)"))
                     .match(output);
        m.hasMatch()) {
        run.convertedLayers = m.captured(1).toInt();
        run.fp8Weights = m.captured(3).toDouble();
    }
    QFile metrics(metricsPath);
    if (!metrics.open(QIODevice::ReadOnly)) {
        *error = metricsPath + QStringLiteral(": no metrics written");
        return run;
    }
    monitor::MetricsParser parser;
    monitor::MetricBatch batch;
    parser.feed(metrics.readAll(), batch);
    parser.finish(batch);
    std::vector<double> stepTimes;
    for (const auto &row : batch.rows) {
        for (uint32_t i = 0; i < row.valueCount; ++i) {
            const auto &value = batch.values[row.firstValue + i];
            const QByteArray &name = batch.names[size_t(value.name)];
            if (name == "loss")
                run.loss.push_back({double(row.step), value.value});
            else if (name == "eval_loss")
                run.evalLoss.push_back({double(row.step), value.value});
            else if (name == "step_time_s" && row.step > 10) // the first window warms up
                stepTimes.push_back(value.value);
        }
    }
    std::sort(stepTimes.begin(), stepTimes.end());
    run.stepTimeS = stepTimes.empty() ? NAN : stepTimes[stepTimes.size() / 2];
    return run;
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

int runBench(int argc, char **argv)
{
    ArgParser parser("accel bench", "Benchmarks; `accel bench fp8` trains the gpt recipe under fp32, bf16 and each FP8 "
                                    "recipe and compares them (runs accel-worker)");
    parser.addPositional({"which", "the benchmark: fp8", false, false});
    parser.addValue("steps", "N", "optimizer steps per run", "500");
    parser.addValue("out", "DIR", "folder for the runs, the table and fp8-loss.png", "fp8-bench");
    parser.addValue("threads", "N", "torch threads per run", "1");
    parser.addValue("only", "NAMES", "comma-separated precisions to run (fp32,bf16,fp8-te,fp8-msamp-o1,...)", "");
    parser.addFlag("json", "machine-readable result (accel.bench-fp8)");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel bench: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const std::string which = parser.firstPositional("which").value_or("");
    if (which != "fp8") {
        std::fprintf(stderr, "accel bench: unknown benchmark '%s'; expected: fp8\n", which.c_str());
        return ExitBadInput;
    }
    bool ok = false;
    const int steps = QString::fromStdString(parser.valueOr("steps", "500")).toInt(&ok);
    if (!ok || steps < 10) {
        std::fprintf(stderr, "accel bench: --steps: expected an integer >= 10\n");
        return ExitBadInput;
    }
    const int threads = QString::fromStdString(parser.valueOr("threads", "1")).toInt(&ok);
    if (!ok || threads < 1) {
        std::fprintf(stderr, "accel bench: --threads: expected an integer >= 1\n");
        return ExitBadInput;
    }
    QStringList only = QString::fromStdString(parser.valueOr("only", "")).split(QLatin1Char(','), Qt::SkipEmptyParts);
    for (const QString &name : only) {
        if (std::none_of(precisions.begin(), precisions.end(),
                         [&](const Precision &p) { return name == QLatin1String(p.name); })) {
            std::fprintf(stderr,
                         "accel bench: --only: unknown precision '%s'; expected fp32, bf16, fp8-te, "
                         "fp8-msamp-o1, fp8-msamp-o2, fp8-ao\n",
                         qPrintable(name));
            return ExitBadInput;
        }
    }
    const QString corpus = findCorpus();
    if (corpus.isEmpty()) {
        std::fprintf(stderr, "accel bench: resources/corpus/corpus.txt not found (set ACCEL_SOURCE_DIR)\n");
        return ExitFailure;
    }
    const QString out = QDir(QString::fromStdString(parser.valueOr("out", "fp8-bench"))).absolutePath();
    if (!QFileInfo(workerProgram()).isExecutable()) {
        std::fprintf(stderr, "accel bench: %s not found: this build has no libtorch runtime (accel-worker)\n",
                     qPrintable(workerProgram()));
        return ExitFailure;
    }
    std::vector<BenchRun> runs;
    for (const Shape &shape : shapes) {
        for (const Precision &precision : precisions) {
            if (!only.isEmpty() && !only.contains(QLatin1String(precision.name)))
                continue;
            const auto started = std::chrono::steady_clock::now();
            std::fprintf(stderr, "accel bench: %s %s, %d steps ...", shape.name, precision.name, steps);
            std::fflush(stderr);
            QString error;
            BenchRun run = runOne(shape, precision,
                                  out + QLatin1Char('/') + QLatin1String(shape.name) + QLatin1Char('/') +
                                      QLatin1String(precision.name),
                                  corpus, steps, threads, &error);
            if (!error.isEmpty()) {
                std::fprintf(stderr, "\naccel bench: %s\n", qPrintable(error));
                return ExitFailure;
            }
            std::fprintf(stderr, " %.0f s\n",
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
            runs.push_back(std::move(run));
        }
    }
    const std::vector<double> at = {double(steps) / 5, double(steps) / 2, double(steps)};
    QJsonArray jsonRuns;
    QString table = QStringLiteral("%1 %2 %3 %4 %5 %6 %7 %8 %9 %10 %11\n")
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
    for (const BenchRun &run : runs) {
        const double eval = run.evalLoss.empty() ? NAN : run.evalLoss.back().second;
        double bf16 = NAN;
        for (const BenchRun &other : runs) {
            if (other.shape == run.shape && other.precision == QLatin1String("bf16") && !other.evalLoss.empty())
                bf16 = other.evalLoss.back().second;
        }
        const double difference = (eval - bf16) / bf16 * 100;
        const Bytes bytes = storageBytes(run.precision, run.parameters, run.fp8Weights);
        auto kib = [](double b) { return QStringLiteral("%1K").arg(b / 1024, 0, 'f', 0); };
        table += QStringLiteral("%1 %2 %3 %4 %5 %6 %7 %8 %9 %10 %11\n")
                     .arg(run.shape, -9)
                     .arg(run.precision, -13)
                     .arg(number(lossAt(run, at[0]), 4), 9)
                     .arg(number(lossAt(run, at[1]), 4), 9)
                     .arg(number(lossAt(run, at[2]), 4), 9)
                     .arg(number(eval, 4), 7)
                     .arg(std::isnan(difference) ? QStringLiteral("-") : QString::asprintf("%+.2f%%", difference), 8)
                     .arg(number(run.stepTimeS * 1000, 1), 8)
                     .arg(kib(bytes.weights), 8)
                     .arg(kib(bytes.gradients), 8)
                     .arg(kib(bytes.optimizer), 8);
        QJsonArray curve;
        for (const auto &[step, loss] : run.loss)
            curve.append(QJsonArray{step, loss});
        jsonRuns.append(QJsonObject{{QStringLiteral("shape"), run.shape},
                                    {QStringLiteral("precision"), run.precision},
                                    {QStringLiteral("parameters"), run.parameters},
                                    {QStringLiteral("fp8_weights"), run.fp8Weights},
                                    {QStringLiteral("fp8_linear_layers"), run.convertedLayers},
                                    {QStringLiteral("eval_loss"), eval},
                                    {QStringLiteral("eval_loss_vs_bf16_percent"), difference},
                                    {QStringLiteral("step_time_s"), run.stepTimeS},
                                    {QStringLiteral("weight_bytes"), bytes.weights},
                                    {QStringLiteral("gradient_bytes"), bytes.gradients},
                                    {QStringLiteral("optimizer_state_bytes"), bytes.optimizer},
                                    {QStringLiteral("loss"), curve}});
    }
    const QString png = out + QStringLiteral("/fp8-loss.png");
    QString plotError;
    const bool plotted = writeLossCurves(runs, png, &plotError);
    QFile tableFile(out + QStringLiteral("/table.txt"));
    if (tableFile.open(QIODevice::WriteOnly))
        tableFile.write(table.toUtf8());
    if (parser.isSet("json")) {
        QJsonObject result{{QStringLiteral("schema"), QStringLiteral("accel.bench-fp8")},
                           {QStringLiteral("version"), 1},
                           {QStringLiteral("steps"), steps},
                           {QStringLiteral("png"), plotted ? png : QString()},
                           {QStringLiteral("runs"), jsonRuns}};
        std::fputs(QJsonDocument(result).toJson(QJsonDocument::Compact).constData(), stdout);
        std::fputc('\n', stdout);
    } else {
        std::fputs(qPrintable(table), stdout);
        std::printf("bytes: as each recipe stores them (weights, gradients, Adam moments); loss curves: %s\n",
                    plotted ? qPrintable(png) : qPrintable(QStringLiteral("not drawn: ") + plotError));
    }
    return ExitOk;
}

const Registrar registrar({"bench", "benchmarks: fp8 (fp32, bf16 and the FP8 recipes on the gpt recipe)", runBench});

} // namespace

} // namespace accel::cli
