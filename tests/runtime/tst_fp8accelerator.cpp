// mixed_precision fp8 through the Accelerator: each recipe converts the prepared model's Linear
// layers and trains with them (it used to train bf16 silently), MS-AMP replaces the optimizer,
// what is not implemented is refused by name before training starts, two real accel-worker
// ranks train the gpt recipe under each recipe, and checkpoints resume FP8 runs bit for bit
// (FP8 under sharding: tst_fp8sharded).
#include "core/runtime/accelerator.h"
#include "core/runtime/precision/msampadamw.h"
#include "core/runtime/training.h"

#include "tests/runtime/fp8workersupport.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <torch/torch.h>

#include <map>

using namespace accel::runtime;
using namespace accel::test::fp8;

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
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("gemm"); // ACCEL_FP8_GEMM, empty: auto
    QTest::newRow("AO") << "AO"
                        << "";
    QTest::newRow("TE") << "TE"
                        << "";
    QTest::newRow("MSAMP") << "MSAMP"
                           << "";
    QTest::newRow("AO, GEMM dequantized") << "AO"
                                          << "dequantized";
}

// Two accel-worker ranks (gloo / shared memory): TE reduces amaxes across ranks after each backward
// and MS-AMP inside it (weight gradients); the collectives must line up on both ranks.
void tst_Fp8Accelerator::twoRanksTrainTheGptRecipe()
{
    QFETCH(QString, backend);
    QFETCH(QString, gemm);
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
    QStringList vars{QStringLiteral("ACCELERATE_MIXED_PRECISION=fp8"),
                     QStringLiteral("ACCELERATE_FP8_BACKEND=") + backend};
    if (!gemm.isEmpty())
        vars << QStringLiteral("ACCEL_FP8_GEMM=") + gemm;
    const WorkerRun run = runWorkers(dir.path(), QStringLiteral("job.yaml"), vars, QStringLiteral("metrics"), 2);
    const QString &output = run.output;
    QVERIFY2(run.ok, qPrintable(output.right(2000)));
    QVERIFY2(output.contains(QStringLiteral("converted")), qPrintable(output.right(2000)));
    QVERIFY(output.contains(QStringLiteral("done: 8 steps")));
    // The log names the GEMM path each shape class took (measured), or the forced one; every train
    // line of the metrics counts the products on each path.
    if (gemm.isEmpty())
        QVERIFY2(output.contains(QStringLiteral("fp8 GEMM on cpu")), qPrintable(output.right(2000)));
    else
        QVERIFY2(output.contains(QStringLiteral(", GEMM ") + gemm), qPrintable(output.right(2000)));
    for (int rank = 0; rank < 2; ++rank) {
        QFile metrics(dir.filePath(QStringLiteral("metrics%1.jsonl").arg(rank)));
        QVERIFY(metrics.open(QIODevice::ReadOnly));
        int trainLines = 0;
        for (const QByteArray &line : metrics.readAll().split('\n')) {
            const QJsonObject object = QJsonDocument::fromJson(line).object();
            if (!object.contains(QStringLiteral("loss")))
                continue;
            ++trainLines;
            const double scaledMm = object.value(QStringLiteral("fp8_gemm_scaled_mm")).toDouble(-1);
            const double dequantized = object.value(QStringLiteral("fp8_gemm_dequantized")).toDouble(-1);
            QVERIFY2(scaledMm >= 0 && dequantized >= 0 && scaledMm + dequantized > 0, line.constData());
            if (gemm == QLatin1String("dequantized"))
                QCOMPARE(scaledMm, 0.0);
        }
        QCOMPARE(trainLines, 2);
    }
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

QTEST_GUILESS_MAIN(tst_Fp8Accelerator)
#include "tst_fp8accelerator.moc"
