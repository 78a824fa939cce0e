#include "monitor/stdoutmetricsparser.h"

#include <QtTest>

#include <cmath>

using namespace accel::monitor;

namespace {

double valueOf(const MetricBatch &batch, size_t row, const char *name)
{
    const MetricRow &r = batch.rows.at(row);
    for (std::uint32_t i = 0; i < r.valueCount; ++i) {
        const MetricValue &v = batch.values.at(r.firstValue + i);
        if (batch.names.at(static_cast<size_t>(v.name)) == name)
            return v.value;
    }
    return -12345.0;
}

} // namespace

class tst_StdoutMetricsParser : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void trainerDictLines()
    {
        StdoutMetricsParser parser;
        parser.setRank(1);
        MetricBatch batch;
        QCOMPARE(parser.parseLine(
                     QStringLiteral("{'loss': 2.3041, 'grad_norm': 1.25, 'learning_rate': 4.5e-05, 'epoch': 0.12}"),
                     100.0, batch),
                 1);
        QCOMPARE(
            parser.parseLine(QStringLiteral("{'eval_loss': 2.1, 'eval_runtime': 3.2, 'epoch': 1.0}"), 101.0, batch), 1);
        QCOMPARE(batch.rows.size(), size_t(2));
        QCOMPARE(batch.rows[0].rank, 1);
        QCOMPARE(batch.rows[0].time, 100.0);
        QCOMPARE(valueOf(batch, 0, "loss"), 2.3041);
        QCOMPARE(valueOf(batch, 0, "lr"), 4.5e-05);
        QCOMPARE(valueOf(batch, 0, "epoch"), 0.12);
        QCOMPARE(valueOf(batch, 1, "eval_loss"), 2.1);
        // No step printed anywhere: lines are numbered.
        QCOMPARE(batch.rows[0].step, std::int64_t(1));
        QCOMPARE(batch.rows[1].step, std::int64_t(2));
    }

    void keyValuePairs()
    {
        StdoutMetricsParser parser;
        MetricBatch batch;
        QCOMPARE(parser.parseLine(QStringLiteral("step=120 loss=2.31 lr=3e-4 tokens_per_s=1.5e4"), 1, batch), 1);
        QCOMPARE(parser.parseLine(QStringLiteral("Epoch: 2, loss: 1.75, acc: 0.61"), 1, batch), 1);
        // Lines naming no known metric, timestamps and versions are not metrics.
        QCOMPARE(parser.parseLine(QStringLiteral("2026-11-22 12:30:45 INFO workers=4 version=1.2"), 1, batch), 0);
        QCOMPARE(parser.parseLine(QStringLiteral("Downloading shard 3/7"), 1, batch), 0);
        QCOMPARE(batch.rows.size(), size_t(2));
        QCOMPARE(batch.rows[0].step, std::int64_t(120));
        QCOMPARE(valueOf(batch, 0, "loss"), 2.31);
        QCOMPARE(valueOf(batch, 0, "lr"), 3e-4);
        QCOMPARE(valueOf(batch, 0, "tokens_per_s"), 15000.0);
        QCOMPARE(valueOf(batch, 0, "step"), -12345.0);   // the step is the row's step, not a scalar
        QCOMPARE(batch.rows[1].step, std::int64_t(120)); // newest step seen
        QCOMPARE(valueOf(batch, 1, "epoch"), 2.0);
        QCOMPARE(valueOf(batch, 1, "acc"), 0.61);
    }

    void tqdmRatesAndCarriageReturns()
    {
        StdoutMetricsParser parser;
        MetricBatch batch;
        const QString progress = QStringLiteral(" 10%|#         | 10/100 [00:01<00:09, 9.87it/s]\r"
                                                " 20%|##        | 20/100 [00:02<00:08, 10.5it/s]\r"
                                                " 30%|###       | 30/100 [00:40<01:30,  1.52s/it]");
        QCOMPARE(parser.parseLine(progress, 5, batch), 3);
        QCOMPARE(batch.rows[0].step, std::int64_t(10));
        QCOMPARE(valueOf(batch, 0, "it_per_s"), 9.87);
        QCOMPARE(batch.rows[1].step, std::int64_t(20));
        QCOMPARE(valueOf(batch, 1, "it_per_s"), 10.5);
        QCOMPARE(batch.rows[2].step, std::int64_t(30));
        QCOMPARE(valueOf(batch, 2, "step_time_s"), 1.52);
        // A Trainer dict after the bar takes the bar's step.
        QCOMPARE(parser.parseLine(QStringLiteral("{'loss': 1.0, 'epoch': 0.3}"), 6, batch), 1);
        QCOMPARE(batch.rows[3].step, std::int64_t(30));
        // nan stays NaN
        QCOMPARE(parser.parseLine(QStringLiteral("loss=nan lr=0.1"), 7, batch), 1);
        QVERIFY(std::isnan(valueOf(batch, 4, "loss")));
    }
};

QTEST_GUILESS_MAIN(tst_StdoutMetricsParser)
#include "tst_stdoutmetricsparser.moc"
