// `accel bench fp8`: bad input is refused with exit 2, and a short real run of two precisions on
// both model shapes produces the table, the JSON result and the loss-curve PNG; --seeds averages
// each precision over seeds, paired with bf16 seed by seed.
#include "tests/helpers/testsupport.h"

#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

class tst_BenchFp8 : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void badInputIsRefused();
    void shortRunWritesTableJsonAndPng();
    void seedsAreAveragedPairedWithBf16();
};

void tst_BenchFp8::badInputIsRefused()
{
    auto unknown = accel::test::runAccel({QStringLiteral("bench"), QStringLiteral("fp9")});
    QCOMPARE(unknown.exitCode, 2);
    QVERIFY(unknown.err.contains(QStringLiteral("fp9")));
    auto precision = accel::test::runAccel(
        {QStringLiteral("bench"), QStringLiteral("fp8"), QStringLiteral("--only"), QStringLiteral("fp32,fp7")});
    QCOMPARE(precision.exitCode, 2);
    QVERIFY(precision.err.contains(QStringLiteral("fp7")));
    auto shape = accel::test::runAccel(
        {QStringLiteral("bench"), QStringLiteral("fp8"), QStringLiteral("--shapes"), QStringLiteral("gpt,gpt-huge")});
    QCOMPARE(shape.exitCode, 2);
    QVERIFY(shape.err.contains(QStringLiteral("--shapes: unknown shape 'gpt-huge'")));
    auto steps = accel::test::runAccel(
        {QStringLiteral("bench"), QStringLiteral("fp8"), QStringLiteral("--steps"), QStringLiteral("many")});
    QCOMPARE(steps.exitCode, 2);
    auto seeds = accel::test::runAccel(
        {QStringLiteral("bench"), QStringLiteral("fp8"), QStringLiteral("--seeds"), QStringLiteral("0")});
    QCOMPARE(seeds.exitCode, 2);
    QVERIFY(seeds.err.contains(QStringLiteral("--seeds")));
    auto jobs = accel::test::runAccel(
        {QStringLiteral("bench"), QStringLiteral("fp8"), QStringLiteral("--jobs"), QStringLiteral("0")});
    QCOMPARE(jobs.exitCode, 2);
    QVERIFY(jobs.err.contains(QStringLiteral("--jobs")));
    auto help = accel::test::runAccel({QStringLiteral("bench"), QStringLiteral("--help")});
    QCOMPARE(help.exitCode, 0);
    QVERIFY(help.out.contains(QStringLiteral("--steps")));
}

void tst_BenchFp8::shortRunWritesTableJsonAndPng()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    auto result =
        accel::test::runAccel({QStringLiteral("bench"), QStringLiteral("fp8"), QStringLiteral("--steps"),
                               QStringLiteral("20"), QStringLiteral("--only"), QStringLiteral("bf16,fp8-msamp-o2"),
                               QStringLiteral("--out"), dir.path(), QStringLiteral("--json")},
                              600000);
    QVERIFY2(result.exitCode == 0, qPrintable(result.err.right(3000)));
    const auto json = QJsonDocument::fromJson(result.out.toUtf8()).object();
    QCOMPARE(json.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.bench-fp8"));
    const QJsonArray runs = json.value(QStringLiteral("runs")).toArray();
    QCOMPARE(runs.size(), 4); // two shapes x two precisions
    // Progress: one JSON line per event on stderr, each run started and finished in order.
    QStringList finished;
    for (const QString &line : result.err.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QJsonObject event = QJsonDocument::fromJson(line.toUtf8()).object();
        if (event.value(QStringLiteral("schema")).toString() != QLatin1String("accel.bench-fp8.progress"))
            continue;
        QCOMPARE(event.value(QStringLiteral("runs")).toInt(), 4);
        QCOMPARE(event.value(QStringLiteral("steps")).toInt(), 20);
        if (event.value(QStringLiteral("state")).toString() == QLatin1String("finished"))
            finished << event.value(QStringLiteral("shape")).toString() + QLatin1Char('/') +
                            event.value(QStringLiteral("precision")).toString();
    }
    QCOMPARE(finished, QStringList({QStringLiteral("gpt/bf16"), QStringLiteral("gpt/fp8-msamp-o2"),
                                    QStringLiteral("gpt-deep/bf16"), QStringLiteral("gpt-deep/fp8-msamp-o2")}));
    for (const auto &value : runs) {
        const QJsonObject run = value.toObject();
        QCOMPARE(run.value(QStringLiteral("loss")).toArray().size(), 10); // logged every 2 of 20 steps
        QCOMPARE(run.value(QStringLiteral("loss_at")).toArray().size(), 3);
        QVERIFY(run.value(QStringLiteral("step_time_s")).toDouble() > 0);
        QVERIFY(run.value(QStringLiteral("eval_loss")).toDouble() > 0);
        const double parameters = run.value(QStringLiteral("parameters")).toDouble();
        QVERIFY(parameters > 0);
        if (run.value(QStringLiteral("precision")).toString() == QLatin1String("fp8-msamp-o2")) {
            QVERIFY(run.value(QStringLiteral("fp8_linear_layers")).toInt() > 0);
            QCOMPARE(run.value(QStringLiteral("optimizer_state_bytes")).toDouble(), 3 * parameters);
        } else {
            QCOMPARE(run.value(QStringLiteral("optimizer_state_bytes")).toDouble(), 8 * parameters);
        }
    }
    QImage png(json.value(QStringLiteral("png")).toString());
    QVERIFY(!png.isNull());
    QCOMPARE(png.width(), 2 * 640);
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("table.txt"))));
}

// --seeds 2: every precision trained with seeds 42 and 43; the result's evaluation loss is the mean
// of the seeds', the difference to bf16 the mean of the per-seed differences (each against bf16 of
// the same seed) with its standard error; seed 42's figures are those of a run without --seeds;
// --jobs 3 trains the same runs at once to the same results.
void tst_BenchFp8::seedsAreAveragedPairedWithBf16()
{
    auto bench = [](const QString &out, const QString &seeds, const QString &jobs) {
        auto result = accel::test::runAccel(
            {QStringLiteral("bench"), QStringLiteral("fp8"), QStringLiteral("--steps"), QStringLiteral("10"),
             QStringLiteral("--shapes"), QStringLiteral("gpt-tiny"), QStringLiteral("--only"),
             QStringLiteral("bf16,fp8-te"), QStringLiteral("--seeds"), seeds, QStringLiteral("--jobs"), jobs,
             QStringLiteral("--out"), out, QStringLiteral("--json")},
            600000);
        // Qt's main thread is the one drawing the curves, whatever thread started a run first.
        const bool qtWarned = result.err.contains(QStringLiteral("not created in the main() thread"));
        return std::make_pair(qtWarned ? -1 : result.exitCode, QJsonDocument::fromJson(result.out.toUtf8()).object());
    };
    QTemporaryDir one, two, together;
    const auto [oneExit, single] = bench(one.path(), QStringLiteral("1"), QStringLiteral("1"));
    QCOMPARE(oneExit, 0);
    const auto [twoExit, paired] = bench(two.path(), QStringLiteral("2"), QStringLiteral("1"));
    QCOMPARE(twoExit, 0);
    // The same four runs, three at a time: the same results in the same order.
    const auto [togetherExit, parallel] = bench(together.path(), QStringLiteral("2"), QStringLiteral("3"));
    QCOMPARE(togetherExit, 0);
    QCOMPARE(paired.value(QStringLiteral("seeds")).toInt(), 2);
    const QJsonArray runs = paired.value(QStringLiteral("runs")).toArray();
    QCOMPARE(runs.size(), 2); // one entry per shape and precision
    const QJsonArray bf16 = runs[0].toObject().value(QStringLiteral("eval_loss_per_seed")).toArray();
    for (int i = 0; i < runs.size(); ++i) {
        const QJsonObject run = runs[i].toObject();
        QCOMPARE(run.value(QStringLiteral("seeds")).toArray(), QJsonArray({42, 43}));
        const QJsonArray evals = run.value(QStringLiteral("eval_loss_per_seed")).toArray();
        const QJsonArray differences = run.value(QStringLiteral("eval_loss_vs_bf16_percent_per_seed")).toArray();
        QCOMPARE(evals.size(), 2);
        QVERIFY(evals[0].toDouble() != evals[1].toDouble()); // another seed, another run
        QCOMPARE(run.value(QStringLiteral("eval_loss")).toDouble(), (evals[0].toDouble() + evals[1].toDouble()) / 2);
        for (int seed = 0; seed < 2; ++seed)
            QCOMPARE(differences[seed].toDouble(),
                     (evals[seed].toDouble() - bf16[seed].toDouble()) / bf16[seed].toDouble() * 100);
        QCOMPARE(run.value(QStringLiteral("eval_loss_vs_bf16_percent")).toDouble(),
                 (differences[0].toDouble() + differences[1].toDouble()) / 2);
        // The standard error of the mean of two: half their distance.
        QCOMPARE(run.value(QStringLiteral("eval_loss_vs_bf16_percent_se")).toDouble(),
                 std::abs(differences[0].toDouble() - differences[1].toDouble()) / 2);
        const QJsonObject sameRun = parallel.value(QStringLiteral("runs")).toArray()[i].toObject();
        QCOMPARE(sameRun.value(QStringLiteral("precision")), run.value(QStringLiteral("precision")));
        QCOMPARE(sameRun.value(QStringLiteral("eval_loss_per_seed")).toArray(), evals);
        QCOMPARE(sameRun.value(QStringLiteral("loss")), run.value(QStringLiteral("loss")));
        // Seed 42 is the run without --seeds, bit for bit.
        const QJsonObject alone = single.value(QStringLiteral("runs")).toArray()[i].toObject();
        QCOMPARE(alone.value(QStringLiteral("eval_loss")).toDouble(), evals[0].toDouble());
    }
    QVERIFY(QFileInfo::exists(two.filePath(QStringLiteral("gpt-tiny/fp8-te/seed43/metrics.jsonl"))));
}

QTEST_GUILESS_MAIN(tst_BenchFp8)
#include "tst_benchfp8.moc"
