#include "monitor/metricsparser.h"

#include <QtTest>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <random>

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
    return -12345.0; // not present
}

} // namespace

class tst_MetricsParser : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesDocumentedLine()
    {
        MetricsParser parser;
        MetricBatch batch;
        parser.feed("{\"v\":1,\"time\":1763771234.512,\"rank\":0,\"step\":120,\"loss\":2.314,\"lr\":0.0003,"
                    "\"samples_per_s\":512.0}\n",
                    batch);
        QCOMPARE(batch.rows.size(), size_t(1));
        const MetricRow &row = batch.rows[0];
        QCOMPARE(row.rank, 0);
        QCOMPARE(row.step, std::int64_t(120));
        QCOMPARE(row.time, 1763771234.512);
        QCOMPARE(row.kind, SampleKind::Train);
        QCOMPARE(row.valueCount, 3u);
        QCOMPARE(valueOf(batch, 0, "loss"), 2.314);
        QCOMPARE(valueOf(batch, 0, "lr"), 0.0003);
        QCOMPARE(valueOf(batch, 0, "samples_per_s"), 512.0);
        QCOMPARE(parser.stats().samples, std::int64_t(1));
        QCOMPARE(parser.stats().slowPath, std::int64_t(0));
    }

    void partialLinesAcrossChunksAndCrlf()
    {
        const QByteArray text = "{\"v\":1,\"time\":1.5,\"rank\":1,\"step\":1,\"loss\":3.0}\r\n"
                                "{\"v\":1,\"time\":2.5,\"rank\":1,\"step\":2,\"loss\":2.5}\r\n"
                                "{\"v\":1, \"time\": 3.5 , \"rank\":1,\"step\":3,\"loss\":2.0 }\n";
        // Every split point, including inside numbers, keys and the CR LF pair.
        for (qsizetype split = 0; split <= text.size(); ++split) {
            MetricsParser parser;
            MetricBatch batch;
            parser.feed(QByteArrayView(text).first(split), batch);
            parser.feed(QByteArrayView(text).sliced(split), batch);
            QCOMPARE(batch.rows.size(), size_t(3));
            QCOMPARE(valueOf(batch, 2, "loss"), 2.0);
            QCOMPARE(batch.rows[2].time, 3.5);
            QCOMPARE(parser.stats().junk, std::int64_t(0));
            QVERIFY(!parser.hasPendingBytes());
        }
        // Byte by byte.
        MetricsParser parser;
        MetricBatch batch;
        for (char c : text)
            parser.feed(QByteArrayView(&c, 1), batch);
        QCOMPARE(batch.rows.size(), size_t(3));
    }

    void trailingPartialLineWaitsUntilFinish()
    {
        MetricsParser parser;
        MetricBatch batch;
        parser.feed("{\"v\":1,\"time\":1,\"step\":1,\"loss\":1}\n{\"v\":1,\"time\":2,\"step\":2,\"loss\"", batch);
        QCOMPARE(batch.rows.size(), size_t(1));
        QVERIFY(parser.hasPendingBytes());
        parser.feed(":0.5}", batch);
        QCOMPARE(batch.rows.size(), size_t(1));
        parser.finish(batch);
        QCOMPARE(batch.rows.size(), size_t(2));
        QCOMPARE(valueOf(batch, 1, "loss"), 0.5);
    }

    void junkLinesAreSkippedAndCounted()
    {
        MetricsParser parser;
        MetricBatch batch;
        parser.feed("not json at all\n"
                    "{\"v\":1,\"time\":1,\"step\":1,\"loss\":1}\n"
                    "{\"v\":1,\"time\":1,\"step\":1,\"loss\":}\n"
                    "{\"v\":1,\"time\":1,\"step\":\"three\"}\n"
                    "{\"v\":1,\"time\":1,\"step\":1,\"loss\":1} trailing\n"
                    "{\"v\":1,\"time\":1,\"step\":1.5}\n"
                    "{}\n"
                    "[1,2,3]\n"
                    "\n"
                    "   \r\n"
                    "{\"v\":1,\"time\":2,\"step\":2,\"loss\":0.5}\n",
                    batch);
        QCOMPARE(batch.rows.size(), size_t(2));
        QCOMPARE(parser.stats().junk, std::int64_t(7));
        QCOMPARE(parser.stats().lines, std::int64_t(9));
        QCOMPARE(valueOf(batch, 1, "loss"), 0.5);
        // Values of rejected lines never leak into the batch.
        QCOMPARE(batch.values.size(), size_t(2));
    }

    void newerVersionIsRejected()
    {
        MetricsParser parser;
        MetricBatch batch;
        parser.feed("{\"v\":2,\"time\":1,\"step\":1,\"loss\":1}\n"
                    "{\"time\":1,\"v\":3,\"step\":1,\"loss\":{\"nested\":1}}\n"
                    "{\"v\":1.1,\"time\":1,\"step\":1,\"loss\":1}\n",
                    batch);
        QCOMPARE(parser.stats().futureVersion, std::int64_t(2));
        QCOMPARE(batch.rows.size(), size_t(1));
        QCOMPARE(batch.values.size(), size_t(1));
    }

    void nullAndNonFiniteBecomeNaN()
    {
        MetricsParser parser;
        MetricBatch batch;
        parser.feed("{\"v\":1,\"time\":1,\"step\":1,\"loss\":null,\"grad_norm\":NaN,\"x\":Infinity,\"y\":-Infinity}\n"
                    "{\"v\":1,\"time\":null,\"rank\":-1,\"kind\":\"system\",\"cpu_percent\":12.5}\n",
                    batch);
        QCOMPARE(batch.rows.size(), size_t(2));
        QVERIFY(std::isnan(valueOf(batch, 0, "loss")));
        QVERIFY(std::isnan(valueOf(batch, 0, "grad_norm")));
        QVERIFY(std::isnan(valueOf(batch, 0, "x")));
        QVERIFY(std::isnan(valueOf(batch, 0, "y")));
        QVERIFY(std::isnan(batch.rows[1].time));
        QCOMPARE(batch.rows[1].kind, SampleKind::System);
        QCOMPARE(batch.rows[1].step, kNoStep);
        QCOMPARE(batch.rows[1].rank, -1);
    }

    void hugeValues()
    {
        MetricsParser parser;
        MetricBatch batch;
        parser.feed("{\"v\":1,\"time\":1,\"step\":9007199254740993,\"a\":1e308,\"b\":1e999,\"c\":-1e999,\"d\":1e-999,"
                    "\"e\":123456789012345678901234567890}\n"
                    "{\"v\":1,\"time\":1,\"step\":99999999999999999999999}\n",
                    batch);
        QCOMPARE(batch.rows.size(), size_t(1));
        QCOMPARE(batch.rows[0].step, std::int64_t(9007199254740993LL));
        QCOMPARE(valueOf(batch, 0, "a"), 1e308);
        QVERIFY(std::isnan(valueOf(batch, 0, "b"))); // overflow is non-finite: NaN like null
        QVERIFY(std::isnan(valueOf(batch, 0, "c")));
        QCOMPARE(valueOf(batch, 0, "d"), 0.0);
        QCOMPARE(valueOf(batch, 0, "e"), 1.2345678901234568e29);
        QCOMPARE(parser.stats().junk, std::int64_t(1)); // a step beyond int64 is not a step
    }

    void unusualLinesUseTheFullParser()
    {
        MetricsParser parser;
        parser.setDefaultRank(3);
        MetricBatch batch;
        parser.feed("{\"v\":1,\"time\":5,\"step\":7,\"note\":\"say \\\"hi\\\"\",\"loss\":1.25,\"hist\":[1,2],"
                    "\"cfg\":{\"a\":1}}\n"
                    "{\"v\":1,\"time\":5,\"step\":8,\"we\\u00efrd\":2}\n"
                    "{\"v\":1,\"time\":5,\"step\":9,\"kind\":\"eval\",\"eval_loss\":1.0,\"ok\":true}\n",
                    batch);
        QCOMPARE(batch.rows.size(), size_t(3));
        QCOMPARE(parser.stats().slowPath, std::int64_t(2));
        QCOMPARE(batch.rows[0].rank, 3); // from the file name, as no "rank" key
        QCOMPARE(batch.rows[0].step, std::int64_t(7));
        QCOMPARE(batch.rows[0].valueCount, 1u);
        QCOMPARE(valueOf(batch, 0, "loss"), 1.25);
        QCOMPARE(valueOf(batch, 1, "we\xc3\xafrd"), 2.0);
        QCOMPARE(batch.rows[2].kind, SampleKind::Eval);
        QCOMPARE(valueOf(batch, 2, "eval_loss"), 1.0);
    }

    void keysInChangingOrderKeepTheirNames()
    {
        MetricsParser parser;
        MetricBatch batch;
        parser.feed("{\"v\":1,\"time\":1,\"step\":1,\"loss\":1,\"lr\":2}\n"
                    "{\"v\":1,\"time\":1,\"step\":2,\"lr\":3,\"loss\":4}\n"
                    "{\"v\":1,\"time\":1,\"step\":3,\"loss\":5}\n",
                    batch);
        QCOMPARE(batch.names.size(), size_t(2));
        QCOMPARE(valueOf(batch, 1, "lr"), 3.0);
        QCOMPARE(valueOf(batch, 1, "loss"), 4.0);
        QCOMPARE(valueOf(batch, 2, "loss"), 5.0);
    }

    void numbersMatchTheGeneralParser()
    {
        // The scanner's fast decimal path must give the same double as a correctly rounded parse.
        std::mt19937_64 random(42);
        std::uniform_real_distribution<double> mantissa(-10.0, 10.0);
        std::uniform_int_distribution<int> exponent(-30, 30);
        QByteArray text;
        std::vector<QByteArray> written;
        const char *formats[] = {"%.17g", "%.15g", "%.6g", "%.3f", "%.12e"};
        for (int i = 0; i < 5000; ++i) {
            char buffer[64];
            std::snprintf(buffer, sizeof buffer, formats[i % 5], mantissa(random) * std::pow(10.0, exponent(random)));
            written.emplace_back(buffer);
            text += "{\"v\":1,\"time\":1,\"step\":1,\"x\":" + QByteArray(buffer) + "}\n";
        }
        MetricsParser parser;
        MetricBatch batch;
        parser.feed(text, batch);
        QCOMPARE(batch.rows.size(), written.size());
        for (size_t i = 0; i < written.size(); ++i) {
            double expected = 0;
            std::from_chars(written[i].constData(), written[i].constData() + written[i].size(), expected);
            QVERIFY2(batch.values[i].value == expected, written[i].constData());
        }
    }

    void randomChunksAndGarbageNeverConfuseIt()
    {
        // Valid lines mixed with random garbage lines, fed in random chunk sizes: exactly the valid
        // lines come out, with their values, and nothing crashes.
        std::mt19937 random(1234);
        std::uniform_int_distribution<int> byte(1, 255);
        std::uniform_int_distribution<int> length(0, 80);
        QByteArray text;
        int valid = 0;
        for (int i = 0; i < 3000; ++i) {
            if (i % 3 == 0) {
                QByteArray garbage;
                const int n = length(random);
                for (int j = 0; j < n; ++j) {
                    const char c = static_cast<char>(byte(random));
                    garbage += c == '\n' ? ' ' : c;
                }
                garbage.prepend('x'); // never a valid object
                text += garbage + (i % 2 ? "\r\n" : "\n");
            } else {
                text += "{\"v\":1,\"time\":" + QByteArray::number(i) + ",\"step\":" + QByteArray::number(i) +
                        ",\"loss\":" + QByteArray::number(i * 0.5) + "}\n";
                ++valid;
            }
        }
        MetricsParser parser;
        MetricBatch batch;
        std::uniform_int_distribution<int> chunk(1, 700);
        for (qsizetype offset = 0; offset < text.size();) {
            const qsizetype n = std::min<qsizetype>(chunk(random), text.size() - offset);
            parser.feed(QByteArrayView(text).sliced(offset, n), batch);
            offset += n;
        }
        parser.finish(batch);
        QCOMPARE(batch.rows.size(), size_t(valid));
        QCOMPARE(parser.stats().samples, std::int64_t(valid));
        for (const MetricRow &row : batch.rows)
            QCOMPARE(batch.values[row.firstValue].value, row.step * 0.5);
        // Pure garbage, including NUL bytes and unbalanced quotes/braces, in one go.
        MetricsParser fuzz;
        MetricBatch sink;
        QByteArray noise;
        static const char alphabet[] = "{}\":,[]nul0123456789.eE-+tfa\\ \r";
        for (int i = 0; i < 200000; ++i) {
            const int pick = byte(random);
            noise += pick % 8 == 0    ? '\n'
                     : pick % 61 == 0 ? '\0'
                                      : alphabet[static_cast<size_t>(pick) % (sizeof alphabet - 1)];
        }
        fuzz.feed(noise, sink);
        fuzz.finish(sink);
        QVERIFY(fuzz.stats().lines > 0);
        QCOMPARE(std::int64_t(sink.rows.size()), fuzz.stats().samples);
    }

    void overlongLineIsDroppedAsJunk()
    {
        MetricsParser parser;
        parser.setMaximumLineLength(64);
        MetricBatch batch;
        parser.feed(QByteArray(50, 'x'), batch);
        parser.feed(QByteArray(50, 'x'), batch);
        QVERIFY(!parser.hasPendingBytes());
        parser.feed(QByteArray(50, 'x') + "\n{\"v\":1,\"time\":1,\"step\":1,\"loss\":1}\n", batch);
        QCOMPARE(batch.rows.size(), size_t(1));
        QCOMPARE(parser.stats().junk, std::int64_t(1));
    }

    void overlongCompleteLineIsJunkToo()
    {
        // Regression: a line longer than the limit that arrived whole in one chunk was parsed
        // (a 300 MB line went through the full JSON parser).
        MetricsParser parser;
        parser.setMaximumLineLength(64);
        MetricBatch batch;
        const QByteArray longLine = "{\"v\":1,\"step\":1,\"loss\":1" + QByteArray(100, ' ') + "}\n";
        parser.feed(longLine + "{\"v\":1,\"step\":2,\"loss\":2}\n", batch);
        QCOMPARE(batch.rows.size(), size_t(1));
        QCOMPARE(batch.rows[0].step, std::int64_t(2));
        QCOMPARE(parser.stats().junk, std::int64_t(1));
        // The same line completed from a pending part.
        parser.feed(longLine.first(30), batch);
        parser.feed(longLine.mid(30), batch);
        QCOMPARE(batch.rows.size(), size_t(1));
        QCOMPARE(parser.stats().junk, std::int64_t(2));
    }

    void deeplyNestedValueIsJunkNotACrash()
    {
        // Values nested far deeper than any metric go to the full parser, which refuses them.
        MetricsParser parser;
        MetricBatch batch;
        const QByteArray deep =
            "{\"v\":1,\"step\":1,\"x\":" + QByteArray(200000, '[') + QByteArray(200000, ']') + "}\n";
        parser.feed(deep, batch);
        QCOMPARE(batch.rows.size(), size_t(0));
        QCOMPARE(parser.stats().junk, std::int64_t(1));
        QCOMPARE(parser.stats().slowPath, std::int64_t(1));
        // A nested value within the full parser's limits is ignored; the scalars of its line count.
        parser.feed("{\"v\":1,\"step\":2,\"x\":" + QByteArray(500, '[') + QByteArray(500, ']') + ",\"loss\":0.5}\n",
                    batch);
        QCOMPARE(batch.rows.size(), size_t(1));
        QCOMPARE(valueOf(batch, 0, "loss"), 0.5);
    }
};

QTEST_GUILESS_MAIN(tst_MetricsParser)
#include "tst_metricsparser.moc"
