// mixed_precision fp8 through the Accelerator: each recipe converts the prepared model's Linear
// layers and trains with them (it used to train bf16 silently), MS-AMP replaces the optimizer,
// and what is not implemented is refused by name before training starts.
#include "core/runtime/accelerator.h"
#include "core/runtime/precision/msampadamw.h"
#include "core/runtime/training.h"

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

QTEST_GUILESS_MAIN(tst_Fp8Accelerator)
#include "tst_fp8accelerator.moc"
