// mixed_precision fp8 through the Accelerator: each recipe converts the prepared model's Linear
// layers and trains with them (it used to train bf16 silently), MS-AMP replaces the optimizer,
// what is not implemented is refused by name before training starts, and two real accel-worker
// ranks train the gpt recipe under each recipe.
#include "core/runtime/accelerator.h"
#include "core/runtime/precision/msampadamw.h"
#include "core/runtime/training.h"

#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

#include <torch/torch.h>

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

} // namespace

class tst_Fp8Accelerator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void refusesWhatIsNotImplementedByName();
    void fp8TrainsWithTheRecipeNotBf16_data();
    void fp8TrainsWithTheRecipeNotBf16();
    void twoRanksTrainTheGptRecipe_data();
    void twoRanksTrainTheGptRecipe();
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
    QTcpServer probe;
    QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
    const QString port = QString::number(probe.serverPort());
    probe.close();
    std::vector<std::unique_ptr<QProcess>> ranks;
    for (int rank = 0; rank < 2; ++rank) {
        auto process = std::make_unique<QProcess>();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("ACCELERATE_MIXED_PRECISION"), QStringLiteral("fp8"));
        env.insert(QStringLiteral("ACCELERATE_FP8_BACKEND"), backend);
        env.insert(QStringLiteral("RANK"), QString::number(rank));
        env.insert(QStringLiteral("LOCAL_RANK"), QString::number(rank));
        env.insert(QStringLiteral("WORLD_SIZE"), QStringLiteral("2"));
        env.insert(QStringLiteral("LOCAL_WORLD_SIZE"), QStringLiteral("2"));
        env.insert(QStringLiteral("MASTER_ADDR"), QStringLiteral("127.0.0.1"));
        env.insert(QStringLiteral("MASTER_PORT"), port);
        env.insert(QStringLiteral("ACCEL_METRICS_FILE"), dir.filePath(QStringLiteral("metrics%1.jsonl").arg(rank)));
        process->setProcessEnvironment(env);
        process->setWorkingDirectory(dir.path());
        process->setProcessChannelMode(QProcess::MergedChannels);
        process->start(worker, {dir.filePath(QStringLiteral("job.yaml"))});
        QVERIFY(process->waitForStarted(10000));
        ranks.push_back(std::move(process));
    }
    QString output;
    for (auto &process : ranks) {
        QVERIFY2(process->waitForFinished(120000), "a rank did not finish within 120 s");
        const QString text = QString::fromUtf8(process->readAll());
        QVERIFY2(process->exitStatus() == QProcess::NormalExit && process->exitCode() == 0,
                 qPrintable(text.right(2000)));
        output += text;
    }
    QVERIFY2(output.contains(QStringLiteral("converted")), qPrintable(output.right(2000)));
    QVERIFY(output.contains(QStringLiteral("done: 8 steps")));
}

QTEST_GUILESS_MAIN(tst_Fp8Accelerator)
#include "tst_fp8accelerator.moc"
