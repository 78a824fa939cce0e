// fp16 dynamic loss scaling (core/runtime/gradscaler.h) step for step against PyTorch's own
// torch.amp.GradScaler run by the project's Python environment on the same gradients: the same
// skipped steps, the same scale after every step, the same parameters.
#include "core/runtime/gradscaler.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTest>

#include <limits>

class tst_GradScaler : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesPyTorchsGradScaler();
};

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
const std::vector<std::vector<double>> kGradients = {{0.5, 0.25}, {inf, 1}, {1, 1},     {1, 1}, {1, 1},       {1, 1},
                                                     {NAN, 0},    {2, -2},  {0.125, 4}, {1, 1}, {-inf, -inf}, {3, 0.5}};

const char *kPython = R"(
import json, torch
p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
opt = torch.optim.SGD([p], lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
out = []
for g in json.loads(input()):
    opt.zero_grad()
    p.grad = scaler.scale(torch.tensor(g))  # the scaled gradient backward would give
    scaler.step(opt)
    scaler.update()
    out.append([scaler.get_scale()] + p.tolist())
print(json.dumps(out))
)";

} // namespace

void tst_GradScaler::matchesPyTorchsGradScaler()
{
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        QSKIP("the project's Python environment (ACCEL_PYTHON) is not installed: run packaging/install-deps.sh");

    accel::runtime::GradScalerOptions options;
    options.initScale = 1024;
    options.growthInterval = 3;
    accel::runtime::GradScaler scaler(torch::kCPU, options);
    auto p = torch::tensor({1.0f, 2.0f}).requires_grad_(true);
    torch::optim::SGD sgd({p}, torch::optim::SGDOptions(0.1));
    QStringList rows; // Python's json reads NaN and Infinity
    const auto number = [](double x) {
        return std::isnan(x)   ? QString("NaN")
               : std::isinf(x) ? QString(x > 0 ? "Infinity" : "-Infinity")
                               : QString::number(x);
    };
    std::vector<std::vector<double>> ours;
    for (const auto &g : kGradients) {
        rows << "[" + number(g[0]) + "," + number(g[1]) + "]";
        p.mutable_grad() = torch::tensor({float(g[0]), float(g[1])}) * float(scaler.scaleValue());
        scaler.step({p}, [&] { sgd.step(); });
        ours.push_back({scaler.scaleValue(), p[0].item<double>(), p[1].item<double>()});
    }
    QProcess process;
    process.start(python, {"-c", kPython});
    process.write(("[" + rows.join(",") + "]\n").toUtf8());
    process.closeWriteChannel();
    QVERIFY(process.waitForFinished(120000));
    QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
    const QJsonArray theirs = QJsonDocument::fromJson(process.readAllStandardOutput()).array();
    QCOMPARE(theirs.size(), int(ours.size()));
    for (int i = 0; i < theirs.size(); ++i) {
        const QJsonArray row = theirs[i].toArray();
        QCOMPARE(ours[size_t(i)][0], row[0].toDouble()); // the scale: exact
        QVERIFY2(std::abs(ours[size_t(i)][1] - row[1].toDouble()) < 1e-6 &&
                     std::abs(ours[size_t(i)][2] - row[2].toDouble()) < 1e-6,
                 qPrintable(QString("step %1: ours %2 %3, PyTorch %4 %5")
                                .arg(i)
                                .arg(ours[size_t(i)][1])
                                .arg(ours[size_t(i)][2])
                                .arg(row[1].toDouble())
                                .arg(row[2].toDouble())));
    }
    // The sequence really exercised both rules: backoff on the first inf, growth after 3 clean steps.
    QCOMPARE(ours[1][0], 512.0);
    QCOMPARE(ours[4][0], 1024.0);
}

QTEST_GUILESS_MAIN(tst_GradScaler)
#include "tst_gradscaler.moc"
