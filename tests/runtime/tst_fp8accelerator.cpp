// mixed_precision fp8 through the Accelerator: each recipe converts the prepared model's Linear
// layers and trains with them (it used to train bf16 silently), MS-AMP replaces the optimizer,
// what is not implemented is refused by name before training starts, two real accel-worker
// ranks train the gpt recipe under each recipe, and checkpoints resume FP8 runs bit for bit.
#include "core/bigmodel/safetensors.h"
#include "core/runtime/accelerator.h"
#include "core/runtime/precision/msampadamw.h"
#include "core/runtime/training.h"

#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

#include <torch/torch.h>

#include <cstring>
#include <map>

using namespace accel::runtime;

namespace {

DistributedEnv envWith(std::map<std::string, std::string> vars)
{
    vars.emplace("OMP_NUM_THREADS", "1");
    auto env = DistributedEnv::fromEnvironment([&vars](const char *name) -> const char * {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    });
    return env ? *env : DistributedEnv{};
}

struct Net : torch::nn::Module {
    Net()
    {
        a = register_module("a", torch::nn::Linear(32, 64));
        b = register_module("b", torch::nn::Linear(64, 64));
        c = register_module("c", torch::nn::Linear(64, 8));
    }
    torch::Tensor forward(torch::Tensor x) { return c(torch::relu(b(torch::relu(a(x))))); }
    torch::nn::Linear a{nullptr}, b{nullptr}, c{nullptr};
};

// accel-worker processes (`ranks` of them, on loopback) running `job` in `dir` with `vars` set;
// each rank's metrics go to `metrics`<rank>.jsonl in `dir`.
struct WorkerRun {
    bool ok = true;
    QString output; // every rank's standard output and error
};

WorkerRun runWorkers(const QString &dir, const QString &job, const QStringList &vars, const QString &metrics,
                     int ranks = 1)
{
    QTcpServer probe;
    probe.listen(QHostAddress::LocalHost, 0);
    const QString port = QString::number(probe.serverPort());
    probe.close();
    std::vector<std::unique_ptr<QProcess>> processes;
    for (int rank = 0; rank < ranks; ++rank) {
        auto process = std::make_unique<QProcess>();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("ACCEL_RUN_DIR"));
        env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
        if (ranks > 1) {
            env.insert(QStringLiteral("RANK"), QString::number(rank));
            env.insert(QStringLiteral("LOCAL_RANK"), QString::number(rank));
            env.insert(QStringLiteral("WORLD_SIZE"), QString::number(ranks));
            env.insert(QStringLiteral("LOCAL_WORLD_SIZE"), QString::number(ranks));
            env.insert(QStringLiteral("MASTER_ADDR"), QStringLiteral("127.0.0.1"));
            env.insert(QStringLiteral("MASTER_PORT"), port);
        }
        env.insert(QStringLiteral("ACCEL_METRICS_FILE"),
                   QDir(dir).filePath(metrics + QString::number(rank) + ".jsonl"));
        for (const QString &entry : vars)
            env.insert(entry.section('=', 0, 0), entry.section('=', 1));
        process->setProcessEnvironment(env);
        process->setWorkingDirectory(dir);
        process->setProcessChannelMode(QProcess::MergedChannels);
        process->start(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker")), {job});
        processes.push_back(std::move(process));
    }
    WorkerRun run;
    for (auto &process : processes) {
        if (!process->waitForFinished(300000)) {
            process->kill();
            process->waitForFinished();
        }
        run.output += QString::fromUtf8(process->readAll());
        run.ok = run.ok && process->exitStatus() == QProcess::NormalExit && process->exitCode() == 0;
    }
    return run;
}

// step -> training loss, as the worker logged it (every digit of the double).
std::map<int, double> stepLosses(const QString &metricsFile)
{
    std::map<int, double> losses;
    QFile file(metricsFile);
    if (!file.open(QIODevice::ReadOnly))
        return losses;
    for (const QByteArray &line : file.readAll().split('\n')) {
        const QJsonObject object = QJsonDocument::fromJson(line).object();
        if (object.contains(QStringLiteral("loss")))
            losses[object.value(QStringLiteral("step")).toInt()] = object.value(QStringLiteral("loss")).toDouble();
    }
    return losses;
}

QByteArray fileBytes(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

class tst_Fp8Accelerator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void refusesWhatIsNotImplementedByName();
    void fp8TrainsWithTheRecipeNotBf16_data();
    void fp8TrainsWithTheRecipeNotBf16();
    void twoRanksTrainTheGptRecipe_data();
    void twoRanksTrainTheGptRecipe();
    void msampResumesBitwise_data();
    void msampResumesBitwise();
    void teResumesBitwiseInANewProcess();
    void shardedTrainsLikeDdp_data();
    void shardedTrainsLikeDdp();
    void fp8AllGatherTrainsLikeDdp_data();
    void fp8AllGatherTrainsLikeDdp();
    void shardingRefusalsNameTheSetting_data();
    void shardingRefusalsNameTheSetting();
};

void tst_Fp8Accelerator::refusesWhatIsNotImplementedByName()
{
    const std::pair<const char *, const char *> cases[] = {
        {"ACCELERATE_FP8_BACKEND", "apex"}, {"ACCELERATE_FP8_OPT_LEVEL", "O3"}, {"ACCELERATE_FP8_FORMAT", "E5M2"}};
    for (const auto &[name, value] : cases) {
        std::map<std::string, std::string> vars{{name, value}, {"ACCELERATE_MIXED_PRECISION", "fp8"}};
        vars.emplace("ACCELERATE_FP8_BACKEND", "MSAMP"); // unless the case sets the backend itself
        auto accelerator = Accelerator::create({}, envWith(vars));
        QVERIFY2(!accelerator, name);
        QVERIFY2(accelerator.error().message.find(std::string(name) + "=" + value) != std::string::npos,
                 accelerator.error().message.c_str());
    }
    // The same variables do not matter to a bf16 run.
    AcceleratorOptions bf16;
    bf16.mixedPrecision = "bf16";
    QVERIFY(Accelerator::create(bf16, envWith({{"ACCELERATE_FP8_BACKEND", "apex"}})));
}

void tst_Fp8Accelerator::fp8TrainsWithTheRecipeNotBf16_data()
{
    QTest::addColumn<QString>("backend");
    QTest::newRow("AO") << "AO";
    QTest::newRow("TE") << "TE";
    QTest::newRow("MSAMP") << "MSAMP";
}

// Regression: mixed_precision fp8 trained with bf16 autocast and no FP8 at all.
void tst_Fp8Accelerator::fp8TrainsWithTheRecipeNotBf16()
{
    QFETCH(QString, backend);
    auto created = Accelerator::create(
        {}, envWith({{"ACCELERATE_MIXED_PRECISION", "fp8"}, {"ACCELERATE_FP8_BACKEND", backend.toStdString()}}));
    QVERIFY2(created, created ? "" : created.error().message.c_str());
    Accelerator &accelerator = **created;
    QCOMPARE(accelerator.mixedPrecision(), MixedPrecision::Fp8);
    torch::manual_seed(1);
    auto model = std::make_shared<Net>();
    accelerator.prepareModel(model);
    torch::optim::AdamW adamw(model->parameters(), torch::optim::AdamWOptions(3e-3));
    auto optimizer = accelerator.prepareOptimizer(adamw);
    QCOMPARE(dynamic_cast<MsAmpAdamW *>(&optimizer->optimizer()) != nullptr, backend == QLatin1String("MSAMP"));

    auto x = torch::randn({64, 32});
    auto target = torch::randn({64, 8});
    torch::Tensor bf16Out, fp8Out;
    {
        torch::NoGradGuard noGrad;
        AutocastGuard bf16(true);
        bf16Out = model->forward(x).to(torch::kFloat);
        auto autocast = accelerator.autocast();
        fp8Out = model->forward(x).to(torch::kFloat);
    }
    // The middle layer (64 x 64) is converted by every recipe; AO keeps the first and the last.
    QVERIFY(!torch::equal(fp8Out, bf16Out));
    double first = 0, last = 0;
    for (int step = 0; step < 40; ++step) {
        accelerator.accumulate();
        torch::Tensor loss;
        {
            auto autocast = accelerator.autocast();
            loss = torch::mse_loss(model->forward(x).to(torch::kFloat), target);
        }
        accelerator.backward(loss);
        optimizer->step();
        optimizer->zeroGrad();
        (step == 0 ? first : last) = loss.item<double>();
    }
    QVERIFY2(last < 0.7 * first, qPrintable(QStringLiteral("loss %1 -> %2").arg(first).arg(last)));
}

void tst_Fp8Accelerator::twoRanksTrainTheGptRecipe_data()
{
    fp8TrainsWithTheRecipeNotBf16_data();
}

// Two accel-worker ranks (gloo / shared memory): TE reduces amaxes across ranks after each backward
// and MS-AMP inside it (weight gradients); the collectives must line up on both ranks.
void tst_Fp8Accelerator::twoRanksTrainTheGptRecipe()
{
    QFETCH(QString, backend);
    const QString worker = QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"));
    if (!QFile::exists(worker))
        QSKIP("accel-worker is not built");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QFile job(dir.filePath(QStringLiteral("job.yaml")));
    QVERIFY(job.open(QIODevice::WriteOnly));
    job.write(QStringLiteral("recipe: gpt\nseed: 3\noutput_dir: out\n"
                             "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32}\n"
                             "data: {corpus: \"%1\"}\n"
                             "training: {max_steps: 8, batch_size: 4, log_every: 4, learning_rate: 1.0e-3}\n"
                             "sample: {length: 0}\n")
                  .arg(accel::test::sourceDir() + QStringLiteral("/resources/corpus/corpus.txt"))
                  .toUtf8());
    job.close();
    const WorkerRun run = runWorkers(
        dir.path(), QStringLiteral("job.yaml"),
        {QStringLiteral("ACCELERATE_MIXED_PRECISION=fp8"), QStringLiteral("ACCELERATE_FP8_BACKEND=") + backend},
        QStringLiteral("metrics"), 2);
    const QString &output = run.output;
    QVERIFY2(run.ok, qPrintable(output.right(2000)));
    QVERIFY2(output.contains(QStringLiteral("converted")), qPrintable(output.right(2000)));
    QVERIFY(output.contains(QStringLiteral("done: 8 steps")));
}

void tst_Fp8Accelerator::msampResumesBitwise_data()
{
    QTest::addColumn<QString>("level");
    QTest::newRow("O1") << QStringLiteral("O1");
    QTest::newRow("O2") << QStringLiteral("O2");
}

// save_state / load_state under MS-AMP: the low-bit moments (O2: E4M3 first moment and FP16 second
// with their scales) and the layers' scaling windows go into optimizer.bin, so 12 steps, a save, a
// fresh model and optimizer loaded from it and 12 more steps give the same bits as 24 steps in one
// go (past the scaling windows' warm-up of 16 steps).
void tst_Fp8Accelerator::msampResumesBitwise()
{
    QFETCH(QString, level);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::map<std::string, std::string> vars = {{"ACCELERATE_MIXED_PRECISION", "fp8"},
                                                     {"ACCELERATE_FP8_BACKEND", "MSAMP"},
                                                     {"ACCELERATE_FP8_OPT_LEVEL", level.toStdString()}};
    auto x = torch::randn({96, 32}, at::detail::createCPUGenerator(5));
    auto target = torch::randn({96, 8}, at::detail::createCPUGenerator(6));
    struct Run {
        std::unique_ptr<Accelerator> accelerator;
        std::shared_ptr<Net> model;
        std::unique_ptr<torch::optim::AdamW> adamw;
        std::shared_ptr<AcceleratedOptimizer> optimizer;
    };
    auto start = [&](int seed) {
        Run run;
        auto created = Accelerator::create({}, envWith(vars));
        if (!created)
            return run;
        run.accelerator = std::move(*created);
        torch::manual_seed(seed);
        run.model = std::make_shared<Net>();
        run.accelerator->prepareModel(run.model);
        run.adamw = std::make_unique<torch::optim::AdamW>(run.model->parameters(), torch::optim::AdamWOptions(3e-3));
        run.optimizer = run.accelerator->prepareOptimizer(*run.adamw);
        return run;
    };
    auto train = [&](Run &run, int from, int to) {
        for (int step = from; step < to; ++step) {
            run.accelerator->accumulate();
            auto rows = torch::arange(int64_t(step % 6) * 16, int64_t(step % 6) * 16 + 16);
            torch::Tensor loss;
            {
                auto autocast = run.accelerator->autocast();
                loss = torch::mse_loss(run.model->forward(x.index_select(0, rows)).to(torch::kFloat),
                                       target.index_select(0, rows));
            }
            run.accelerator->backward(loss);
            run.optimizer->step();
            run.optimizer->zeroGrad();
        }
    };
    Run straight = start(1);
    QVERIFY(straight.accelerator);
    train(straight, 0, 24);

    Run first = start(1);
    QVERIFY(first.accelerator);
    train(first, 0, 12);
    auto saved = first.accelerator->saveState(dir.filePath(QStringLiteral("checkpoint")).toStdString());
    QVERIFY2(saved, saved ? "" : saved.error().message.c_str());
    const auto *moments = dynamic_cast<MsAmpAdamW *>(&first.optimizer->optimizer());
    QVERIFY(moments);
    int64_t parameters = 0;
    for (const auto &p : first.model->parameters())
        parameters += p.numel();
    QCOMPARE(moments->momentBytes(), (level == QLatin1String("O2") ? 3 : 8) * parameters);

    Run resumed = start(2); // other initial weights: everything must come from the checkpoint
    QVERIFY(resumed.accelerator);
    auto loaded = resumed.accelerator->loadState(*saved);
    QVERIFY2(loaded, loaded ? "" : loaded.error().message.c_str());
    QCOMPARE(dynamic_cast<MsAmpAdamW *>(&resumed.optimizer->optimizer())->momentBytes(), moments->momentBytes());
    train(resumed, 12, 24);
    const auto expected = straight.model->parameters(), actual = resumed.model->parameters();
    QCOMPARE(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
        QVERIFY2(torch::equal(actual[i], expected[i]), qPrintable(QStringLiteral("parameter %1 differs").arg(i)));

    // A checkpoint of the other level is refused by name.
    auto otherVars = vars;
    otherVars["ACCELERATE_FP8_OPT_LEVEL"] = level == QLatin1String("O2") ? "O1" : "O2";
    auto other = Accelerator::create({}, envWith(otherVars));
    QVERIFY(other);
    torch::manual_seed(3);
    auto otherModel = std::make_shared<Net>();
    (*other)->prepareModel(otherModel);
    torch::optim::AdamW otherAdamw(otherModel->parameters(), torch::optim::AdamWOptions(3e-3));
    (*other)->prepareOptimizer(otherAdamw);
    auto refused = (*other)->loadState(*saved);
    QVERIFY(!refused);
    const QString message = QStringLiteral("the checkpoint's optimizer state is %1; this run is %2")
                                .arg(level, level == QLatin1String("O2") ? QStringLiteral("O1") : QStringLiteral("O2"));
    QVERIFY2(QString::fromStdString(refused.error().message).contains(message), refused.error().message.c_str());
}

// TE's delayed scaling state in checkpoints: the gpt recipe under TE (amax history 4, so the
// histories roll several times) trained 16 steps in one process equals 8 steps, a checkpoint, and 8
// more steps in a new process resumed from it, in every logged loss and in every byte of the final
// model. The same checkpoint without fp8_state.safetensors resumes with a warning naming what
// starts afresh, and then differs; one saved with another history length is refused by name.
void tst_Fp8Accelerator::teResumesBitwiseInANewProcess()
{
    if (!QFile::exists(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))))
        QSKIP("accel-worker is not built");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto writeJob = [&](const QString &name, const QString &output, int steps, bool checkpoint) {
        QFile job(dir.filePath(name));
        if (!job.open(QIODevice::WriteOnly))
            return false;
        job.write(QStringLiteral("recipe: gpt\nseed: 3\noutput_dir: %1\n"
                                 "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32}\n"
                                 "data: {corpus: \"%2\"}\n"
                                 "training: {max_steps: %3, batch_size: 4, log_every: 1, learning_rate: 3.0e-3, "
                                 "warmup_steps: 0, min_lr_ratio: 1.0, "
                                 "checkpoint_at_end: %4}\n"
                                 "sample: {length: 0}\n")
                      .arg(output, accel::test::sourceDir() + QStringLiteral("/resources/corpus/corpus.txt"))
                      .arg(steps)
                      .arg(checkpoint ? QStringLiteral("true") : QStringLiteral("false"))
                      .toUtf8());
        return true;
    };
    // A constant learning rate: a job of 8 steps and one of 16 follow the same schedule.
    const QStringList te{QStringLiteral("ACCELERATE_MIXED_PRECISION=fp8"), QStringLiteral("ACCELERATE_FP8_BACKEND=TE"),
                         QStringLiteral("ACCELERATE_FP8_AMAX_HISTORY_LEN=4")};
    QVERIFY(writeJob(QStringLiteral("straight.yaml"), QStringLiteral("straight"), 16, false));
    QVERIFY(writeJob(QStringLiteral("first.yaml"), QStringLiteral("split"), 8, true));
    QVERIFY(writeJob(QStringLiteral("second.yaml"), QStringLiteral("split"), 16, false));
    QVERIFY(writeJob(QStringLiteral("fresh.yaml"), QStringLiteral("fresh"), 16, false));

    WorkerRun run = runWorkers(dir.path(), QStringLiteral("straight.yaml"), te, QStringLiteral("straight"));
    QVERIFY2(run.ok, qPrintable(run.output.right(2000)));
    QVERIFY2(run.output.contains(QStringLiteral("fp8 TE delayed scaling")), qPrintable(run.output.right(2000)));
    run = runWorkers(dir.path(), QStringLiteral("first.yaml"), te, QStringLiteral("first"));
    QVERIFY2(run.ok, qPrintable(run.output.right(2000)));
    const QString checkpoint = dir.filePath(QStringLiteral("split/checkpoints/checkpoint_0"));
    QVERIFY(QFile::exists(checkpoint + QStringLiteral("/fp8_state.safetensors")));
    // The fresh run resumes from a copy of the checkpoint without the FP8 state.
    QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("fresh/checkpoints/checkpoint_0"))));
    for (const QString &name : QDir(checkpoint).entryList(QDir::Files)) {
        if (name != QLatin1String("fp8_state.safetensors"))
            QVERIFY(QFile::copy(checkpoint + "/" + name, dir.filePath("fresh/checkpoints/checkpoint_0/" + name)));
    }
    run = runWorkers(dir.path(), QStringLiteral("second.yaml"), te, QStringLiteral("second"));
    QVERIFY2(run.ok, qPrintable(run.output.right(2000)));
    QVERIFY2(run.output.contains(QStringLiteral("resumed from step 8")), qPrintable(run.output.right(2000)));
    QVERIFY2(!run.output.contains(QStringLiteral("start afresh")), qPrintable(run.output.right(2000)));

    const auto straight = stepLosses(dir.filePath(QStringLiteral("straight0.jsonl")));
    const auto first = stepLosses(dir.filePath(QStringLiteral("first0.jsonl")));
    const auto second = stepLosses(dir.filePath(QStringLiteral("second0.jsonl")));
    QCOMPARE(straight.size(), size_t(16));
    QCOMPARE(first.size(), size_t(8));
    QCOMPARE(second.size(), size_t(8));
    for (const auto &[step, loss] : first)
        QVERIFY2(straight.at(step) == loss, qPrintable(QStringLiteral("step %1").arg(step)));
    for (const auto &[step, loss] : second) {
        QVERIFY(step > 8);
        QVERIFY2(straight.at(step) == loss, qPrintable(QStringLiteral("step %1: %2 resumed, %3 straight")
                                                           .arg(step)
                                                           .arg(loss, 0, 'g', 17)
                                                           .arg(straight.at(step), 0, 'g', 17)));
    }
    const QByteArray model = fileBytes(dir.filePath(QStringLiteral("straight/model.safetensors")));
    QVERIFY(!model.isEmpty());
    QVERIFY2(fileBytes(dir.filePath(QStringLiteral("split/model.safetensors"))) == model,
             "the resumed run's final model differs from the uninterrupted run's");

    // Without the saved state: a warning naming what is re-initialised, and another trajectory.
    run = runWorkers(dir.path(), QStringLiteral("fresh.yaml"), te, QStringLiteral("fresh"));
    QVERIFY2(run.ok, qPrintable(run.output.right(2000)));
    QVERIFY2(run.output.contains(QStringLiteral("has no fp8_state.safetensors: the amax histories (4 rows) and scales "
                                                "of input, weight and grad_output of ")),
             qPrintable(run.output.right(2000)));
    const auto fresh = stepLosses(dir.filePath(QStringLiteral("fresh0.jsonl")));
    QCOMPARE(fresh.size(), size_t(8));
    int differing = 0;
    for (const auto &[step, loss] : fresh)
        differing += loss != straight.at(step) ? 1 : 0;
    QVERIFY2(differing > 0, "resuming without the FP8 state still followed the uninterrupted run");
    QVERIFY(fileBytes(dir.filePath(QStringLiteral("fresh/model.safetensors"))) != model);

    // A checkpoint of another amax history length is refused by name.
    QStringList longer = te;
    longer.last() = QStringLiteral("ACCELERATE_FP8_AMAX_HISTORY_LEN=8");
    QVERIFY(writeJob(QStringLiteral("longer.yaml"), QStringLiteral("split"), 20, false));
    run = runWorkers(dir.path(), QStringLiteral("longer.yaml"), longer, QStringLiteral("longer"));
    QVERIFY(!run.ok);
    QVERIFY2(run.output.contains(QStringLiteral("amax_history has 4 rows; this run's amax_history_len is 8")),
             qPrintable(run.output.right(2000)));
}

namespace {

// A gpt job of 2 blocks (each a sharding unit, the model the root) in `dir`, 12 steps, no gradient
// clipping (its norm would be summed over shards in another order than over whole tensors).
QString shardedJob(const QString &dir, const QString &name, int logEvery = 4)
{
    QFile job(QDir(dir).filePath(name + QStringLiteral(".yaml")));
    if (!job.open(QIODevice::WriteOnly))
        return {};
    job.write(QStringLiteral("recipe: gpt\nseed: 5\noutput_dir: %1\n"
                             "model: {n_layer: 2, n_head: 2, n_embd: 32, block_size: 32}\n"
                             "data: {corpus: \"%2\"}\n"
                             "training: {max_steps: 12, batch_size: 4, log_every: %3, learning_rate: 3.0e-3, "
                             "grad_clip: 0}\n"
                             "sample: {length: 0}\n")
                  .arg(name, accel::test::sourceDir() + QStringLiteral("/resources/corpus/corpus.txt"))
                  .arg(logEvery)
                  .toUtf8());
    return job.fileName();
}

// How two runs' model.safetensors differ: parameters (float32 elements) whose bits differ, the
// largest difference, and how many were compared (-1 when the files do not hold the same tensors).
struct ModelDifference {
    int64_t differing = 0, total = -1;
    double worst = 0;
};

ModelDifference compareModels(const QString &first, const QString &second)
{
    ModelDifference result;
    auto a = accel::bigmodel::SafetensorsFile::open(first.toStdString());
    auto b = accel::bigmodel::SafetensorsFile::open(second.toStdString());
    if (!a || !b || (*a)->tensors().size() != (*b)->tensors().size())
        return result;
    result.total = 0;
    for (const auto &tensor : (*a)->tensors()) {
        const auto *other = (*b)->find(tensor.name);
        if (!other || other->byteSize() != tensor.byteSize() || other->dtype != tensor.dtype) {
            result.total = -1;
            return result;
        }
        if (tensor.dtype != accel::bigmodel::DType::F32)
            continue;
        const auto *x = reinterpret_cast<const float *>(tensor.data);
        const auto *y = reinterpret_cast<const float *>(other->data);
        for (uint64_t i = 0; i < tensor.byteSize() / 4; ++i, ++result.total) {
            result.differing += std::memcmp(x + i, y + i, 4) != 0 ? 1 : 0;
            result.worst = std::max(result.worst, double(std::abs(x[i] - y[i])));
        }
    }
    return result;
}

// The sharding engine's count of all-gathered bytes (its debug line, one per rank): float32
// parameters and E4M3 codes. Empty when a rank did not report.
struct GatheredBytes {
    QString transport;
    qint64 parameters = -1, codes = -1;
};

std::vector<GatheredBytes> gatheredBytes(const QString &output)
{
    static const QRegularExpression line(
        QStringLiteral(R"(\(([a-z-]+)\): all-gathered (\d+) bytes of parameters and (\d+) bytes of E4M3 codes)"));
    std::vector<GatheredBytes> ranks;
    for (auto it = line.globalMatch(output); it.hasNext();) {
        const auto match = it.next();
        ranks.push_back({match.captured(1), match.captured(2).toLongLong(), match.captured(3).toLongLong()});
    }
    return ranks;
}

} // namespace

void tst_Fp8Accelerator::shardedTrainsLikeDdp_data()
{
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QStringList>("sharding");
    const QStringList fullShard{QStringLiteral("ACCELERATE_USE_FSDP=true"), QStringLiteral("FSDP_VERSION=1"),
                                QStringLiteral("FSDP_SHARDING_STRATEGY=FULL_SHARD"),
                                QStringLiteral("FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP")};
    const QStringList fullyShard{QStringLiteral("ACCELERATE_USE_FSDP=true"), QStringLiteral("FSDP_VERSION=2"),
                                 QStringLiteral("FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP"),
                                 QStringLiteral("ACCELERATE_FP8_ENABLE_FSDP_FLOAT8_ALL_GATHER=false")};
    const QStringList zero{QStringLiteral("ACCELERATE_USE_DEEPSPEED=true")};
    QTest::newRow("TE FULL_SHARD") << QStringLiteral("TE") << fullShard;
    QTest::newRow("AO FULL_SHARD") << QStringLiteral("AO") << fullShard;
    QTest::newRow("TE ZeRO-3") << QStringLiteral("TE") << zero + QStringList{"ACCELERATE_DEEPSPEED_ZERO_STAGE=3"};
    QTest::newRow("AO ZeRO-1") << QStringLiteral("AO") << zero + QStringList{"ACCELERATE_DEEPSPEED_ZERO_STAGE=1"};
    QTest::newRow("AO fully_shard") << QStringLiteral("AO") << fullyShard;
}

// FP8 under sharding: TE and AO quantise the weight the engine gathered for the unit, so 2 ranks under
// FSDP / ZeRO reach the parameters 2 DDP ranks reach with the same recipe. With 2 ranks the
// gradient sum is a/2 + b/2 under both (FSDP divides by 2 before its reduce-scatter, DDP before its
// all-reduce) and AdamW works element by element, so the result is expected bit for bit; the test
// also reports the largest difference.
void tst_Fp8Accelerator::shardedTrainsLikeDdp()
{
    QFETCH(QString, backend);
    QFETCH(QStringList, sharding);
    if (!QFile::exists(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))))
        QSKIP("accel-worker is not built");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QStringList fp8{QStringLiteral("ACCELERATE_MIXED_PRECISION=fp8"),
                          QStringLiteral("ACCELERATE_FP8_BACKEND=") + backend};
    WorkerRun ddp =
        runWorkers(dir.path(), shardedJob(dir.path(), QStringLiteral("ddp")), fp8, QStringLiteral("ddp"), 2);
    QVERIFY2(ddp.ok, qPrintable(ddp.output.right(2000)));
    WorkerRun sharded = runWorkers(dir.path(), shardedJob(dir.path(), QStringLiteral("sharded")), fp8 + sharding,
                                   QStringLiteral("sharded"), 2);
    QVERIFY2(sharded.ok, qPrintable(sharded.output.right(3000)));
    QVERIFY2(sharded.output.contains(QStringLiteral("converted")), qPrintable(sharded.output.right(2000)));
    const QString strategy = QString(QTest::currentDataTag()).section(' ', 1);
    QVERIFY2(sharded.output.contains(QStringLiteral("process(es), ") + strategy),
             qPrintable(sharded.output.right(2000)));
    QVERIFY2(ddp.output.contains(QStringLiteral("process(es), DDP")), qPrintable(ddp.output.right(2000)));

    const ModelDifference difference = compareModels(dir.filePath(QStringLiteral("ddp/model.safetensors")),
                                                     dir.filePath(QStringLiteral("sharded/model.safetensors")));
    qInfo("%s on 2 ranks, 12 steps: %lld of %lld parameters differ from DDP's bits, largest difference %g",
          QTest::currentDataTag(), (long long)difference.differing, (long long)difference.total, difference.worst);
    QVERIFY(difference.total > 0);
    QCOMPARE(difference.differing, int64_t(0));
}

void tst_Fp8Accelerator::fp8AllGatherTrainsLikeDdp_data()
{
    QTest::addColumn<int>("ranks");
    QTest::addColumn<bool>("gloo");
    QTest::newRow("2 ranks shared memory") << 2 << false;
    QTest::newRow("2 ranks gloo") << 2 << true;
    QTest::newRow("4 ranks shared memory") << 4 << false;
    QTest::newRow("4 ranks gloo") << 4 << true;
}

// torchao's float8 all-gather under FSDP2 (on by default for AO, as Accelerate's config has it): each
// unit's converted weights travel as E4M3 codes cast with the scale of the whole weight's amax (the
// maximum of the ranks' parts'), which is exactly how each Linear quantises the whole float32 weight
// without the all-gather, and the gather itself copies bytes. So 12 steps of the gpt recipe from the
// same weights and batches give every loss and parameter of the run with the all-gather off and of
// DDP with the same recipe, bit for bit, wherever the gradient sums add in the same order: 2 ranks
// (a + b = b + a) and the shared-memory path on 4 (rank order for the reduce-scatter and DDP's
// all-reduce alike; FSDP2 and DDP divide by 4, exactly). gloo's sums on 4 ranks add in an order that
// depends on where an element lies in the buffer, and the all-gather moves the converted weights into
// a flat parameter of their own: there the runs agree in the first loss (the same forward) and then
// within float32 rounding of the gradients, which FP8 casts and Adam carry on (measured: largest
// parameter difference 4e-4 after 12 steps, bounded here at 5e-3).
// The converted weights' gather moves a quarter of the bytes it moves in float32.
void tst_Fp8Accelerator::fp8AllGatherTrainsLikeDdp()
{
    QFETCH(int, ranks);
    QFETCH(bool, gloo);
    if (!QFile::exists(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))))
        QSKIP("accel-worker is not built");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QStringList common{QStringLiteral("ACCELERATE_MIXED_PRECISION=fp8"), QStringLiteral("ACCELERATE_FP8_BACKEND=AO"),
                       QStringLiteral("ACCEL_LOG_LEVEL=debug")};
    if (gloo)
        common << QStringLiteral("ACCEL_SHM_COLLECTIVES=0") << QStringLiteral("ACCEL_SHM_ALLREDUCE=0");
    const QStringList fsdp2{QStringLiteral("ACCELERATE_USE_FSDP=true"), QStringLiteral("FSDP_VERSION=2"),
                            QStringLiteral("FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP")};
    struct Run {
        QString name;
        QStringList vars;
        WorkerRun result;
        std::map<int, double> losses;
    };
    Run runs[] = {{QStringLiteral("ddp"), common, {}, {}},
                  {QStringLiteral("on"), common + fsdp2, {}, {}},
                  {QStringLiteral("off"),
                   common + fsdp2 + QStringList{QStringLiteral("ACCELERATE_FP8_ENABLE_FSDP_FLOAT8_ALL_GATHER=false")},
                   {},
                   {}}};
    for (Run &run : runs) {
        run.result = runWorkers(dir.path(), shardedJob(dir.path(), run.name, 1), run.vars, run.name, ranks);
        QVERIFY2(run.result.ok, qPrintable(run.name + ": " + run.result.output.right(3000)));
        QVERIFY2(run.result.output.contains(QStringLiteral("converted 6 of 8 Linear layers")),
                 qPrintable(run.result.output.right(2000)));
        run.losses = stepLosses(dir.filePath(run.name + QStringLiteral("0.jsonl")));
        QCOMPARE(run.losses.size(), size_t(12));
    }
    const Run &ddp = runs[0], &on = runs[1], &off = runs[2];
    QVERIFY2(on.result.output.contains(QStringLiteral("process(es), fully_shard")),
             qPrintable(on.result.output.right(2000)));

    // Every rank counted its all-gathers: codes only with the all-gather on, over the transport asked for.
    const auto bytesOn = gatheredBytes(on.result.output), bytesOff = gatheredBytes(off.result.output);
    QCOMPARE(int(bytesOn.size()), ranks);
    QCOMPARE(int(bytesOff.size()), ranks);
    const QString transport = gloo ? QStringLiteral("process-group") : QStringLiteral("shared-memory");
    for (int r = 0; r < ranks; ++r) {
        QCOMPARE(bytesOn[size_t(r)].transport, transport);
        QVERIFY(bytesOn[size_t(r)].codes > 0);
        QCOMPARE(bytesOff[size_t(r)].codes, qint64(0));
        // The float32 bytes the converted weights took without the all-gather are 4x their codes'.
        QCOMPARE(bytesOff[size_t(r)].parameters - bytesOn[size_t(r)].parameters, 4 * bytesOn[size_t(r)].codes);
    }
    qInfo("%s: per rank %lld bytes all-gathered with the float8 all-gather (%lld of them E4M3 codes), %lld without",
          QTest::currentDataTag(), (long long)(bytesOn[0].parameters + bytesOn[0].codes), (long long)bytesOn[0].codes,
          (long long)bytesOff[0].parameters);

    // With the all-gather against without it, and against DDP with the same recipe.
    const bool sameOrder = ranks == 2 || !gloo;
    for (const Run *other : {&off, &ddp}) {
        const ModelDifference model = compareModels(dir.filePath(QStringLiteral("on/model.safetensors")),
                                                    dir.filePath(other->name + QStringLiteral("/model.safetensors")));
        QVERIFY(model.total > 0);
        int lossesDiffering = 0;
        double worstLoss = 0;
        for (const auto &[step, loss] : other->losses) {
            lossesDiffering += on.losses.at(step) != loss ? 1 : 0;
            worstLoss = std::max(worstLoss, std::abs(on.losses.at(step) - loss) / loss);
        }
        qInfo("%s, 12 steps with the float8 all-gather against %s: %d of 12 losses differ (largest relative "
              "difference %g), %lld of %lld parameters (largest difference %g)",
              QTest::currentDataTag(), qPrintable(other->name), lossesDiffering, worstLoss, (long long)model.differing,
              (long long)model.total, model.worst);
        QCOMPARE(on.losses.begin()->second, other->losses.begin()->second);
        if (sameOrder) {
            QCOMPARE(lossesDiffering, 0);
            QCOMPARE(model.differing, int64_t(0));
        } else {
            QVERIFY2(worstLoss < 1e-4, qPrintable(QString::number(worstLoss)));
            QVERIFY2(model.worst < 5e-3, qPrintable(QString::number(model.worst)));
        }
    }
}

void tst_Fp8Accelerator::shardingRefusalsNameTheSetting_data()
{
    QTest::addColumn<QStringList>("vars");
    QTest::addColumn<QString>("message");
    QTest::newRow("MS-AMP FULL_SHARD") << QStringList{"ACCELERATE_FP8_BACKEND=MSAMP", "ACCELERATE_USE_FSDP=true",
                                                      "FSDP_SHARDING_STRATEGY=FULL_SHARD"}
                                       << QStringLiteral("with fp8 MS-AMP O2 is not implemented");
    QTest::newRow("MS-AMP ZeRO-2") << QStringList{"ACCELERATE_FP8_BACKEND=MSAMP", "ACCELERATE_FP8_OPT_LEVEL=O1",
                                                  "ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=2"}
                                   << QStringLiteral("with fp8 MS-AMP O1 is not implemented");
    QTest::newRow("AO fully_shard CPU-RAM-efficient loading")
        << QStringList{"ACCELERATE_FP8_BACKEND=AO", "ACCELERATE_USE_FSDP=true", "FSDP_VERSION=2",
                       "FSDP_CPU_RAM_EFFICIENT_LOADING=true"}
        << QStringLiteral("FSDP_CPU_RAM_EFFICIENT_LOADING=true with fp8 AO dynamic tensorwise scaling");
}

// What FP8 under sharding does not implement is refused by name before training starts.
void tst_Fp8Accelerator::shardingRefusalsNameTheSetting()
{
    QFETCH(QStringList, vars);
    QFETCH(QString, message);
    if (!QFile::exists(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))))
        QSKIP("accel-worker is not built");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const WorkerRun run =
        runWorkers(dir.path(), shardedJob(dir.path(), QStringLiteral("refused")),
                   QStringList{QStringLiteral("ACCELERATE_MIXED_PRECISION=fp8")} + vars, QStringLiteral("refused"), 2);
    QVERIFY(!run.ok);
    QVERIFY2(run.output.contains(message), qPrintable(run.output.right(2000)));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("refused/model.safetensors"))));
}

QTEST_GUILESS_MAIN(tst_Fp8Accelerator)
#include "tst_fp8accelerator.moc"
