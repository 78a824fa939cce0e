// Fp8Linear and the three recipes on real tensors: the torchao-style recipe against torchao's own
// Float8Linear (on CPU, in the project's Python environment; in float32, and under bf16 autocast as
// Accelerate runs it), the compute dtype under autocast, TE-style delayed
// scaling step by step, MS-AMP's FP16 weights and E4M3 weight gradients, and the conversion's
// filter and scope.
#include "core/runtime/precision/fp8allgather.h"
#include "core/runtime/precision/fp8gemm.h"
#include "core/runtime/precision/fp8training.h"
#include "core/runtime/precision/msampadamw.h"

#include "tests/helpers/dtypename.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <optional>

using namespace accel::runtime;
using accel::test::dtypeName;

namespace {

// Four Linear layers called through their members (as libtorch models are written).
struct Mlp : torch::nn::Module {
    explicit Mlp(std::vector<int64_t> dims)
    {
        for (size_t i = 0; i + 1 < dims.size(); ++i)
            layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(dims[i], dims[i + 1])));
    }
    torch::Tensor forward(torch::Tensor x)
    {
        for (size_t i = 0; i < layers.size(); ++i) {
            x = layers[i](x);
            if (i + 1 < layers.size())
                x = torch::relu(x);
        }
        return x;
    }
    std::vector<torch::nn::Linear> layers;
};

void writeTensor(const QString &path, const torch::Tensor &t)
{
    auto c = t.detach().to(torch::kFloat).contiguous();
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(reinterpret_cast<const char *>(c.data_ptr<float>()), qint64(c.numel() * 4));
}

torch::Tensor readTensor(const QString &path, at::IntArrayRef shape)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    const QByteArray bytes = file.readAll();
    auto t = torch::empty(shape, torch::kFloat);
    if (bytes.size() != t.numel() * 4)
        return {};
    std::memcpy(t.data_ptr<float>(), bytes.constData(), size_t(bytes.size()));
    return t;
}

// torchao with Accelerate's default filter (not first / last Linear, dims multiples of 16).
// argv[2] "fp32": Float8Linear(emulate=True) in float32; "bf16": the forward under bf16 autocast
// with the GEMMs through torch._scaled_mm (emulate=False, which libtorch runs on the CPU). Under
// autocast on the CPU torchao does not cast the input itself (it asks for the GPU's autocast), but
// the converted layer here receives the bf16 output of the autocast layer before it, as it would
// on a GPU.
const char *torchaoScript = R"(
import contextlib, json, os, sys, numpy as np, torch
from torchao.float8 import Float8LinearConfig, convert_to_float8_training
d = sys.argv[1]
bf16 = sys.argv[2] == 'bf16'
meta = json.load(open(os.path.join(d, 'meta.json')))
dims, batch = meta['dims'], meta['batch']
def load(name, shape):
    return torch.from_numpy(np.fromfile(os.path.join(d, name + '.bin'), dtype=np.float32).reshape(shape))
layers = []
for i in range(len(dims) - 1):
    lin = torch.nn.Linear(dims[i], dims[i + 1])
    with torch.no_grad():
        lin.weight.copy_(load('w%d' % i, (dims[i + 1], dims[i])))
        lin.bias.copy_(load('b%d' % i, (dims[i + 1],)))
    layers.append(lin)
class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for i, lin in enumerate(layers):
            setattr(self, 'fc%d' % i, lin)
    def forward(self, x):
        for i in range(len(layers)):
            x = getattr(self, 'fc%d' % i)(x)
            if i + 1 < len(layers):
                x = torch.relu(x)
        return x
model = Mlp()
names = ['fc%d' % i for i in range(len(layers))]
def keep(mod, fqn):
    if not isinstance(mod, torch.nn.Linear):
        return True
    return fqn not in (names[0], names[-1]) and mod.in_features % 16 == 0 and mod.out_features % 16 == 0
convert_to_float8_training(model, module_filter_fn=keep, config=Float8LinearConfig(emulate=not bf16))
print(' '.join(n for n in names if type(getattr(model, n)).__name__ == 'Float8Linear'))
x = load('x', (batch, dims[0])).clone().requires_grad_(True)
with torch.autocast('cpu', dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
    out = model(x)
print(out.dtype)
(out * load('seed', (batch, dims[-1]))).sum().backward()
out.detach().float().numpy().tofile(os.path.join(d, 'out.bin'))
x.grad.numpy().astype(np.float32).tofile(os.path.join(d, 'gx.bin'))
for i, lin in enumerate(layers):
    lin.weight.grad.numpy().astype(np.float32).tofile(os.path.join(d, 'gw%d.bin' % i))
    lin.bias.grad.numpy().astype(np.float32).tofile(os.path.join(d, 'gb%d.bin' % i))
)";

double relativeError(const torch::Tensor &ours, const torch::Tensor &theirs)
{
    const double scale = std::max(1e-30, theirs.abs().max().item<double>());
    return (ours - theirs).abs().max().item<double>() / scale;
}

Fp8Config configFor(Fp8Backend backend)
{
    Fp8Config config;
    config.backend = backend;
    return config;
}

// CPU autocast in `dtype` for the guard's lifetime, entered and left as the Accelerator does.
class CpuAutocast {
public:
    explicit CpuAutocast(at::ScalarType dtype)
    {
        at::autocast::set_autocast_enabled(at::kCPU, true);
        at::autocast::set_autocast_dtype(at::kCPU, dtype);
        at::autocast::increment_nesting();
    }
    ~CpuAutocast()
    {
        if (at::autocast::decrement_nesting() == 0)
            at::autocast::clear_cache();
        at::autocast::set_autocast_enabled(at::kCPU, false);
        at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    }
    CpuAutocast(const CpuAutocast &) = delete;
    CpuAutocast &operator=(const CpuAutocast &) = delete;
};

} // namespace

class tst_Fp8Linear : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // First: it needs a process that has not measured a GEMM yet.
    void gemmPathFollowsPolicyAndMeasurement();
    void castsAsTheFormatCodecDoes();
    void dynamicRecipeMatchesTorchao_data();
    void dynamicRecipeMatchesTorchao();
    void computeDtypeIsTheAutocastDtype_data();
    void computeDtypeIsTheAutocastDtype();
    void delayedScalingQuantisesWithLastStepsScale();
    void msAmpWeightsAndWeightGradientsOnTheirGrids();
    void conversionFilterAndScope();
    void msAmpOptimizerStateBytesAndUpdate();
    void threeDimensionalInputWithBiasTrains();
    void gemmRuleOnMeasuredCosts_data();
    void gemmRuleOnMeasuredCosts();
    void scaledMmKeepsTheHardwareGemmContract_data();
    void scaledMmKeepsTheHardwareGemmContract();
    void chunkCastsAreTheWholeWeightsCast();
};

void tst_Fp8Linear::castsAsTheFormatCodecDoes()
{
    // libtorch's float8 casts (saturating through clamp) agree with the scalar codec on every code's
    // neighbourhood.
    for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
        std::vector<float> values;
        for (int code = 0; code < 256; ++code) {
            const float v = decodeFloat8(uint8_t(code), format);
            values.insert(values.end(), {v, v * 1.03f, v * 0.97f, v * 1e3f});
        }
        auto x = torch::tensor(values);
        auto q = quantize(x, format, 1.0f).data.view(torch::kUInt8);
        for (size_t i = 0; i < values.size(); ++i)
            QCOMPARE(int(q[int64_t(i)].item<uint8_t>()), int(encodeFloat8Saturating(values[i], format)));
    }
}

void tst_Fp8Linear::dynamicRecipeMatchesTorchao_data()
{
    QTest::addColumn<bool>("autocast");
    QTest::addColumn<double>("tolerance");
    // Float32: _scaled_mm scales the product, torchao's emulation each operand (float32 rounding).
    QTest::newRow("float32") << false << 1e-6;
    // bf16 autocast: both run _scaled_mm with a bf16 result, and the layers around in bf16.
    QTest::newRow("bf16 autocast") << true << 0.0;
}

void tst_Fp8Linear::dynamicRecipeMatchesTorchao()
{
    QFETCH(bool, autocast);
    QFETCH(double, tolerance);
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (python.isEmpty())
        QSKIP("ACCEL_PYTHON is not set: run through ctest (torchao in the project's environment is the oracle)");
    const std::vector<int64_t> dims{32, 64, 48, 24, 16}; // fc2 (48 -> 24) is not a multiple of 16
    const int64_t batch = 8;
    torch::manual_seed(7);
    auto model = std::make_shared<Mlp>(dims);
    auto x = torch::randn({batch, dims[0]}) * 3;
    auto seed = torch::randn({batch, dims.back()});
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    for (size_t i = 0; i < model->layers.size(); ++i) {
        writeTensor(dir.filePath(QStringLiteral("w%1.bin").arg(i)), model->layers[i]->weight);
        writeTensor(dir.filePath(QStringLiteral("b%1.bin").arg(i)), model->layers[i]->bias);
    }
    writeTensor(dir.filePath(QStringLiteral("x.bin")), x);
    writeTensor(dir.filePath(QStringLiteral("seed.bin")), seed);
    QJsonArray dimsJson;
    for (int64_t d : dims)
        dimsJson.append(qint64(d));
    QFile meta(dir.filePath(QStringLiteral("meta.json")));
    QVERIFY(meta.open(QIODevice::WriteOnly));
    meta.write(QJsonDocument(QJsonObject{{QStringLiteral("dims"), dimsJson}, {QStringLiteral("batch"), qint64(batch)}})
                   .toJson());
    meta.close();
    const auto result = accel::test::runProgram(python,
                                                {QStringLiteral("-c"), QString::fromUtf8(torchaoScript), dir.path(),
                                                 autocast ? QStringLiteral("bf16") : QStringLiteral("fp32")},
                                                180000);
    if (result.exitCode != 0 && result.err.contains(QStringLiteral("No module named 'torchao'")))
        QSKIP("torchao is not installed in ACCEL_PYTHON");
    QVERIFY2(result.exitCode == 0, qPrintable(result.err.right(2000)));

    // torchao's GEMM is torch._scaled_mm (on the CPU too): the same kernel on both sides.
    auto config = configFor(Fp8Backend::Ao);
    config.gemm = Fp8GemmPolicy::ScaledMm;
    auto training = Fp8Training::create(config);
    QVERIFY(training);
    const auto conversion = (*training)->convert(model);
    QCOMPARE(conversion.converted, std::vector<std::string>({"fc1"}));
    // torchao converted the same layers, and its output has the autocast dtype.
    const QStringList said = result.out.trimmed().split(QLatin1Char('\n'));
    QCOMPARE(said.size(), 2);
    QCOMPARE(said[0].trimmed(), QStringLiteral("fc1"));
    QCOMPARE(said[1].trimmed(), autocast ? QStringLiteral("torch.bfloat16") : QStringLiteral("torch.float32"));
    QCOMPARE(conversion.kept.size(), size_t(3));

    auto input = x.clone().requires_grad_(true);
    torch::Tensor out;
    {
        std::optional<CpuAutocast> bf16;
        if (autocast)
            bf16.emplace(at::kBFloat16);
        auto scope = (*training)->scope();
        out = model->forward(input);
    }
    QCOMPARE(dtypeName(out.scalar_type()), dtypeName(autocast ? at::kBFloat16 : at::kFloat));
    (out * seed).sum().backward();

    const auto theirOut = readTensor(dir.filePath(QStringLiteral("out.bin")), {batch, dims.back()});
    QVERIFY(theirOut.defined());
    double worst = relativeError(out.detach().to(torch::kFloat), theirOut);
    QVERIFY2(worst <= tolerance, qPrintable(QStringLiteral("output differs by %1").arg(worst)));
    const auto theirGx = readTensor(dir.filePath(QStringLiteral("gx.bin")), {batch, dims[0]});
    QVERIFY2(relativeError(input.grad(), theirGx) <= tolerance,
             qPrintable(QStringLiteral("grad input differs by %1").arg(relativeError(input.grad(), theirGx))));
    for (size_t i = 0; i < model->layers.size(); ++i) {
        auto &layer = model->layers[i];
        const auto gw = readTensor(dir.filePath(QStringLiteral("gw%1.bin").arg(i)), layer->weight.sizes());
        const auto gb = readTensor(dir.filePath(QStringLiteral("gb%1.bin").arg(i)), layer->bias.sizes());
        QVERIFY2(
            relativeError(layer->weight.grad(), gw) <= tolerance,
            qPrintable(
                QStringLiteral("fc%1 weight grad differs by %2").arg(i).arg(relativeError(layer->weight.grad(), gw))));
        QVERIFY2(relativeError(layer->bias.grad(), gb) <= tolerance,
                 qPrintable(
                     QStringLiteral("fc%1 bias grad differs by %2").arg(i).arg(relativeError(layer->bias.grad(), gb))));
        worst = std::max({worst, relativeError(layer->weight.grad(), gw), relativeError(layer->bias.grad(), gb)});
    }
    qInfo("largest difference from torchao (relative to the largest value): %g", worst);
    // And FP8 made a difference: the plain float32 model's output is not the same.
    torch::NoGradGuard noGrad;
    QVERIFY(relativeError(model->forward(x), theirOut) > 1e-4);
}

void tst_Fp8Linear::computeDtypeIsTheAutocastDtype_data()
{
    QTest::addColumn<int>("backend");
    QTest::newRow("TE") << int(Fp8Backend::Te);
    QTest::newRow("AO") << int(Fp8Backend::Ao);
    QTest::newRow("MSAMP") << int(Fp8Backend::MsAmp);
}

void tst_Fp8Linear::computeDtypeIsTheAutocastDtype()
{
    // Under Accelerate's bf16 autocast each library's FP8 Linear returns bf16 (TransformerEngine's
    // activation dtype, torchao's and MS-AMP's output dtype), its GEMMs' results are bf16, and
    // TransformerEngine and torchao cast the input to bf16 before quantising it.
    QFETCH(int, backend);
    torch::manual_seed(11);
    auto model = std::make_shared<Mlp>(std::vector<int64_t>{32, 32, 32, 32});
    std::vector<float> reduced;
    auto training =
        Fp8Training::create(configFor(Fp8Backend(backend)), [&](std::vector<float> &amax) { reduced = amax; });
    QVERIFY(training);
    (*training)->convert(model);
    auto &fc1 = model->layers[1]; // converted by every recipe (AO keeps the first and the last)
    QVERIFY((*training)->layerFor(fc1->weight));
    auto x = torch::randn({8, 32}) * 2;
    x[0][0] = 10.123456f; // the amax, not a bf16 value
    const float bf16Amax = absMax(x.to(at::kBFloat16).to(torch::kFloat));
    QVERIFY(bf16Amax != absMax(x));
    const auto forward = [&](const torch::Tensor &input, bool autocast) {
        std::optional<CpuAutocast> bf16;
        if (autocast)
            bf16.emplace(at::kBFloat16);
        auto scope = (*training)->scope();
        return fc1(input);
    };
    {
        torch::NoGradGuard noGrad;
        QCOMPARE(dtypeName(forward(x, false).scalar_type()), dtypeName(at::kFloat));
    }
    auto input = x.clone().requires_grad_(true);
    auto out = forward(input, true);
    QCOMPARE(dtypeName(out.scalar_type()), dtypeName(at::kBFloat16));
    out.to(torch::kFloat).pow(2).sum().backward();
    // Autograd brings each gradient back to its tensor's dtype.
    QCOMPARE(dtypeName(input.grad().scalar_type()), dtypeName(at::kFloat));
    QCOMPARE(dtypeName(fc1->weight.grad().scalar_type()), dtypeName(at::kFloat));
    QVERIFY(fc1->weight.grad().abs().sum().item<float>() > 0);
    if (Fp8Backend(backend) == Fp8Backend::Te) {
        (*training)->afterBackward();
        QCOMPARE(reduced.size(), size_t(9)); // input, weight, grad_output of 3 layers
        QCOMPARE(reduced[3], bf16Amax);      // fc1's input amax: of the input cast to bf16
    }
    if (Fp8Backend(backend) == Fp8Backend::Ao) {
        // The scale comes from the bf16 input's amax: an input already in bf16 gives the same bits.
        torch::NoGradGuard noGrad;
        QVERIFY(torch::equal(forward(x, true), forward(x.to(at::kBFloat16), true)));
    }
}

void tst_Fp8Linear::delayedScalingQuantisesWithLastStepsScale()
{
    torch::manual_seed(3);
    auto layer = torch::nn::Linear(torch::nn::LinearOptions(32, 16).bias(false));
    auto config = configFor(Fp8Backend::Te);
    config.amaxHistoryLen = 4;
    std::vector<float> reduced;
    auto training = Fp8Training::create(config, [&](std::vector<float> &amax) { reduced = amax; });
    QVERIFY(training);
    torch::nn::Sequential root(layer);
    QCOMPARE((*training)->convert(root.ptr()).converted.size(), size_t(1));
    auto x1 = torch::randn({4, 32}) * 5, x2 = torch::randn({4, 32});
    auto run = [&](const torch::Tensor &x) {
        torch::Tensor out;
        {
            auto scope = (*training)->scope();
            out = layer(x);
        }
        out.sum().backward();
        (*training)->afterBackward();
        return out.detach();
    };
    // Step 1 quantises with scale 1 (nothing seen yet): exact whichever GEMM runs.
    const auto w = layer->weight.detach().clone();
    auto expected1 =
        torch::mm(dequantize(quantize(x1, Fp8Format::E4M3, 1.0f)), dequantize(quantize(w, Fp8Format::E4M3, 1.0f)).t());
    QVERIFY(torch::equal(run(x1), expected1));
    QCOMPARE(reduced.size(), size_t(3)); // input, weight, grad_output amaxes went to the all-reduce
    QCOMPARE(reduced[0], absMax(x1));
    // Step 2 uses 448 / step 1's amax for input and weight (HYBRID: E4M3 forward).
    const float sx = 448.0f / absMax(x1), sw = 448.0f / absMax(w);
    auto expected2 =
        torch::mm(dequantize(quantize(x2, Fp8Format::E4M3, sx)), dequantize(quantize(w, Fp8Format::E4M3, sw)).t());
    // (Within float32 rounding: the GEMM scales the product where the expectation scales each operand.)
    const double step2 = relativeError(run(x2), expected2);
    QVERIFY2(step2 < 1e-6, qPrintable(QStringLiteral("step 2 differs by %1").arg(step2)));
    // In evaluation mode (use_autocast_during_eval false) the layer runs in high precision.
    root->eval();
    torch::NoGradGuard noGrad;
    auto scope = (*training)->scope();
    QVERIFY(torch::equal(layer(x2), torch::mm(x2, w.t())));
}

void tst_Fp8Linear::msAmpWeightsAndWeightGradientsOnTheirGrids()
{
    torch::manual_seed(5);
    auto model = std::make_shared<Mlp>(std::vector<int64_t>{16, 32, 16});
    auto training = Fp8Training::create(configFor(Fp8Backend::MsAmp));
    QVERIFY(training);
    QCOMPARE((*training)->convert(model).converted.size(), size_t(2)); // MS-AMP converts every Linear
    for (const auto &w : (*training)->convertedWeights()) {
        // FP16 with a power-of-two scale: w * scale is an exact half.
        const float scale = powerOfTwoScalingFactor(absMax(w), 1.0f, 65504.0f);
        auto scaled = w.detach() * scale;
        QVERIFY(torch::equal(scaled.to(torch::kHalf).to(torch::kFloat), scaled));
    }
    {
        auto scope = (*training)->scope();
        model->forward(torch::randn({8, 16})).pow(2).sum().backward();
    }
    for (auto &layer : model->layers) {
        // The weight gradient is an E4M3 value times a power of two.
        auto g = layer->weight.grad();
        const float scale = powerOfTwoScalingFactor(absMax(g), 1.0f, 448.0f);
        QVERIFY(torch::equal(dequantize(quantize(g, Fp8Format::E4M3, scale)), g));
        QVERIFY(g.abs().sum().item<float>() > 0);
    }
}

void tst_Fp8Linear::conversionFilterAndScope()
{
    torch::manual_seed(9);
    auto model = std::make_shared<Mlp>(std::vector<int64_t>{16, 32, 32, 32, 16});
    auto training = Fp8Training::create(configFor(Fp8Backend::Ao));
    QVERIFY(training);
    const auto conversion = (*training)->convert(model);
    QCOMPARE(conversion.converted, std::vector<std::string>({"fc1", "fc2"}));
    QCOMPARE(conversion.kept.front().first, std::string("fc0"));
    QVERIFY(conversion.kept.front().second.find("first") != std::string::npos);
    QCOMPARE(conversion.kept.back().first, std::string("fc3"));
    // Outside a scope nothing changes; inside, the converted layers quantise.
    auto x = torch::randn({4, 16});
    torch::NoGradGuard noGrad;
    const auto plain = model->forward(x);
    torch::Tensor fp8;
    {
        auto scope = (*training)->scope();
        fp8 = model->forward(x);
    }
    QVERIFY(torch::equal(model->forward(x), plain));
    QVERIFY(!torch::equal(fp8, plain));
    QVERIFY(relativeError(fp8, plain) < 0.2);
    // 3-D input (F::linear takes the matmul path there): the same numbers as row by row.
    auto x3 = torch::randn({2, 3, 16});
    torch::Tensor fp8Rows, fp8Batch;
    {
        auto scope = (*training)->scope();
        fp8Batch = model->forward(x3);
        fp8Rows = model->forward(x3.reshape({6, 16})).reshape({2, 3, 16});
    }
    QVERIFY(!torch::equal(fp8Batch, model->forward(x3)));
    QVERIFY(relativeError(fp8Batch, fp8Rows) < 1e-6);
}

void tst_Fp8Linear::msAmpOptimizerStateBytesAndUpdate()
{
    torch::manual_seed(11);
    auto reference = std::make_shared<Mlp>(std::vector<int64_t>{16, 32, 8});
    int64_t parameters = 0;
    for (const auto &p : reference->parameters())
        parameters += p.numel();
    auto x = torch::randn({4, 16});
    auto copyOfReference = [&]() {
        auto model = std::make_shared<Mlp>(std::vector<int64_t>{16, 32, 8});
        torch::NoGradGuard copy;
        for (size_t i = 0; i < model->parameters().size(); ++i)
            model->parameters()[i].copy_(reference->parameters()[i]);
        return model;
    };
    auto adamwStep = [&](const std::shared_ptr<Mlp> &model, torch::optim::Optimizer &optimizer) {
        optimizer.zero_grad();
        model->forward(x).pow(2).sum().backward();
        optimizer.step();
    };
    auto plain = copyOfReference();
    torch::optim::AdamW plainOptimizer(plain->parameters(), torch::optim::AdamWOptions(1e-2));
    auto o1 = copyOfReference();
    torch::optim::AdamW o1Original(o1->parameters(), torch::optim::AdamWOptions(1e-2));
    MsAmpAdamW o1Optimizer(o1Original, MsAmpLevel::O1);
    auto o2 = copyOfReference();
    torch::optim::AdamW o2Original(o2->parameters(), torch::optim::AdamWOptions(1e-2));
    MsAmpAdamW o2Optimizer(o2Original, MsAmpLevel::O2);
    for (int step = 0; step < 3; ++step) {
        adamwStep(plain, plainOptimizer);
        adamwStep(o1, o1Optimizer);
        adamwStep(o2, o2Optimizer);
    }
    // O1: float32 moments, the same update as AdamW (up to float32 rounding).
    for (size_t i = 0; i < plain->parameters().size(); ++i)
        QVERIFY(relativeError(o1->parameters()[i], plain->parameters()[i]) < 1e-5);
    QCOMPARE(o1Optimizer.momentBytes(), 8 * parameters);
    // O2: one byte (E4M3) + two bytes (FP16) per parameter, and still close to AdamW.
    QCOMPARE(o2Optimizer.momentBytes(), 3 * parameters);
    double worst = 0;
    for (size_t i = 0; i < plain->parameters().size(); ++i)
        worst = std::max(worst, relativeError(o2->parameters()[i], plain->parameters()[i]));
    QVERIFY2(worst > 0 && worst < 0.05, qPrintable(QString::number(worst)));
    // Another optimizer is refused by name.
    torch::optim::SGD sgd(plain->parameters(), torch::optim::SGDOptions(0.1));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, MsAmpAdamW(sgd, MsAmpLevel::O2));
}

// Regression: F::linear adds the bias in place on 3-D input, and the FP8 output was a view of the
// custom function's result, which autograd forbids ("is a view and is being modified inplace").
void tst_Fp8Linear::threeDimensionalInputWithBiasTrains()
{
    torch::manual_seed(13);
    auto model = std::make_shared<Mlp>(std::vector<int64_t>{16, 32, 32, 16});
    auto training = Fp8Training::create(configFor(Fp8Backend::Te));
    QVERIFY(training);
    QCOMPARE((*training)->convert(model).converted.size(), size_t(3));
    auto x = torch::randn({2, 5, 16}, torch::requires_grad());
    torch::Tensor out;
    {
        auto scope = (*training)->scope();
        out = model->forward(x);
    }
    QCOMPARE(out.sizes(), (std::vector<int64_t>{2, 5, 16}));
    out.pow(2).sum().backward();
    QVERIFY(x.grad().defined());
    QVERIFY(model->layers[1]->bias.grad().abs().sum().item<float>() > 0);
}

QTEST_GUILESS_MAIN(tst_Fp8Linear)
// The CUDA GEMM (scaledMm: torch::_scaled_mm with the inverse scales, B column-major, K padded to
// a multiple of 16) cannot run here without a GPU; libtorch 2.x runs the same call on the CPU, so its
// contract is checked against the dequantised product: equal bit for bit with power-of-two scales
// (every product and the final scaling exact), within float32 rounding otherwise. Passing the
// scales instead of their inverses, or padding the wrong dimension, fails it; B's column-major
// layout is a CUDA requirement the CPU kernel does not check.
// The GEMM path: forced by the policy, else measured once per process and device and taken as
// measured. The two paths are different kernels (their products differ in the last bits), so each
// product shows which one ran; the counters the metrics lines report count it.
void tst_Fp8Linear::gemmPathFollowsPolicyAndMeasurement()
{
    if (!scaledMmRunsOn(c10::DeviceType::CPU))
        QSKIP("this libtorch has no torch::_scaled_mm on the CPU: the dequantised product is the only GEMM");
    torch::manual_seed(5);
    const auto a = torch::randn({32, 64}) * 3, b = torch::randn({64, 48}) * 0.05;
    const Fp8Tensor qa = quantize(a, Fp8Format::E4M3, 448.0f / absMax(a));
    const Fp8Tensor qb = quantize(b, Fp8Format::E4M3, 448.0f / absMax(b));
    const auto scaled = scaledMm(qa, qb, torch::kFloat, false);
    const auto dequantised = torch::mm(dequantize(qa), dequantize(qb));
    QVERIFY(!torch::equal(scaled, dequantised));
    QVERIFY(relativeError(scaled, dequantised) < 1e-6);
    takeFp8GemmCounts();

    QVERIFY(torch::equal(fp8Matmul(qa, qb, torch::kFloat, false, Fp8GemmPolicy::ScaledMm), scaled));
    QVERIFY(torch::equal(fp8Matmul(qa, qb, torch::kFloat, false, Fp8GemmPolicy::Dequantized), dequantised));
    auto counts = takeFp8GemmCounts();
    QCOMPARE(counts.scaledMm, int64_t(1));
    QCOMPARE(counts.dequantized, int64_t(1));
    QVERIFY(fp8GemmDecisions().empty()); // a forced path measures nothing (and nothing ran before)

    // auto: the CPU is measured at its first product, once, and that path runs for every shape.
    const auto product = fp8Matmul(qa, qb, torch::kFloat);
    const auto decisions = fp8GemmDecisions();
    QCOMPARE(decisions.size(), size_t(1));
    const Fp8GemmDecision &decision = decisions.front();
    QCOMPARE(decision.probeSize, int64_t(64));
    QVERIFY(decision.scaledMmSeconds > 0 && decision.dequantizedSeconds > 0);
    QVERIFY(decision.ratio > 0);
    QCOMPARE(decision.path, chooseFp8GemmPath(decision.ratio));
    QVERIFY2(decision.why.find(std::string("fp8 GEMM on cpu: ")) == 0, decision.why.c_str());
    QVERIFY2(decision.why.find(fp8GemmPathName(decision.path)) != std::string::npos, decision.why.c_str());
    QVERIFY(torch::equal(product, decision.path == Fp8GemmPath::ScaledMm ? scaled : dequantised));
    const auto other = quantize(torch::randn({64, 16}), Fp8Format::E4M3, 100.0f);
    fp8Matmul(qa, qb, torch::kFloat);
    fp8Matmul({other.data.t().contiguous(), other.scale}, {torch::ones({64, 8}).to(at::kFloat8_e4m3fn), 1.0f},
              torch::kFloat); // another shape: the same decision
    QCOMPARE(fp8GemmDecisions().size(), size_t(1));
    counts = takeFp8GemmCounts();
    QCOMPARE(decision.path == Fp8GemmPath::ScaledMm ? counts.scaledMm : counts.dequantized, int64_t(3));
    qInfo("%s", decision.why.c_str());
}

// The rule on measured costs, with the figures of the two CPUs the runtime has met: an EPYC
// (AVX-512, no AMX) where _scaled_mm costs about 1.2x the dequantised product, and an AMX Xeon
// where oneDNN runs its reference kernel (1183 ms against 1.06 ms at 512x128x512).
void tst_Fp8Linear::gemmRuleOnMeasuredCosts_data()
{
    QTest::addColumn<double>("ratio");
    QTest::addColumn<int>("path");
    QTest::newRow("equal") << 1.0 << int(Fp8GemmPath::ScaledMm);
    QTest::newRow("EPYC: 1.2x") << 1.156 / 0.992 << int(Fp8GemmPath::ScaledMm);
    QTest::newRow("3x, noise on a loaded machine") << 3.0 << int(Fp8GemmPath::ScaledMm);
    QTest::newRow("4x") << 4.0 << int(Fp8GemmPath::Dequantized);
    QTest::newRow("AMX Xeon reference kernel") << 1183 / 1.06 << int(Fp8GemmPath::Dequantized);
}

void tst_Fp8Linear::gemmRuleOnMeasuredCosts()
{
    QFETCH(double, ratio);
    QFETCH(int, path);
    QCOMPARE(chooseFp8GemmPath(ratio), Fp8GemmPath(path));
}

void tst_Fp8Linear::scaledMmKeepsTheHardwareGemmContract_data()
{
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("leftFormat");
    QTest::addColumn<int>("rightFormat");
    QTest::addColumn<bool>("pad");
    QTest::newRow("forward E4M3 x E4M3, K 64") << 64 << int(Fp8Format::E4M3) << int(Fp8Format::E4M3) << false;
    QTest::newRow("forward, K 40 padded to 48") << 40 << int(Fp8Format::E4M3) << int(Fp8Format::E4M3) << true;
    QTest::newRow("grad_input E5M2 x E4M3, K 40 padded") << 40 << int(Fp8Format::E5M2) << int(Fp8Format::E4M3) << true;
    QTest::newRow("grad_weight E5M2 x E4M3, K 24") << 24 << int(Fp8Format::E5M2) << int(Fp8Format::E4M3) << false;
}

void tst_Fp8Linear::scaledMmKeepsTheHardwareGemmContract()
{
    QFETCH(int, k);
    QFETCH(int, leftFormat);
    QFETCH(int, rightFormat);
    QFETCH(bool, pad);
    torch::manual_seed(11);
    const auto a = torch::randn({24, k}) * 3, b = torch::randn({k, 40}) * 0.05;
    const auto leftF = Fp8Format(leftFormat), rightF = Fp8Format(rightFormat);
    QString error;
    const auto check = [&](float sa, float sb) {
        const Fp8Tensor qa = quantize(a, leftF, sa), qb = quantize(b, rightF, sb);
        try {
            const torch::Tensor ours = scaledMm(qa, qb, torch::kFloat, pad);
            if (ours.sizes() != torch::IntArrayRef({24, 40}))
                return 1.0;
            return relativeError(ours, torch::mm(dequantize(qa), dequantize(qb)));
        } catch (const std::exception &e) {
            error = QString::fromUtf8(e.what()).section(QLatin1Char('\n'), 0, 0);
            return -1.0;
        }
    };
    // Powers of two: exact.
    const double exact = check(16.0f, 2048.0f);
    if (exact < 0 && error.contains(QLatin1String("CPU")) &&
        (error.contains(QLatin1String("not implemented")) || error.contains(QLatin1String("Could not run"))))
        QSKIP(qPrintable(QStringLiteral("this libtorch has no torch::_scaled_mm on the CPU: ") + error));
    QVERIFY2(exact >= 0, qPrintable(error));
    QCOMPARE(exact, 0.0);
    // The scales a recipe computes (448 / amax): float32 rounding of the final scaling only.
    const float sa = float(fp8MaxFinite(leftF) / a.abs().max().item<double>());
    const float sb = float(fp8MaxFinite(rightF) / b.abs().max().item<double>());
    const double rounded = check(sa, sb);
    QVERIFY2(rounded >= 0, qPrintable(error));
    QVERIFY2(rounded < 1e-6, qPrintable(QString::number(rounded)));
}

// The FSDP2 float8 all-gather's pieces (fp8allgather.h): three weights in one flat parameter padded
// to 3 ranks (chunks of 19 elements that split the first weight, hold the second and the third in
// parts, and end in padding). The maximum of the chunks' per-weight amaxes is each whole weight's,
// and the chunks' codes, cast with the scale of that amax, put together are the bytes of quantising
// each whole weight (a weight is scaled so that it saturates: clamped the same way), padding 0.
void tst_Fp8Linear::chunkCastsAreTheWholeWeightsCast()
{
    torch::manual_seed(17);
    const std::vector<torch::Tensor> weights{torch::randn({5, 7}), torch::randn({4, 3}) * 100,
                                             torch::randn({9}) * 1e-3};
    Fp8FlatLayout layout;
    int64_t total = 0;
    for (const auto &w : weights) {
        layout.offsets.push_back(total);
        layout.numels.push_back(w.numel());
        total += w.numel();
    }
    const int64_t ranks = 3, chunk = (total + ranks - 1) / ranks;
    auto flat = torch::zeros({chunk * ranks});
    for (size_t i = 0; i < weights.size(); ++i)
        flat.narrow(0, layout.offsets[i], layout.numels[i]).copy_(weights[i].flatten());
    std::vector<float> amax(weights.size(), 0.0f);
    for (int64_t r = 0; r < ranks; ++r) {
        const auto part = fp8ChunkAmax(flat.narrow(0, r * chunk, chunk), r * chunk, layout);
        QCOMPARE(part.size(), weights.size());
        for (size_t i = 0; i < amax.size(); ++i)
            amax[i] = std::max(amax[i], part[i]);
    }
    std::vector<float> scales;
    for (size_t i = 0; i < weights.size(); ++i) {
        QCOMPARE(amax[i], absMax(weights[i]));
        // The second weight's scale doubled: its largest elements land beyond 448 and saturate.
        scales.push_back(dynamicScalingFactor(amax[i], 448.0f) * (i == 1 ? 2.0f : 1.0f));
    }
    std::vector<torch::Tensor> chunks;
    for (int64_t r = 0; r < ranks; ++r)
        chunks.push_back(fp8CastChunk(flat.narrow(0, r * chunk, chunk), r * chunk, layout, scales));
    const auto codes = torch::cat(chunks);
    QCOMPARE(dtypeName(codes.scalar_type()), dtypeName(torch::kUInt8));
    QCOMPARE(codes.numel(), chunk * ranks);
    for (size_t i = 0; i < weights.size(); ++i) {
        const auto whole = quantize(weights[i], Fp8Format::E4M3, scales[i]).data.view(torch::kUInt8).flatten();
        QVERIFY2(torch::equal(codes.narrow(0, layout.offsets[i], layout.numels[i]), whole),
                 qPrintable(QStringLiteral("weight %1").arg(i)));
    }
    QCOMPARE(codes.narrow(0, total, chunk * ranks - total).sum().item<int64_t>(), int64_t(0));
    // +-448 (0x7E / 0xFE) where the second weight saturates, not NaN.
    QVERIFY(codes.narrow(0, layout.offsets[1], layout.numels[1]).bitwise_and(0x7F).eq(0x7E).any().item<bool>());
}

#include "tst_fp8linear.moc"
