// The Python tracker (resources/python/accel_studio_tracker.py) writes lines the C++ parser reads.
#include "monitor/metricsparser.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace accel;
using namespace accel::monitor;

namespace {

QString trackerScript()
{
    return QDir(test::sourceDir()).filePath(QStringLiteral("resources/python/accel_studio_tracker.py"));
}

QString trackerFolder()
{
    return QDir(test::sourceDir()).filePath(QStringLiteral("resources/python"));
}

struct Parsed {
    MetricBatch batch;
    ParserStats stats;
};

Parsed parseFile(const QString &path)
{
    Parsed parsed;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return parsed;
    MetricsParser parser;
    parser.feed(file.readAll(), parsed.batch);
    parser.finish(parsed.batch);
    parsed.stats = parser.stats();
    return parsed;
}

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

class tst_Tracker : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("python3")).isEmpty())
            QSKIP("python3 is not installed");
    }

    void commandLineWritesToRunDirectory()
    {
        QTemporaryDir run;
        const auto result = test::runProgram(QStringLiteral("python3"),
                                             {trackerScript(), QStringLiteral("--step"), QStringLiteral("3"),
                                              QStringLiteral("loss=2.5"), QStringLiteral("lr=1e-4")},
                                             30000, {},
                                             {QStringLiteral("ACCEL_RUN_DIR=") + run.path(), QStringLiteral("RANK=2"),
                                              QStringLiteral("ACCEL_METRICS_FILE")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        const Parsed parsed = parseFile(run.filePath(QStringLiteral("metrics/rank2.jsonl")));
        QCOMPARE(parsed.batch.rows.size(), size_t(1));
        QCOMPARE(parsed.stats.junk, std::int64_t(0));
        QCOMPARE(parsed.stats.slowPath, std::int64_t(0)); // the fast scanner reads the tracker's lines
        const MetricRow &row = parsed.batch.rows[0];
        QCOMPARE(row.rank, 2);
        QCOMPARE(row.step, std::int64_t(3));
        QVERIFY(std::fabs(row.time - QDateTime::currentMSecsSinceEpoch() / 1000.0) < 60);
        QCOMPARE(valueOf(parsed.batch, 0, "loss"), 2.5);
        QCOMPARE(valueOf(parsed.batch, 0, "lr"), 1e-4);
    }

    void explicitFileWinsAndMissingTargetFails()
    {
        QTemporaryDir run;
        const QString file = run.filePath(QStringLiteral("elsewhere/m.jsonl"));
        auto result = test::runProgram(
            QStringLiteral("python3"), {trackerScript(), QStringLiteral("x=1")}, 30000, {},
            {QStringLiteral("ACCEL_RUN_DIR=") + run.path(), QStringLiteral("ACCEL_METRICS_FILE=") + file});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QCOMPARE(parseFile(file).batch.rows.size(), size_t(1));
        QVERIFY(!QFile::exists(run.filePath(QStringLiteral("metrics/rank0.jsonl"))));

        result = test::runProgram(QStringLiteral("python3"), {trackerScript(), QStringLiteral("x=1")}, 30000, {},
                                  {QStringLiteral("ACCEL_RUN_DIR"), QStringLiteral("ACCEL_METRICS_FILE")});
        QCOMPARE(result.exitCode, 1);
        QVERIFY(result.err.contains(QLatin1String("ACCEL_RUN_DIR")));
        result = test::runProgram(QStringLiteral("python3"), {trackerScript(), QStringLiteral("x=abc")}, 30000, {},
                                  {QStringLiteral("ACCEL_METRICS_FILE=") + file});
        QVERIFY(result.exitCode != 0);
        QVERIFY(result.err.contains(QLatin1String("not a number")));
    }

    void plainApiHandlesOddValues()
    {
        QTemporaryDir run;
        const QString file = run.filePath(QStringLiteral("metrics/rank0.jsonl"));
        const QByteArray script =
            "import accel_studio_tracker as t\n"
            "assert not t.ACCELERATE_AVAILABLE\n"
            "assert not hasattr(t, 'AccelStudioTracker')\n"
            "for step in range(1, 4):\n"
            "    t.log({'loss': 1.0 / step, 'grad_norm': float('nan'), 'big': float('inf'), 'ok': True,\n"
            "           'note': 'text', 'step': 99, 'opt': {'lr': 0.001, 'beta': 0.9}, 'n': 10**20}, step=step)\n"
            "t.log({'eval_loss': 0.5}, step=3, kind='eval')\n"
            "print(t.metrics_path())\n";
        const auto result = test::runProgram(QStringLiteral("python3"), {QStringLiteral("-")}, 30000, script,
                                             {QStringLiteral("PYTHONPATH=") + trackerFolder(),
                                              QStringLiteral("ACCEL_METRICS_FILE=") + file, QStringLiteral("RANK=0")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        QCOMPARE(result.out.trimmed(), file);
        const Parsed parsed = parseFile(file);
        QCOMPARE(parsed.batch.rows.size(), size_t(4));
        QCOMPARE(parsed.stats.junk, std::int64_t(0));
        QCOMPARE(parsed.batch.rows[1].step, std::int64_t(2)); // "step" in values does not override
        QCOMPARE(valueOf(parsed.batch, 1, "loss"), 0.5);
        QVERIFY(std::isnan(valueOf(parsed.batch, 1, "grad_norm")));
        QVERIFY(std::isnan(valueOf(parsed.batch, 1, "big")));
        QCOMPARE(valueOf(parsed.batch, 1, "ok"), 1.0);
        QCOMPARE(valueOf(parsed.batch, 1, "note"), -12345.0); // strings are not scalars
        QCOMPARE(valueOf(parsed.batch, 1, "opt/lr"), 0.001);
        QCOMPARE(valueOf(parsed.batch, 1, "n"), 1e20);
        QCOMPARE(parsed.batch.rows[3].kind, SampleKind::Eval);
    }

    void accelerateTrackerWhenAccelerateIsImportable()
    {
        // accelerate is not installed here: a minimal stand-in package with the GeneralTracker
        // base class exercises the guarded class definition.
        QTemporaryDir stub;
        QVERIFY(QDir(stub.path()).mkpath(QStringLiteral("accelerate")));
        QFile init(stub.filePath(QStringLiteral("accelerate/__init__.py")));
        QVERIFY(init.open(QIODevice::WriteOnly));
        init.close();
        QFile tracking(stub.filePath(QStringLiteral("accelerate/tracking.py")));
        QVERIFY(tracking.open(QIODevice::WriteOnly));
        tracking.write("class GeneralTracker:\n"
                       "    main_process_only = True\n"
                       "    def __init__(self, _blank=False):\n"
                       "        pass\n");
        tracking.close();
        QTemporaryDir run;
        const QByteArray script = "import accel_studio_tracker as t\n"
                                  "from accelerate.tracking import GeneralTracker\n"
                                  "assert t.ACCELERATE_AVAILABLE\n"
                                  "tracker = t.AccelStudioTracker()\n"
                                  "assert isinstance(tracker, GeneralTracker)\n"
                                  "assert tracker.name == 'accel_studio' and not tracker.requires_logging_directory\n"
                                  "tracker.store_init_configuration({'lr': 0.001, 'epochs': 3})\n"
                                  "tracker.log({'loss': 1.5}, step=4)\n"
                                  "tracker.finish()\n";
        const auto result =
            test::runProgram(QStringLiteral("python3"), {QStringLiteral("-")}, 30000, script,
                             {QStringLiteral("PYTHONPATH=") + trackerFolder() + QLatin1Char(':') + stub.path(),
                              QStringLiteral("ACCEL_RUN_DIR=") + run.path(), QStringLiteral("RANK=1"),
                              QStringLiteral("ACCEL_METRICS_FILE")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));
        const Parsed parsed = parseFile(run.filePath(QStringLiteral("metrics/rank1.jsonl")));
        QCOMPARE(parsed.batch.rows.size(), size_t(1));
        QCOMPARE(parsed.batch.rows[0].step, std::int64_t(4));
        QCOMPARE(valueOf(parsed.batch, 0, "loss"), 1.5);
        QFile hparams(run.filePath(QStringLiteral("hparams.json")));
        QVERIFY(hparams.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(hparams.readAll()).object().value(QLatin1String("epochs")).toInt(), 3);
    }
};

QTEST_GUILESS_MAIN(tst_Tracker)
#include "tst_tracker.moc"
