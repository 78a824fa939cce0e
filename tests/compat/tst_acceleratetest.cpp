// `accel test` runs Accelerate's own test script (accelerate/test_utils/scripts/test_script.py)
// under `accel launch` with 2 CPU ranks when a Python with accelerate is there, and says which
// checks ran and what each tested.
#include "tests/compat/oracle.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;

class tst_AccelerateTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void accelerateTestScriptPassesUnderAccelLaunch()
    {
        ACCEL_REQUIRE_ORACLE(python, QStringLiteral("accelerate"), QStringLiteral("torch"));
        QTemporaryDir dir;
        const auto result = test::runAccel({QStringLiteral("test"), QStringLiteral("--json"),
                                            QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("t"))},
                                           600000, {}, {QStringLiteral("PYTHON_EXEC=") + python});
        const QJsonObject summary = QJsonDocument::fromJson(result.out.toUtf8()).object();
        QCOMPARE(summary.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.test"));
        const QJsonArray checks = summary.value(QStringLiteral("checks")).toArray();
        QCOMPARE(checks.size(), 2);
        const QJsonObject accelerate = checks[1].toObject();
        QVERIFY2(accelerate.value(QStringLiteral("name"))
                     .toString()
                     .startsWith(QStringLiteral("Accelerate's test script (accelerate ")),
                 qPrintable(accelerate.value(QStringLiteral("name")).toString()));
        QVERIFY2(accelerate.value(QStringLiteral("status")).toString() == QLatin1String("passed"),
                 qPrintable(accelerate.value(QStringLiteral("reason")).toString() + "\n" +
                            accelerate.value(QStringLiteral("output")).toString().right(4000)));
        const QStringList tested = accelerate.value(QStringLiteral("tested")).toVariant().toStringList();
        for (const char *section : {"Initialization", "Test random number generator synchronization",
                                    "DataLoader integration test", "Training integration test"})
            QVERIFY2(tested.contains(QLatin1String(section)), qPrintable(tested.join(QStringLiteral(", "))));
        // The command is accel launch with 2 CPU ranks on Accelerate's own script.
        const QStringList command = accelerate.value(QStringLiteral("command")).toVariant().toStringList();
        QVERIFY2(command.contains(QStringLiteral("--cpu")) &&
                     command.last().endsWith(QStringLiteral("test_utils/scripts/test_script.py")),
                 qPrintable(command.join(' ')));
        // accel test never repeats `accelerate test`'s success sentence as its own.
        QVERIFY(!accelerate.value(QStringLiteral("output")).toString().contains(QStringLiteral("Test is a success")));
        // Without Python's accelerate the check is skipped with the reason, not passed.
        const auto skipped = test::runAccel({QStringLiteral("test"), QStringLiteral("--json"),
                                             QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("u"))},
                                            600000, {}, {QStringLiteral("PYTHON_EXEC=/nonexistent/python3")});
        const QJsonObject second = QJsonDocument::fromJson(skipped.out.toUtf8()).object();
        const QJsonObject missing = second.value(QStringLiteral("checks")).toArray()[1].toObject();
        QCOMPARE(missing.value(QStringLiteral("status")).toString(), QStringLiteral("skipped"));
        QVERIFY2(missing.value(QStringLiteral("reason")).toString().contains(QStringLiteral("/nonexistent/python3")),
                 qPrintable(missing.value(QStringLiteral("reason")).toString()));
    }

    // Regression: with a multi-node config accel test added --main_process_port 0 and then refused it.
    void multiNodeConfigKeepsItsPort()
    {
        QTemporaryDir dir;
        const QString config = dir.filePath(QStringLiteral("node.yaml"));
        QFile file(config);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_machines: 2\nmachine_rank: 1\n"
                   "main_process_ip: 203.0.113.1\nmain_process_port: 29531\nnum_processes: 2\nuse_cpu: true\n");
        file.close();
        const auto result = test::runAccel(
            {QStringLiteral("test"), QStringLiteral("--json"), QStringLiteral("--config_file"), config,
             QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("t"))},
            60000, {},
            {QStringLiteral("PYTHON_EXEC=/nonexistent/python3"), QStringLiteral("ACCEL_WORKER_PROGRAM=/bin/false")});
        const QJsonObject summary = QJsonDocument::fromJson(result.out.toUtf8()).object();
        const QJsonObject runtime = summary.value(QStringLiteral("checks")).toArray()[0].toObject();
        const QStringList command = runtime.value(QStringLiteral("command")).toVariant().toStringList();
        QVERIFY2(!command.contains(QStringLiteral("--main_process_port")), qPrintable(command.join(' ')));
        QVERIFY2(!runtime.value(QStringLiteral("output")).toString().contains(QStringLiteral("main_process_port 0")),
                 qPrintable(runtime.value(QStringLiteral("output")).toString()));
    }
};

QTEST_GUILESS_MAIN(tst_AccelerateTest)
#include "tst_acceleratetest.moc"
