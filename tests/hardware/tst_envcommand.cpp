// `accel env` as a user runs it: text modelled on `accelerate env`, --json that round-trips
// through the parser, --from_json, --recommend, the config sections, exit codes and --help.
#include "core/hardware/recommender.h"
#include "core/hardware/reportjson.h"
#include "tests/hardware/samplereports.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::hardware;

// Keep the runs fast and independent of the machine's Python: no Python, no NVML lookup noise.
static const QStringList quick = {QStringLiteral("--no_python")};

static void writeFile(const QString &path, const QByteArray &content)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(content);
}

class tst_EnvCommand : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void helpExitsZero()
    {
        const auto result = test::runAccel({QStringLiteral("env"), QStringLiteral("--help")});
        QCOMPARE(result.exitCode, 0);
        for (const char *flag : {"--config_file", "--json", "--recommend", "--from_json", "--disk", "--no_python"})
            QVERIFY2(result.out.contains(QLatin1String(flag)), flag);
    }

    void unknownFlagIsBadInput()
    {
        const auto result = test::runAccel({QStringLiteral("env"), QStringLiteral("--jsn")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY(result.err.startsWith(QStringLiteral("accel env: ")));
        QVERIFY(result.err.contains(QStringLiteral("--json"))); // did-you-mean
    }

    void missingConfigFileIsBadInput()
    {
        const auto result = test::runAccel(
            {QStringLiteral("env"), QStringLiteral("--config_file"), QStringLiteral("/nonexistent/c.yaml")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY(result.err.contains(QStringLiteral("/nonexistent/c.yaml")));
        QVERIFY(result.out.isEmpty());
    }

    void textLikeAccelerateEnv()
    {
        QTemporaryDir home;
        // No default config in a fresh HF_HOME.
        const auto result = test::runAccel(QStringList{QStringLiteral("env")} + quick, 60000, {},
                                           {QStringLiteral("HF_HOME=") + home.path()});
        QCOMPARE(result.exitCode, 0);
        const QStringList lines = result.out.split(QLatin1Char('\n'));
        QCOMPARE(lines.value(0), QStringLiteral("Copy-and-paste the text below in your GitHub issue"));
        QCOMPARE(lines.value(1), QString());
        QVERIFY(lines.value(2).startsWith(QStringLiteral("- `Accel Studio` version: ")));
        QVERIFY(result.out.contains(QStringLiteral("\n- Platform: Linux-")));
        QVERIFY(result.out.contains(QStringLiteral("\n- System RAM: ")));
        QVERIFY(result.out.contains(QStringLiteral("\n- `Accelerate` default config:\n\tNot found\n")));
        for (const char *section : {"\nCPU:\n", "\nNUMA:\n", "\nMemory:\n", "\nDisks:\n", "\nNetwork:\n", "\nGPUs:\n"})
            QVERIFY2(result.out.contains(QLatin1String(section)), section);
    }

    // The CPU's matrix features and what each precision runs on, from the worker this build made
    // (fp8's FP8 GEMM path measured), in the text and in --json.
    void precisionsSayWhatTheyRunOn()
    {
        if (!QFile::exists(test::binDir() + QStringLiteral("/accel-worker")))
            QSKIP("accel-worker is not built (no libtorch): nothing to report");
        const auto text = test::runAccel(QStringList{QStringLiteral("env")} + quick);
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains(QStringLiteral("\n- Matrix features (libtorch's view): ")), qPrintable(text.out));
        for (const char *precision : {"no", "bf16", "fp8"})
            QVERIFY2(
                text.out.contains(QStringLiteral("\n- mixed_precision %1 runs on: ").arg(QLatin1String(precision))),
                precision);
        QVERIFY(text.out.contains(QStringLiteral("probe: _scaled_mm ")));
        const auto json = test::runAccel(QStringList{QStringLiteral("env"), QStringLiteral("--json")} + quick);
        QCOMPARE(json.exitCode, 0);
        auto parsed = reportFromJson(json.out.toStdString());
        QVERIFY2(parsed.has_value(), parsed ? "" : parsed.error().toString().c_str());
        QCOMPARE(parsed->worker.cpuPrecisions.size(), size_t(3));
        QCOMPARE(parsed->worker.cpuPrecisions[2].first, std::string("fp8"));
        QVERIFY(parsed->worker.cpuPrecisions[2].second.find("dequantized") != std::string::npos);
    }

    // accel env reports the worker accel launch would run: $ACCEL_WORKER_PROGRAM when set (it probed
    // the one beside accel whatever the variable said).
    void envProbesTheWorkerLaunchRuns()
    {
        QTemporaryDir dir;
        const QString fake = dir.filePath(QStringLiteral("other-worker"));
        writeFile(fake, "#!/bin/sh\necho '{\"schema\":\"accel.worker-capabilities\",\"version\":2,"
                        "\"torch_version\":\"9.9.9-other\",\"gloo\":true}'\n");
        QFile::setPermissions(fake, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        const auto result = test::runAccel(QStringList{QStringLiteral("env"), QStringLiteral("--json")} + quick, 60000,
                                           {}, {QStringLiteral("ACCEL_WORKER_PROGRAM=") + fake});
        QCOMPARE(result.exitCode, 0);
        auto parsed = reportFromJson(result.out.toStdString());
        QVERIFY2(parsed.has_value(), parsed ? "" : parsed.error().toString().c_str());
        QCOMPARE(parsed->worker.path, fake.toStdString());
        QCOMPARE(parsed->worker.torchVersion, std::string("9.9.9-other"));
    }

    void defaultAndPassedConfigAreShown()
    {
        QTemporaryDir home;
        const QByteArray yaml =
            "compute_environment: LOCAL_MACHINE\ndebug: false\ndistributed_type: MULTI_GPU\n"
            "downcast_bf16: 'no'\ngpu_ids: all\nmachine_rank: 0\nmain_training_function: main\n"
            "mixed_precision: bf16\nnum_machines: 1\nnum_processes: 2\nrdzv_backend: static\n"
            "same_network: true\ntpu_env: []\ntpu_use_cluster: false\ntpu_use_sudo: false\nuse_cpu: false\n";
        writeFile(home.filePath(QStringLiteral("accelerate/default_config.yaml")), yaml);
        const auto byDefault = test::runAccel(QStringList{QStringLiteral("env")} + quick, 60000, {},
                                              {QStringLiteral("HF_HOME=") + home.path()});
        QCOMPARE(byDefault.exitCode, 0);
        QVERIFY2(byDefault.out.contains(
                     QStringLiteral("- `Accelerate` default config:\n\t- compute_environment: LOCAL_MACHINE\n"
                                    "\t- debug: False\n\t- distributed_type: MULTI_GPU\n")),
                 qPrintable(byDefault.out));
        QVERIFY(byDefault.out.contains(QStringLiteral("\t- num_processes: 2\n")));

        const QString passed = home.filePath(QStringLiteral("other.yaml"));
        writeFile(passed, yaml);
        const auto withFlag =
            test::runAccel(QStringList{QStringLiteral("env"), QStringLiteral("--config_file"), passed} + quick);
        QCOMPARE(withFlag.exitCode, 0);
        QVERIFY(withFlag.out.contains(
            QStringLiteral("- `Accelerate` config passed:\n\t- compute_environment: LOCAL_MACHINE\n")));
    }

    void jsonRoundTripsThroughTheParser()
    {
        QTemporaryDir dir;
        const auto result = test::runAccel(
            QStringList{QStringLiteral("env"), QStringLiteral("--json"), QStringLiteral("--disk"), dir.path()} + quick);
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.startsWith(QStringLiteral("{\n  \"schema\": \"accel.env\",\n  \"version\": 1,")));
        auto parsed = reportFromJson(result.out.toStdString());
        QVERIFY2(parsed.has_value(), parsed ? "" : parsed.error().toString().c_str());
        QCOMPARE(QString::fromStdString(reportToJson(*parsed)), result.out);
        QCOMPARE(parsed->disks.size(), size_t(1));
        QCOMPARE(parsed->disks[0].path, dir.path().toStdString());
        QVERIFY(parsed->cpu.logicalCpus > 0);
        QCOMPARE(parsed->system.hostname, QSysInfo::machineHostName().toStdString());

        // --from_json reads it back and prints the same document.
        const QString file = dir.filePath(QStringLiteral("host.json"));
        writeFile(file, result.out.toUtf8());
        const auto again =
            test::runAccel({QStringLiteral("env"), QStringLiteral("--from_json"), file, QStringLiteral("--json")});
        QCOMPARE(again.exitCode, 0);
        QCOMPARE(again.out, result.out);
        const auto fromStdin = test::runAccel(
            {QStringLiteral("env"), QStringLiteral("--from_json"), QStringLiteral("-")}, 60000, result.out.toUtf8());
        QCOMPARE(fromStdin.exitCode, 0);
        QVERIFY(fromStdin.out.startsWith(QStringLiteral("Copy-and-paste the text below in your GitHub issue\n")));
    }

    void recommendFromAnotherHostsReport()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("a100.json"));
        writeFile(file, QByteArray::fromStdString(
                            reportToJson(test::gpuHost(8, "NVIDIA A100-SXM4-80GB", 8, 0, "535.104.05", 12, 128))));
        const auto yaml =
            test::runAccel({QStringLiteral("env"), QStringLiteral("--from_json"), file, QStringLiteral("--recommend")});
        QCOMPARE(yaml.exitCode, 0);
        QVERIFY(yaml.out.contains(QStringLiteral("\ndistributed_type: MULTI_GPU\n")));
        QVERIFY(yaml.out.contains(QStringLiteral("\nnum_processes: 8\n")));
        QVERIFY(yaml.out.contains(QStringLiteral("\nmixed_precision: bf16\n")));
        QVERIFY(yaml.out.contains(QStringLiteral("# export OMP_NUM_THREADS=16\n")));
        const auto json = test::runAccel({QStringLiteral("env"), QStringLiteral("--from_json"), file,
                                          QStringLiteral("--recommend"), QStringLiteral("--json")});
        QCOMPARE(json.exitCode, 0);
        QVERIFY(
            json.out.startsWith(QStringLiteral("{\n  \"schema\": \"accel.env-recommendation\",\n  \"version\": 1,")));
    }

    void recommendForThisHost()
    {
        const auto result = test::runAccel(QStringList{QStringLiteral("env"), QStringLiteral("--recommend")} + quick);
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.contains(QStringLiteral("compute_environment: LOCAL_MACHINE\n")));
        QVERIFY(result.out.contains(QStringLiteral("\nnum_processes: ")));
    }

    void badFromJsonIsBadInput()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("bad.json"));
        writeFile(file, R"({"schema": "accel.env", "version": 1, "cpu": {"sockets": "two"}})");
        const auto result = test::runAccel({QStringLiteral("env"), QStringLiteral("--from_json"), file});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral("cpu.sockets")), qPrintable(result.err));
        QVERIFY(result.err.contains(file));
        const auto missing = test::runAccel(
            {QStringLiteral("env"), QStringLiteral("--from_json"), dir.filePath(QStringLiteral("none.json"))});
        QCOMPARE(missing.exitCode, 2);
        const auto newer = test::runAccel({QStringLiteral("env"), QStringLiteral("--from_json"), QStringLiteral("-")},
                                          60000, R"({"schema": "accel.env", "version": 7})");
        QCOMPARE(newer.exitCode, 1);
        QVERIFY(newer.err.contains(QStringLiteral("version")));
    }
};

QTEST_GUILESS_MAIN(tst_EnvCommand)
#include "tst_envcommand.moc"
