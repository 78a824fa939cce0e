// MS-AMP's FP8 all-reduce of weight gradients (O1 and O2 under DDP, fp8allreduce.h): the E4M3 sum
// rounds every addition, and on 2 real gloo ranks the reduced gradients are bit for bit the
// formula computed here from the ranks' FP8 gradients (shared power-of-two scale over sqrt(W), codes
// summed in E4M3, divided by scale and W), while training follows one process within FP8
// tolerance.
#include "core/runtime/precision/fp8allreduce.h"

#include "tests/helpers/rankjob.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <c10/util/Float8_e4m3fn.h>

#include <cmath>
#include <cstring>

using namespace accel::runtime;

namespace {

QByteArray readAll(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

std::vector<float> floats(const QByteArray &bytes)
{
    std::vector<float> values(size_t(bytes.size()) / sizeof(float));
    std::memcpy(values.data(), bytes.constData(), values.size() * sizeof(float));
    return values;
}

float e4m3(float value) // saturating, round to nearest even (c10's cast after the clamp)
{
    return float(c10::Float8_e4m3fn(std::clamp(value, -448.0f, 448.0f)));
}

float decodeE4m3(uint8_t code)
{
    return float(c10::Float8_e4m3fn(code, c10::Float8_e4m3fn::from_bits()));
}

std::vector<double> lossesOf(const QString &path)
{
    std::vector<double> values;
    for (const QByteArray &line : readAll(path).split('\n')) {
        if (!line.isEmpty())
            values.push_back(std::strtod(line.constData(), nullptr));
    }
    return values;
}

// Runs the probe on `world` ranks (1: one process, no rendezvous); false with the output on failure.
bool runProbe(int world, const QString &out, const QStringList &arguments, QString *output)
{
    accel::test::RankJob job;
    job.program = QDir(accel::test::binDir()).filePath(QStringLiteral("accel-runtime-probe"));
    job.arguments = QStringList{QStringLiteral("fp8allreduce"), QStringLiteral("out=") + out} + arguments;
    job.worldSize = world;
    job.rankVariablesWhenAlone = false;
    job.env = {QStringLiteral("ACCELERATE_MIXED_PRECISION=fp8"), QStringLiteral("ACCELERATE_FP8_BACKEND=MSAMP")};
    job.timeoutMs = 180000;
    bool ok = true;
    for (const accel::test::RankOutcome &rank : accel::test::runRankJob(job)) {
        *output += rank.out + rank.err;
        ok = ok && rank.ok();
    }
    return ok;
}

} // namespace

class tst_Fp8AllReduce : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (!QFile::exists(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-runtime-probe"))))
            QSKIP("accel-runtime-probe is not built");
    }

    void sumInE4m3RoundsEveryAddition()
    {
        auto codes = [](std::vector<float> values) {
            return torch::tensor(values).to(c10::ScalarType::Float8_e4m3fn).view(torch::kByte);
        };
        // 1 + 1/16 lies halfway between 1 and 1.125: ties to even gives 1. 448 + 448 saturates.
        // 3 ranks: 1 + 1/16 rounds to 1 before the third 1/16 is added, so the sum is 1, not 1.125.
        const auto three = Fp8GradientAllReduce::sumInE4m3({codes({1.0f}), codes({0.0625f}), codes({0.0625f})});
        QCOMPARE(three[0].item<float>(), 1.0f);
        QCOMPARE(Fp8GradientAllReduce::preScale(2), float(1.0 / std::sqrt(2.0)));
    }

    void twoRanksReduceInFp8BitExact()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QString output;
        QVERIFY2(runProbe(2, dir.path(),
                          {QStringLiteral("steps=3"), QStringLiteral("batch=8"), QStringLiteral("dump=3")}, &output),
                 qPrintable(output.right(3000)));
        int checked = 0;
        for (int step = 0; step < 3; ++step) {
            for (int w = 0; w < 3; ++w) { // a, b, c: every Linear is converted under MS-AMP
                auto base = [&](int rank) {
                    return dir.filePath(QStringLiteral("s%1_r%2_w%3").arg(step).arg(rank).arg(w));
                };
                float scale[2], amax[2];
                std::vector<float> local[2], reduced[2];
                QByteArray codes[2];
                for (int r = 0; r < 2; ++r) {
                    const QList<QByteArray> words =
                        readAll(base(r) + QStringLiteral("_scale.txt")).trimmed().split(' ');
                    QCOMPARE(words.size(), 2);
                    scale[r] = std::strtof(words[0].constData(), nullptr);
                    amax[r] = std::strtof(words[1].constData(), nullptr);
                    local[r] = floats(readAll(base(r) + QStringLiteral("_local.bin")));
                    reduced[r] = floats(readAll(base(r) + QStringLiteral("_reduced.bin")));
                    codes[r] = readAll(base(r) + QStringLiteral("_codes.bin"));
                    QVERIFY(!local[r].empty());
                    QCOMPARE(size_t(codes[r].size()), local[r].size());
                    QCOMPARE(reduced[r].size(), local[r].size());
                }
                // Each rank's own amax; one scale for both: 2^floor(log2(448 / max amax)) / sqrt(2).
                // The ranks trained on different samples. (Their amaxes may still be equal: under bf16
                // autocast the weight gradient is a bf16 value, with 8 significant bits.)
                QVERIFY(local[0] != local[1]);
                QCOMPARE(scale[0], scale[1]);
                const float shared = std::max(amax[0], amax[1]);
                QVERIFY(shared > 0 && std::isfinite(shared));
                const float expectedScale =
                    float(std::exp2(std::floor(std::log2(448.0f / shared)))) * float(1.0 / std::sqrt(2.0));
                QCOMPARE(scale[0], expectedScale);
                for (size_t i = 0; i < local[0].size(); ++i) {
                    for (int r = 0; r < 2; ++r) {
                        // The codes are the rank's gradient in E4M3 at the shared scale.
                        const float code = decodeE4m3(uint8_t(codes[r][qsizetype(i)]));
                        QCOMPARE(code, e4m3(local[r][i] * scale[r]));
                    }
                    // The sum in E4M3, then / scale / W: the same bits on both ranks.
                    const float sum =
                        e4m3(decodeE4m3(uint8_t(codes[0][qsizetype(i)])) + decodeE4m3(uint8_t(codes[1][qsizetype(i)])));
                    const float expected = sum / scale[0] / 2.0f;
                    for (int r = 0; r < 2; ++r) {
                        if (std::memcmp(&expected, &reduced[r][i], sizeof(float)) != 0)
                            QFAIL(qPrintable(QStringLiteral("step %1 weight %2 element %3 rank %4: %5, expected %6")
                                                 .arg(step)
                                                 .arg(w)
                                                 .arg(i)
                                                 .arg(r)
                                                 .arg(double(reduced[r][i]), 0, 'g', 9)
                                                 .arg(double(expected), 0, 'g', 9)));
                    }
                    ++checked;
                }
                // Not the float average: some elements differ from (g0 + g1) / 2.
                size_t differ = 0;
                for (size_t i = 0; i < local[0].size(); ++i)
                    differ += reduced[0][i] != (local[0][i] + local[1][i]) / 2;
                QVERIFY(differ > 0);
            }
        }
        QCOMPARE(checked, 3 * (32 * 64 + 64 * 64 + 64 * 16));
    }

    void twoRanksTrainLikeOneProcess()
    {
        QTemporaryDir two, one;
        QVERIFY(two.isValid() && one.isValid());
        QString output;
        QVERIFY2(runProbe(2, two.path(),
                          {QStringLiteral("steps=30"), QStringLiteral("batch=8"), QStringLiteral("dump=0")}, &output),
                 qPrintable(output.right(3000)));
        QVERIFY2(runProbe(1, one.path(),
                          {QStringLiteral("steps=30"), QStringLiteral("batch=16"), QStringLiteral("dump=0")}, &output),
                 qPrintable(output.right(3000)));
        const auto rank0 = lossesOf(two.filePath(QStringLiteral("loss_r0.txt")));
        const auto rank1 = lossesOf(two.filePath(QStringLiteral("loss_r1.txt")));
        const auto single = lossesOf(one.filePath(QStringLiteral("loss_r0.txt")));
        QCOMPARE(rank0.size(), size_t(30));
        QCOMPARE(rank1.size(), size_t(30));
        QCOMPARE(single.size(), size_t(30));
        // The mean over the two halves is the one process's loss on the whole batch: equal at step
        // 0 (same weights), then within FP8 tolerance (the gradients took one more E4M3 rounding).
        double worst = 0;
        for (size_t s = 0; s < single.size(); ++s) {
            const double mean = (rank0[s] + rank1[s]) / 2;
            worst = std::max(worst, std::abs(mean - single[s]) / single[s]);
        }
        QVERIFY(std::abs((rank0[0] + rank1[0]) / 2 - single[0]) / single[0] < 1e-6);
        QVERIFY2(worst < 0.02, qPrintable(QStringLiteral("worst relative loss difference %1").arg(worst)));
        QVERIFY2(single.back() < 0.8 * single.front(), "the model did not train");
        // Both ranks hold the same weights; close to the one process's.
        const auto w0 = floats(readAll(two.filePath(QStringLiteral("weights_r0.bin"))));
        const auto w1 = floats(readAll(two.filePath(QStringLiteral("weights_r1.bin"))));
        const auto w = floats(readAll(one.filePath(QStringLiteral("weights_r0.bin"))));
        QCOMPARE(w0.size(), w.size());
        QVERIFY(w0 == w1);
        double difference = 0, norm = 0;
        for (size_t i = 0; i < w.size(); ++i) {
            difference += (w0[i] - w[i]) * (w0[i] - w[i]);
            norm += w[i] * w[i];
        }
        // Within one E4M3 step (2^-4 relative): the ranks also scale their inputs and output
        // gradients by their own amax, so FP8 rounds differently from one process at every GEMM.
        const double relative = std::sqrt(difference / norm);
        QVERIFY2(relative < 0.0625, qPrintable(QStringLiteral("relative weight difference %1").arg(relative)));
        qInfo("2 ranks vs 1 process, 30 steps: worst loss difference %.3g, weights %.3g", worst, relative);
    }

    // The previous scales in checkpoints. MS-AMP's rule uses a tensor's previous scale only after a
    // zero amax (kept, times 1/sqrt(W) again) or an infinite / NaN one (1 / previous, times 1/sqrt(W)):
    // 2 ranks train 5 steps and save; then a step with zero gradients and one with an infinite element
    // in b.weight's gradient, whose finite elements are cast with 1 / (previous scale). Resumed from
    // the checkpoint, those two steps give the uninterrupted run's scales, losses and every bit of the
    // weights; with the previous scales at 1 (what a checkpoint without them left) they do not.
    void resumeKeepsThePreviousScales()
    {
        QTemporaryDir straight, first, resumed, reset;
        QVERIFY(straight.isValid() && first.isValid() && resumed.isValid() && reset.isValid());
        const QStringList tail{QStringLiteral("steps=7"), QStringLiteral("batch=8"), QStringLiteral("dump=7"),
                               QStringLiteral("zero=5"), QStringLiteral("inf=6")};
        QString output;
        QVERIFY2(runProbe(2, straight.path(), tail, &output), qPrintable(output.right(3000)));
        QVERIFY2(runProbe(2, first.path(),
                          {QStringLiteral("steps=5"), QStringLiteral("batch=8"), QStringLiteral("dump=0"),
                           QStringLiteral("save=5")},
                          &output),
                 qPrintable(output.right(3000)));
        const QString checkpoint = first.filePath(QStringLiteral("checkpoint"));
        QVERIFY(QFile::exists(checkpoint + QStringLiteral("/optimizer.bin")));
        const QStringList resume{QStringLiteral("from=5"), QStringLiteral("resume=") + checkpoint};
        QVERIFY2(runProbe(2, resumed.path(), tail + resume, &output), qPrintable(output.right(3000)));
        QVERIFY2(runProbe(2, reset.path(), tail + resume + QStringList{QStringLiteral("reset_scales=1")}, &output),
                 qPrintable(output.right(3000)));

        const auto scale = [](const QTemporaryDir &dir, int step) {
            return readAll(dir.filePath(QStringLiteral("s%1_r0_w1_scale.txt").arg(step))).trimmed().split(' ').value(0);
        };
        for (int step : {5, 6}) {
            QVERIFY(!scale(straight, step).isEmpty());
            QCOMPARE(scale(resumed, step), scale(straight, step));
            QVERIFY2(scale(reset, step) != scale(straight, step), scale(reset, step).constData());
        }
        const auto losses = lossesOf(straight.filePath(QStringLiteral("loss_r0.txt")));
        const auto resumedLosses = lossesOf(resumed.filePath(QStringLiteral("loss_r0.txt")));
        QCOMPARE(losses.size(), size_t(7));
        QCOMPARE(resumedLosses.size(), size_t(2));
        QCOMPARE(resumedLosses[0], losses[5]); // 0: the zero-gradient step
        QCOMPARE(resumedLosses[1], losses[6]);
        const QByteArray weights = readAll(straight.filePath(QStringLiteral("weights_r0.bin")));
        QVERIFY(!weights.isEmpty());
        QVERIFY2(readAll(resumed.filePath(QStringLiteral("weights_r0.bin"))) == weights,
                 "resumed with the saved scales, the weights differ from the uninterrupted run's");
        QVERIFY2(readAll(reset.filePath(QStringLiteral("weights_r0.bin"))) != weights,
                 "with the previous scales at 1 the run still followed the uninterrupted one");
        qInfo("b.weight's all-reduce scale at the infinite step: %s uninterrupted and resumed, %s from scales at 1",
              scale(straight, 6).constData(), scale(reset, 6).constData());
    }
};

QTEST_GUILESS_MAIN(tst_Fp8AllReduce)
#include "tst_fp8allreduce.moc"
