// runtime::FusedAdamW (core/runtime/fusedadamw.h) against torch::optim::AdamW: the same update
// within float rounding, step after step, with weight decay and several groups; amsgrad through
// torch::optim::AdamW itself; the state in AdamWParamState, so a checkpoint of one loads into the other.
#include "core/runtime/fusedadamw.h"

#include <QTest>

#include <torch/torch.h>

using accel::runtime::FusedAdamW;

namespace {

std::vector<torch::Tensor> makeParameters()
{
    torch::manual_seed(3);
    return {torch::randn({64, 33}).requires_grad_(), torch::randn({33}).requires_grad_(),
            torch::randn({7, 5, 3}).requires_grad_()};
}

torch::optim::AdamWOptions options(bool amsgrad = false)
{
    return torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.05).amsgrad(amsgrad);
}

// The same gradients for both optimizers: step k's gradient of parameter i is seeded by (k, i).
void setGradients(std::vector<torch::Tensor> &parameters, int step)
{
    for (size_t i = 0; i < parameters.size(); ++i) {
        torch::manual_seed(100 * step + int(i));
        parameters[i].mutable_grad() = torch::randn_like(parameters[i]);
    }
}

double largestRelativeDifference(const std::vector<torch::Tensor> &a, const std::vector<torch::Tensor> &b)
{
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, ((a[i] - b[i]).abs().max() / b[i].abs().max()).item<double>());
    return worst;
}

} // namespace

class tst_FusedAdamW : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sameUpdateAsAdamW()
    {
        auto fusedParameters = makeParameters(), plainParameters = makeParameters();
        // Two groups with different learning rates, as a program's optimizer may have.
        FusedAdamW fused({torch::optim::OptimizerParamGroup({fusedParameters[0], fusedParameters[1]},
                                                            std::make_unique<torch::optim::AdamWOptions>(options())),
                          torch::optim::OptimizerParamGroup(
                              {fusedParameters[2]}, std::make_unique<torch::optim::AdamWOptions>(options().lr(1e-2)))},
                         options());
        torch::optim::AdamW plain(
            {torch::optim::OptimizerParamGroup({plainParameters[0], plainParameters[1]},
                                               std::make_unique<torch::optim::AdamWOptions>(options())),
             torch::optim::OptimizerParamGroup({plainParameters[2]},
                                               std::make_unique<torch::optim::AdamWOptions>(options().lr(1e-2)))},
            options());
        const auto before = plainParameters[0].detach().clone();
        for (int step = 1; step <= 6; ++step) {
            setGradients(fusedParameters, step);
            setGradients(plainParameters, step);
            fused.step();
            plain.step();
        }
        // Only the order of operations inside an element differs: float32 rounding, not a different rule
        // (a missed bias correction or weight decay is off by 1e-3 and more here).
        QVERIFY2(largestRelativeDifference(fusedParameters, plainParameters) < 2e-6,
                 qPrintable(QString::number(largestRelativeDifference(fusedParameters, plainParameters))));
        QVERIFY((plainParameters[0] - before).abs().max().item<double>() > 1e-2); // it did train
        for (size_t i = 0; i < fusedParameters.size(); ++i) {
            const auto &a = static_cast<const torch::optim::AdamWParamState &>(
                *fused.state().at(fusedParameters[i].unsafeGetTensorImpl()));
            const auto &b = static_cast<const torch::optim::AdamWParamState &>(
                *plain.state().at(plainParameters[i].unsafeGetTensorImpl()));
            QCOMPARE(a.step(), int64_t(6));
            QCOMPARE(a.step(), b.step());
            QVERIFY(torch::allclose(a.exp_avg(), b.exp_avg(), 1e-6, 1e-7));
            QVERIFY(torch::allclose(a.exp_avg_sq(), b.exp_avg_sq(), 1e-6, 1e-9));
        }
    }

    void amsgradIsAdamWsOwnStep()
    {
        auto fusedParameters = makeParameters(), plainParameters = makeParameters();
        FusedAdamW fused(fusedParameters, options(true));
        torch::optim::AdamW plain(plainParameters, options(true));
        for (int step = 1; step <= 3; ++step) {
            setGradients(fusedParameters, step);
            setGradients(plainParameters, step);
            fused.step();
            plain.step();
        }
        for (size_t i = 0; i < fusedParameters.size(); ++i)
            QVERIFY(torch::equal(fusedParameters[i], plainParameters[i]));
    }

    void stateLoadsIntoAdamW()
    {
        auto fusedParameters = makeParameters(), plainParameters = makeParameters();
        FusedAdamW fused(fusedParameters, options());
        torch::optim::AdamW plain(plainParameters, options());
        for (int step = 1; step <= 2; ++step) {
            setGradients(fusedParameters, step);
            setGradients(plainParameters, step);
            fused.step();
            plain.step();
        }
        // The fused optimizer's checkpoint, read by a torch::optim::AdamW over copies of its parameters:
        // both continue alike.
        torch::serialize::OutputArchive archive;
        fused.save(archive);
        std::ostringstream bytes;
        archive.save_to(bytes);
        std::vector<torch::Tensor> resumed;
        for (const auto &p : fusedParameters)
            resumed.push_back(p.detach().clone().requires_grad_());
        torch::optim::AdamW reader(resumed, options());
        torch::serialize::InputArchive input;
        std::istringstream in(bytes.str());
        input.load_from(in);
        reader.load(input);
        setGradients(fusedParameters, 3);
        setGradients(resumed, 3);
        fused.step();
        reader.step();
        QVERIFY2(largestRelativeDifference(fusedParameters, resumed) < 2e-6,
                 qPrintable(QString::number(largestRelativeDifference(fusedParameters, resumed))));
    }
};

QTEST_APPLESS_MAIN(tst_FusedAdamW)
#include "tst_fusedadamw.moc"
