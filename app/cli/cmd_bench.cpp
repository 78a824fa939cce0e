// accel bench fp8: trains the gpt recipe in two shapes from the same initial weights and data under
// fp32, bf16 and each FP8 recipe (one accel-worker process per run, as `accel-worker JOB.yaml`),
// then prints a table (loss at fixed steps, final evaluation loss and its difference from bf16,
// step time, bytes of weights / gradients / optimizer state) and draws the loss curves to a PNG.
// The worker does the training; this program only reads its metrics (docs/metrics.md).
#include "app/cli/argparser.h"
#include "app/cli/cmd_bench_plot.h"
#include "app/cli/cmd_bench_summary.h"
#include "app/cli/cmd_launch_support.h"
#include "app/cli/command.h"

#include "core/common/accelerateenv.h"
#include "launcher/jsonoutput.h"
#include "monitor/metricsparser.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#ifndef ACCEL_BENCH_SOURCE_ROOT
#define ACCEL_BENCH_SOURCE_ROOT ""
#endif

namespace accel::cli {

namespace {

struct Shape {
    const char *name;
    int layers, heads, embedding, context, batch;
};
// gpt and gpt-deep are the benchmark; gpt-tiny is for quick looks and tests (not by default).
const Shape shapes[] = {{"gpt", 2, 2, 64, 64, 16}, {"gpt-deep", 4, 2, 32, 64, 16}, {"gpt-tiny", 1, 2, 16, 32, 8}};
const char *const defaultShapes = "gpt,gpt-deep";

struct Precision {
    const char *name;
    const char *mixedPrecision;
    std::vector<std::pair<const char *, const char *>> env;
};
const std::vector<Precision> precisions = {
    {"fp32", "no", {}},
    {"bf16", "bf16", {}},
    // Every recipe at its library's defaults (TE: HYBRID, margin 0, amax history 1024, max), as a
    // config with only `backend` set gets it.
    {"fp8-te", "fp8", {{accelerateenv::kFp8Backend, "TE"}}},
    {"fp8-msamp-o1", "fp8", {{accelerateenv::kFp8Backend, "MSAMP"}, {accelerateenv::kFp8OptLevel, "O1"}}},
    {"fp8-msamp-o2", "fp8", {{accelerateenv::kFp8Backend, "MSAMP"}, {accelerateenv::kFp8OptLevel, "O2"}}},
    {"fp8-ao", "fp8", {{accelerateenv::kFp8Backend, "AO"}}},
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
    static const QString program = QString::fromStdString(workerProgramPath());
    return program;
}

// The training loss is logged every 10 steps, or 10 times per run when it is shorter than 100.
int logEvery(int steps)
{
    return std::clamp(steps / 10, 1, 10);
}

// The first seed; --seeds N runs 42, 43, ... 42 + N - 1.
constexpr int firstSeed = 42;

QByteArray jobText(const Shape &shape, const QString &corpus, int steps, int seed)
{
    return QStringLiteral("recipe: gpt\nname: bench-fp8\nseed: %11\noutput_dir: out\n"
                          "model: {n_layer: %1, n_head: %2, n_embd: %3, block_size: %9, dropout: 0.0}\n"
                          "data: {corpus: \"%4\", eval_fraction: 0.05}\n"
                          "training: {max_steps: %5, batch_size: %10, learning_rate: 2.0e-3, warmup_steps: %6, "
                          "min_lr_ratio: 0.1, weight_decay: 0.01, grad_clip: 1.0, log_every: %8, eval_every: %7, "
                          "eval_batches: 8, resume: none}\n"
                          "sample: {length: 0}\n")
        .arg(shape.layers)
        .arg(shape.heads)
        .arg(shape.embedding)
        .arg(corpus)
        .arg(steps)
        .arg(std::max(1, steps / 10))
        .arg(std::max(1, steps / 5))
        .arg(logEvery(steps))
        .arg(shape.context)
        .arg(shape.batch)
        .arg(seed)
        .toUtf8();
}

// Progress of a run for --json (one JSON object per line on stderr, schema accel.bench-fp8.progress).
// With --jobs above 1 several runs report at once, each its own line.
struct Progress {
    bool json = false;
    int run = 0, runs = 0; // this run's number, from 1, and how many there are
    void report(const BenchRun &what, int step, int steps, const char *state) const
    {
        if (!json)
            return;
        const QJsonObject line{{QStringLiteral("schema"), QLatin1String(launcher::BenchFp8ProgressSchema)},
                               {QStringLiteral("version"), launcher::BenchFp8Version},
                               {QStringLiteral("state"), QLatin1String(state)},
                               {QStringLiteral("shape"), what.shape},
                               {QStringLiteral("precision"), what.precision},
                               {QStringLiteral("run"), run},
                               {QStringLiteral("runs"), runs},
                               {QStringLiteral("step"), step},
                               {QStringLiteral("steps"), steps}};
        std::fprintf(stderr, "%s\n", QJsonDocument(line).toJson(QJsonDocument::Compact).constData());
        std::fflush(stderr);
    }
};

// The last step written to a metrics file so far (0 when none).
int lastLoggedStep(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return 0;
    const QByteArray text = file.readAll();
    static const QRegularExpression stepField(QStringLiteral("\"step\":\\s*(\\d+)"));
    int last = 0;
    auto matches = stepField.globalMatch(QString::fromUtf8(text));
    while (matches.hasNext())
        last = std::max(last, matches.next().captured(1).toInt());
    return last;
}

// Trains one run to its end; a set `cancel` (another run failed) kills its worker and returns
// without an error of its own.
BenchRun runOne(const Shape &shape, const Precision &precision, int seed, const QString &dir, const QString &corpus,
                int steps, int threads, const Progress &progress, const std::atomic<bool> &cancel, QString *error)
{
    BenchRun run;
    run.shape = QString::fromLatin1(shape.name);
    run.precision = QString::fromLatin1(precision.name);
    run.seed = seed;
    QDir().mkpath(dir);
    QFile job(dir + QStringLiteral("/job.yaml"));
    if (!job.open(QIODevice::WriteOnly) || job.write(jobText(shape, corpus, steps, seed)) < 0) {
        *error = dir + QStringLiteral("/job.yaml: cannot write");
        return run;
    }
    job.close();
    const QString metricsPath = dir + QStringLiteral("/metrics.jsonl");
    QFile::remove(metricsPath);
    QProcess worker;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char *name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", accelerateenv::kUseCpu})
        env.remove(QLatin1String(name));
    const QStringList inherited = env.keys();
    for (const QString &name : inherited) {
        if (name.startsWith(QLatin1String(accelerateenv::kFp8Prefix)))
            env.remove(name);
    }
    env.insert(QString::fromLatin1(accelerateenv::kMixedPrecision), QLatin1String(precision.mixedPrecision));
    for (const auto &[name, value] : precision.env)
        env.insert(QLatin1String(name), QLatin1String(value));
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QString::number(threads));
    env.insert(QStringLiteral("ACCEL_METRICS_FILE"), metricsPath);
    worker.setProcessEnvironment(env);
    worker.setWorkingDirectory(dir);
    worker.setProcessChannelMode(QProcess::MergedChannels);
    // The worker ends with this program, however it ends (a cancelled benchmark leaves no run).
    worker.setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
    worker.start(workerProgram(), {dir + QStringLiteral("/job.yaml")});
    if (!worker.waitForStarted(30000)) {
        *error = workerProgram() + QStringLiteral(": cannot start (this build has no libtorch runtime?)");
        return run;
    }
    progress.report(run, 0, steps, "started");
    int reported = 0;
    while (!worker.waitForFinished(500)) {
        if (worker.state() == QProcess::NotRunning)
            break;
        if (cancel) { // the failed run reports; this one only stops
            worker.kill();
            worker.waitForFinished(-1);
            return run;
        }
        if (progress.json) {
            if (const int step = lastLoggedStep(metricsPath); step > reported) {
                reported = step;
                progress.report(run, step, steps, "running");
            }
        }
    }
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
            else if (name == "step_time_s" && row.step > logEvery(steps)) // the first window warms up
                stepTimes.push_back(value.value);
        }
    }
    std::sort(stepTimes.begin(), stepTimes.end());
    run.stepTimeS = stepTimes.empty() ? NAN : stepTimes[stepTimes.size() / 2];
    progress.report(run, steps, steps, "finished");
    return run;
}

// "a, b, c": the names of a table, for help and messages.
template <typename Entries>
std::string nameList(const Entries &entries)
{
    std::string text;
    for (const auto &entry : entries)
        text += (text.empty() ? "" : ", ") + std::string(entry.name);
    return text;
}

struct BenchOptions {
    int steps = 500, threads = 1, seeds = 1, jobs = 1;
    QStringList only;       // precisions; empty: all
    QStringList shapeNames; // in the order they run, once planned
    QString out;
    bool json = false;
};

void addBenchOptions(ArgParser &parser)
{
    parser.addPositional({"which", "the benchmark: fp8", false, false});
    parser.addValue("steps", "N", "optimizer steps per run", "500");
    parser.addValue("out", "DIR", "folder for the runs, the table and fp8-loss.png", "fp8-bench");
    parser.addValue("threads", "N", "torch threads per run", "1");
    parser.addValue("seeds", "N",
                    "train every shape and precision with N seeds (42, 43, ...; each seed its own initial weights "
                    "and data order, the same for every precision): the table gives the means, and each "
                    "precision's difference to bf16 as the mean of the per-seed differences with their range",
                    "1");
    parser.addValue("jobs", "N",
                    "runs trained at the same time, each its own accel-worker (at most one per core for step times "
                    "that mean something; the results do not depend on it)",
                    "1");
    parser.addValue("only", "NAMES", "comma-separated precisions to run: " + nameList(precisions), "");
    parser.addValue("shapes", "NAMES",
                    "comma-separated model shapes: gpt (2 layers, n_embd 64), gpt-deep (4 layers, n_embd 32), "
                    "gpt-tiny (1 layer, n_embd 16, context 32, batch 8)",
                    defaultShapes);
    parser.addFlag("json", "machine-readable result (accel.bench-fp8) on stdout; progress as JSON lines "
                           "(accel.bench-fp8.progress) on stderr");
}

// The options checked; each refusal is printed, naming the option and what is valid.
std::optional<BenchOptions> readBenchOptions(const ArgParser &parser)
{
    BenchOptions o;
    auto integer = [&](const char *name, const char *fallback, int low, int high, int &out) {
        bool ok = false;
        out = QString::fromStdString(parser.valueOr(name, fallback)).toInt(&ok);
        if (ok && out >= low && out <= high)
            return true;
        if (high == INT_MAX)
            std::fprintf(stderr, "accel bench: --%s: expected an integer >= %d\n", name, low);
        else
            std::fprintf(stderr, "accel bench: --%s: expected an integer from %d to %d\n", name, low, high);
        return false;
    };
    if (!integer("steps", "500", 10, INT_MAX, o.steps) || !integer("threads", "1", 1, INT_MAX, o.threads) ||
        !integer("seeds", "1", 1, 20, o.seeds) || !integer("jobs", "1", 1, 64, o.jobs))
        return std::nullopt;
    o.only = QString::fromStdString(parser.valueOr("only", "")).split(QLatin1Char(','), Qt::SkipEmptyParts);
    for (const QString &name : o.only) {
        if (std::none_of(precisions.begin(), precisions.end(),
                         [&](const Precision &p) { return name == QLatin1String(p.name); })) {
            std::fprintf(stderr, "accel bench: --only: unknown precision '%s'; expected %s\n", qPrintable(name),
                         nameList(precisions).c_str());
            return std::nullopt;
        }
    }
    o.shapeNames =
        QString::fromStdString(parser.valueOr("shapes", defaultShapes)).split(QLatin1Char(','), Qt::SkipEmptyParts);
    o.shapeNames.removeDuplicates();
    if (o.shapeNames.isEmpty()) {
        std::fprintf(stderr, "accel bench: --shapes: empty; expected some of %s\n", nameList(shapes).c_str());
        return std::nullopt;
    }
    for (const QString &name : o.shapeNames) {
        if (std::none_of(std::begin(shapes), std::end(shapes),
                         [&](const Shape &s) { return name == QLatin1String(s.name); })) {
            std::fprintf(stderr, "accel bench: --shapes: unknown shape '%s'; expected %s\n", qPrintable(name),
                         nameList(shapes).c_str());
            return std::nullopt;
        }
    }
    o.out = QDir(QString::fromStdString(parser.valueOr("out", "fp8-bench"))).absolutePath();
    o.json = parser.isSet("json");
    return o;
}

struct Planned {
    const Shape *shape;
    const Precision *precision;
    int seed;
};

// Every chosen shape x precision x seed in the tables' order; shapeNames becomes the order they run.
std::vector<Planned> planRuns(BenchOptions &o)
{
    std::vector<Planned> planned;
    for (const Shape &shape : shapes) {
        if (!o.shapeNames.contains(QLatin1String(shape.name)))
            continue;
        for (const Precision &precision : precisions) {
            if (o.only.isEmpty() || o.only.contains(QLatin1String(precision.name))) {
                for (int seed = firstSeed; seed < firstSeed + o.seeds; ++seed)
                    planned.push_back({&shape, &precision, seed});
            }
        }
    }
    o.shapeNames.clear();
    for (const Planned &plan : planned) {
        if (!o.shapeNames.contains(QLatin1String(plan.shape->name)))
            o.shapeNames << QLatin1String(plan.shape->name);
    }
    return planned;
}

// Trains the planned runs, --jobs at a time (the next planned run starts whenever one ends), and
// keeps them in planned order whatever order they finish in. Returns the first failure in planned
// order (the runs it stopped have none of their own), or "".
QString trainAll(const std::vector<Planned> &planned, const BenchOptions &o, const QString &corpus,
                 std::vector<BenchRun> &runs)
{
    runs.assign(planned.size(), {});
    std::vector<QString> errors(planned.size());
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex lines; // whole progress lines on stderr
    auto train = [&] {
        for (size_t i = next++; i < planned.size() && !failed; i = next++) {
            const Planned &plan = planned[i];
            const Progress progress{o.json, int(i) + 1, int(planned.size())};
            const auto started = std::chrono::steady_clock::now();
            QString what = QStringLiteral("%1 %2, %3 steps")
                               .arg(QLatin1String(plan.shape->name), QLatin1String(plan.precision->name))
                               .arg(o.steps);
            if (o.seeds > 1)
                what += QStringLiteral(", seed %1").arg(plan.seed);
            if (!o.json && o.jobs == 1) {
                std::fprintf(stderr, "accel bench: %s ...", qPrintable(what));
                std::fflush(stderr);
            }
            QString dir = o.out + QLatin1Char('/') + QLatin1String(plan.shape->name) + QLatin1Char('/') +
                          QLatin1String(plan.precision->name);
            if (o.seeds > 1)
                dir += QStringLiteral("/seed%1").arg(plan.seed);
            runs[i] = runOne(*plan.shape, *plan.precision, plan.seed, dir, corpus, o.steps, o.threads, progress, failed,
                             &errors[i]);
            if (!errors[i].isEmpty())
                failed = true;
            if (failed)
                return;
            if (!o.json) {
                const double seconds =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
                const std::lock_guard lock(lines);
                if (o.jobs == 1)
                    std::fprintf(stderr, " %.0f s\n", seconds);
                else
                    std::fprintf(stderr, "accel bench: [%zu/%zu] %s: %.0f s\n", i + 1, planned.size(), qPrintable(what),
                                 seconds);
            }
        }
    };
    {
        // Qt takes the first thread to create a QObject for its main thread: it must be this one,
        // where the loss curves' QGuiApplication is made, not a trainer thread's QProcess.
        const QObject mainThread;
        std::vector<std::thread> trainers;
        for (int j = 1; j < std::min<int>(o.jobs, int(planned.size())); ++j)
            trainers.emplace_back(train);
        train();
        for (std::thread &trainer : trainers)
            trainer.join();
    }
    if (!failed)
        return {};
    return *std::find_if(errors.begin(), errors.end(), [](const QString &e) { return !e.isEmpty(); });
}

// The table (stdout and table.txt), the loss curves (fp8-loss.png) and, with --json, accel.bench-fp8.
void reportBench(const std::vector<BenchRun> &runs, const BenchOptions &o)
{
    const BenchSummary summary = summariseBench(runs, o.steps, o.seeds, firstSeed);
    const QString png = o.out + QStringLiteral("/fp8-loss.png");
    QString plotError;
    const bool plotted = writeLossCurves(summary.firstSeeds, png, &plotError);
    QFile tableFile(o.out + QStringLiteral("/table.txt"));
    if (tableFile.open(QIODevice::WriteOnly))
        tableFile.write(summary.table.toUtf8());
    if (o.json) {
        QJsonObject result{{QStringLiteral("schema"), QLatin1String(launcher::BenchFp8Schema)},
                           {QStringLiteral("version"), launcher::BenchFp8Version},
                           {QStringLiteral("steps"), o.steps},
                           {QStringLiteral("seeds"), o.seeds},
                           {QStringLiteral("shapes"), QJsonArray::fromStringList(o.shapeNames)},
                           {QStringLiteral("png"), plotted ? png : QString()},
                           {QStringLiteral("runs"), summary.runs}};
        std::fputs(QJsonDocument(result).toJson(QJsonDocument::Compact).constData(), stdout);
        std::fputc('\n', stdout);
    } else {
        std::fputs(qPrintable(summary.table), stdout);
        std::printf("bytes: as each recipe stores them (weights, gradients, Adam moments); loss curves: %s\n",
                    plotted ? qPrintable(png) : qPrintable(QStringLiteral("not drawn: ") + plotError));
    }
}

int runBench(int argc, char **argv)
{
    ArgParser parser("accel bench", "Benchmarks; `accel bench fp8` trains the gpt recipe under fp32, bf16 and each FP8 "
                                    "recipe and compares them (runs accel-worker)");
    addBenchOptions(parser);
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
    auto options = readBenchOptions(parser);
    if (!options)
        return ExitBadInput;
    const QString corpus = findCorpus();
    if (corpus.isEmpty()) {
        std::fprintf(stderr, "accel bench: resources/corpus/corpus.txt not found (set ACCEL_SOURCE_DIR)\n");
        return ExitFailure;
    }
    if (auto found = checkWorkerProgram(workerProgram().toStdString()); !found) {
        std::fprintf(stderr, "accel bench: %s\n", found.error().toString().c_str());
        return exitCodeFor(found.error());
    }
    const std::vector<Planned> planned = planRuns(*options);
    std::vector<BenchRun> runs;
    if (const QString error = trainAll(planned, *options, corpus, runs); !error.isEmpty()) {
        std::fprintf(stderr, "%saccel bench: %s\n", options->json || options->jobs > 1 ? "" : "\n", qPrintable(error));
        return ExitFailure;
    }
    reportBench(runs, *options);
    return ExitOk;
}

const Registrar registrar({"bench", "benchmarks: fp8 (fp32, bf16 and the FP8 recipes on the gpt recipe)", runBench});

} // namespace

} // namespace accel::cli
