// `accel demo` and `accel test` through the real launcher. The demo runs against a stand-in
// worker (fakechild writing metrics) so it is fast; `accel test` needs the real accel-worker
// (label torch) and is skipped with the reason when the build has none.
#include "tests/helpers/testsupport.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

using accel::test::runAccel;

class tst_Demo : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void demoShowsProgressFromMetrics()
    {
        QTemporaryDir dir;
        const QString worker = dir.filePath(QStringLiteral("fake-worker.sh"));
        QFile script(worker);
        QVERIFY(script.open(QIODevice::WriteOnly));
        // Stands in for accel-worker JOB: 5 metrics lines per rank, like the gpt recipe logs them.
        script.write(QStringLiteral("#!/bin/sh\nexec '%1' --sleep 300 --metrics 5\n")
                         .arg(accel::test::binDir() + QStringLiteral("/fakechild"))
                         .toUtf8());
        script.close();
        script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
        // The launcher validates the job before starting anything: a gpt job names its corpus.
        QFile corpus(dir.filePath(QStringLiteral("corpus.txt")));
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        corpus.write("a small corpus for the stand-in worker\n");
        corpus.close();
        QFile job(dir.filePath(QStringLiteral("job.yaml")));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write(QStringLiteral("recipe: gpt\ndata:\n  corpus: \"%1\"\ntraining:\n  max_steps: 5\n")
                      .arg(corpus.fileName())
                      .toUtf8());
        job.close();
        const QStringList env = {QStringLiteral("ACCEL_WORKER_PROGRAM=") + worker};

        const auto json = runAccel({QStringLiteral("demo"), QStringLiteral("--json"), QStringLiteral("--job"),
                                    job.fileName(), QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("run1"))},
                                   60000, {}, env);
        QVERIFY2(json.exitCode == 0, qPrintable(json.err));
        QVERIFY(json.out.startsWith(QStringLiteral("{\n    \"schema\": \"accel.demo\",\n    \"version\": 1")));
        const QJsonObject summary = QJsonDocument::fromJson(json.out.toUtf8()).object();
        QCOMPARE(summary.value(QStringLiteral("steps")).toInt(), 5);
        QCOMPARE(summary.value(QStringLiteral("total_steps")).toInt(), 5);
        QCOMPARE(summary.value(QStringLiteral("final_loss")).toDouble(), 0.8);
        QCOMPARE(summary.value(QStringLiteral("tokens_per_s")).toDouble(), 2000.0); // 2 ranks x 1000
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("run1/job.yaml"))));

        const auto text = runAccel({QStringLiteral("demo"), QStringLiteral("--job"), job.fileName(),
                                    QStringLiteral("--run_dir"), dir.filePath(QStringLiteral("run2"))},
                                   60000, {}, env);
        QVERIFY2(text.exitCode == 0, qPrintable(text.err));
        QVERIFY2(text.err.contains(QStringLiteral("[##############################] 5/5  loss 0.8000  tokens/s 2000")),
                 qPrintable(text.err));
        QCOMPARE(text.out.trimmed(), QStringLiteral("run directory: ") + dir.filePath(QStringLiteral("run2")));
    }

    void demoWithoutWorkerFails()
    {
        const auto result = runAccel({QStringLiteral("demo")}, 60000, {},
                                     {QStringLiteral("ACCEL_WORKER_PROGRAM=/nonexistent/accel-worker")});
        QCOMPARE(result.exitCode, 1);
        QVERIFY(result.err.contains(QStringLiteral("accel-worker")));
    }

    void selfTestThroughLauncher()
    {
        QString worker = qEnvironmentVariable("ACCEL_WORKER_PROGRAM");
        if (worker.isEmpty())
            worker = accel::test::binDir() + QStringLiteral("/accel-worker");
        if (!QFileInfo(worker).isExecutable())
            QSKIP("accel-worker is not built (no libtorch runtime in this build)");
        QTemporaryDir dir;
        const auto result = runAccel({QStringLiteral("test"), QStringLiteral("--json"), QStringLiteral("--run_dir"),
                                      dir.filePath(QStringLiteral("t"))},
                                     300000, {}, {QStringLiteral("ACCEL_WORKER_PROGRAM=") + worker});
        const QJsonObject summary = QJsonDocument::fromJson(result.out.toUtf8()).object();
        QVERIFY2(result.exitCode == 0 && summary.value(QStringLiteral("success")).toBool(),
                 qPrintable(result.out + result.err));
        QVERIFY(summary.value(QStringLiteral("output")).toString().contains(QStringLiteral("ok    all-reduce")));
    }
};

QTEST_GUILESS_MAIN(tst_Demo)
#include "tst_demo.moc"
