// Config recommendations over hand-written hosts: CPU with one and two sockets, 8 x A100 with
// NVLink, 2 x RTX 4090 without P2P, V100 without bf16; and the YAML they produce.
#include "core/hardware/recommender.h"
#include "tests/hardware/samplereports.h"

#include <QtTest>

using namespace accel;
using namespace accel::hardware;

Q_DECLARE_METATYPE(accel::hardware::HardwareReport)

class tst_Recommender : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void table_data()
    {
        QTest::addColumn<HardwareReport>("report");
        QTest::addColumn<QString>("distributedType");
        QTest::addColumn<int>("numProcesses");
        QTest::addColumn<QString>("mixedPrecision");
        QTest::addColumn<QString>("gpuIds");
        QTest::addColumn<bool>("useCpu");
        QTest::addColumn<int>("threads");
        QTest::addColumn<QString>("supported");
        QTest::addColumn<bool>("p2pDisabled");

        QTest::newRow("1 socket CPU, no bf16") << test::cpuHost(1, 16, false, 1) << "NO" << 1 << "no"
                                               << "" << true << 16 << "no" << false;
        QTest::newRow("1 socket CPU with avx512_bf16") << test::cpuHost(1, 8, true, 1) << "NO" << 1 << "bf16"
                                                       << "" << true << 8 << "no,bf16" << false;
        QTest::newRow("2 sockets CPU") << test::cpuHost(2, 24, false, 2) << "MULTI_CPU" << 2 << "no"
                                       << "" << true << 24 << "no" << false;
        QTest::newRow("1 socket, 4 NUMA nodes") << test::cpuHost(1, 32, true, 4) << "MULTI_CPU" << 4 << "bf16"
                                                << "" << true << 8 << "no,bf16" << false;
        QTest::newRow("8 x A100 NVLink") << test::gpuHost(8, "NVIDIA A100-SXM4-80GB", 8, 0, "535.104.05", 12, 128)
                                         << "MULTI_GPU" << 8 << "bf16"
                                         << "all" << false << 16 << "no,fp16,bf16" << false;
        QTest::newRow("2 x RTX 4090 no P2P")
            << test::gpuHost(2, "NVIDIA GeForce RTX 4090", 8, 9, "535.129.03", 0, 16) << "MULTI_GPU" << 2 << "bf16"
            << "all" << false << 8 << "no,fp16,bf16,fp8" << true;
        QTest::newRow("2 x RTX 4090 fixed driver")
            << test::gpuHost(2, "NVIDIA GeForce RTX 4090", 8, 9, "550.54.15", 0, 16) << "MULTI_GPU" << 2 << "bf16"
            << "all" << false << 8 << "no,fp16,bf16,fp8" << false;
        QTest::newRow("1 x V100") << test::gpuHost(1, "Tesla V100-SXM2-16GB", 7, 0, "470.82.01", 0, 8) << "NO" << 1
                                  << "fp16"
                                  << "all" << false << 8 << "no,fp16" << false;
        QTest::newRow("4 x V100 NVLink") << test::gpuHost(4, "Tesla V100-SXM2-32GB", 7, 0, "470.82.01", 6, 40)
                                         << "MULTI_GPU" << 4 << "fp16"
                                         << "all" << false << 10 << "no,fp16" << false;
        QTest::newRow("1 x H100") << test::gpuHost(1, "NVIDIA H100 80GB HBM3", 9, 0, "550.54.15", 0, 32) << "NO" << 1
                                  << "bf16"
                                  << "all" << false << 32 << "no,fp16,bf16,fp8" << false;
    }

    void table()
    {
        QFETCH(HardwareReport, report);
        QFETCH(QString, distributedType);
        QFETCH(int, numProcesses);
        QFETCH(QString, mixedPrecision);
        QFETCH(QString, gpuIds);
        QFETCH(bool, useCpu);
        QFETCH(int, threads);
        QFETCH(QString, supported);
        QFETCH(bool, p2pDisabled);

        const RecommendedConfig config = recommendConfig(report);
        QCOMPARE(QString::fromStdString(config.distributedType), distributedType);
        QCOMPARE(config.numProcesses, numProcesses);
        QCOMPARE(config.numMachines, 1);
        QCOMPARE(QString::fromStdString(config.mixedPrecision), mixedPrecision);
        QCOMPARE(QString::fromStdString(config.gpuIds), gpuIds);
        QCOMPARE(config.useCpu, useCpu);
        QCOMPARE(config.threadsPerProcess, threads);
        QCOMPARE(config.environmentValue("OMP_NUM_THREADS"), std::to_string(threads));
        QStringList precisions;
        for (const auto &p : config.supportedPrecisions)
            precisions << QString::fromStdString(p);
        QCOMPARE(precisions.join(QLatin1Char(',')), supported);
        QCOMPARE(config.environmentValue("NCCL_P2P_DISABLE"), std::string(p2pDisabled ? "1" : ""));
        QCOMPARE(config.environmentValue("NCCL_IB_DISABLE"), std::string(p2pDisabled ? "1" : ""));
        // Every decision carries a reason a person can read.
        for (const char *key : {"distributed_type", "num_processes", "mixed_precision", "OMP_NUM_THREADS"})
            QVERIFY2(!config.reasonFor(key).empty(), key);
        if (p2pDisabled)
            QVERIFY(config.reasonFor("NCCL_P2P_DISABLE").find("550.40.07") != std::string::npos);
    }

    void reasonsNameTheEvidence()
    {
        const auto a100 = recommendConfig(test::gpuHost(8, "NVIDIA A100-SXM4-80GB", 8, 0, "535.104.05", 12));
        QVERIFY(a100.reasonFor("mixed_precision").find("8.0") != std::string::npos);
        QVERIFY(a100.reasonFor("distributed_type").find("NVLink (NV12)") != std::string::npos);
        const auto v100 = recommendConfig(test::gpuHost(1, "Tesla V100-SXM2-16GB", 7, 0, "470.82.01", 0));
        QVERIFY(v100.reasonFor("mixed_precision").find("no bf16") != std::string::npos);
        const auto rtx = recommendConfig(test::gpuHost(2, "NVIDIA GeForce RTX 4090", 8, 9, "535.129.03", 0));
        QVERIFY(rtx.reasonFor("distributed_type").find("PCIe (SYS)") != std::string::npos);
        QVERIFY(rtx.reasonFor("mixed_precision").find("fp8") != std::string::npos);
        const auto twoSockets = recommendConfig(test::cpuHost(2, 24, false, 2));
        QVERIFY(twoSockets.reasonFor("distributed_type").find("2 sockets") != std::string::npos);
        QVERIFY(!twoSockets.warnings.empty());
    }

    void mixedGpuModelsFollowTheOldest()
    {
        HardwareReport report = test::gpuHost(2, "NVIDIA A100-SXM4-80GB", 8, 0, "535.104.05", 0);
        report.gpu.gpus[1].name = "Tesla V100-SXM2-16GB";
        report.gpu.gpus[1].computeMajor = 7;
        const auto config = recommendConfig(report);
        QCOMPARE(config.mixedPrecision, std::string("fp16"));
        QCOMPARE(config.warnings.size(), size_t(1));
        QVERIFY(config.warnings[0].find("differ") != std::string::npos);
    }

    void unknownComputeCapabilityIsCautious()
    {
        HardwareReport report = test::gpuHost(1, "Some GPU", 8, 0, "", 0);
        report.gpu.gpus[0].computeMajor = -1;
        QCOMPARE(recommendConfig(report).mixedPrecision, std::string("fp16"));
    }

    void workerWithoutCudaIsAWarning()
    {
        HardwareReport report = test::gpuHost(1, "NVIDIA A100-SXM4-80GB", 8, 0, "535.104.05", 0);
        report.worker.available = true;
        report.worker.torchVersion = "1.13.0";
        QVERIFY(recommendConfig(report).warnings.size() == 1);
    }

    void driverComparison_data()
    {
        QTest::addColumn<QString>("driver");
        QTest::addColumn<bool>("lacksFix");
        QTest::newRow("older major") << "535.129.03" << true;
        QTest::newRow("older patch") << "550.40.06" << true;
        QTest::newRow("exact") << "550.40.07" << false;
        QTest::newRow("newer minor") << "550.54.15" << false;
        QTest::newRow("newer major") << "560.28" << false;
        QTest::newRow("unknown") << "" << true;
    }

    void driverComparison()
    {
        QFETCH(QString, driver);
        QFETCH(bool, lacksFix);
        QCOMPARE(driverLacksRtx40P2pFix(driver.toStdString()), lacksFix);
    }

    void yamlLooksLikeAccelerates()
    {
        const auto gpu = recommendConfig(test::gpuHost(8, "NVIDIA A100-SXM4-80GB", 8, 0, "535.104.05", 12));
        const std::string expected = "compute_environment: LOCAL_MACHINE\n"
                                     "debug: false\n"
                                     "distributed_type: MULTI_GPU\n"
                                     "downcast_bf16: 'no'\n"
                                     "enable_cpu_affinity: false\n"
                                     "gpu_ids: all\n"
                                     "machine_rank: 0\n"
                                     "main_training_function: main\n"
                                     "mixed_precision: bf16\n"
                                     "num_machines: 1\n"
                                     "num_processes: 8\n"
                                     "rdzv_backend: static\n"
                                     "same_network: true\n"
                                     "tpu_env: []\n"
                                     "tpu_use_cluster: false\n"
                                     "tpu_use_sudo: false\n"
                                     "use_cpu: false\n";
        QCOMPARE(recommendedConfigYaml(gpu, false), expected);

        const auto cpu = recommendConfig(test::cpuHost(1, 4, false, 1));
        const std::string yaml = recommendedConfigYaml(cpu, true);
        QVERIFY(yaml.find("distributed_type: 'NO'\n") != std::string::npos);
        QVERIFY(yaml.find("mixed_precision: 'no'\n") != std::string::npos);
        QVERIFY(yaml.find("gpu_ids") == std::string::npos);
        QVERIFY(yaml.find("use_cpu: true\n") != std::string::npos);
        QVERIFY(yaml.find("# export OMP_NUM_THREADS=4\n") != std::string::npos);
        QVERIFY(yaml.find("# mixed_precision: ") != std::string::npos);
    }

    void recommendationJson()
    {
        const auto config = recommendConfig(test::gpuHost(2, "NVIDIA GeForce RTX 4090", 8, 9, "535.129.03", 0));
        const std::string json = recommendationToJson(config);
        QVERIFY(json.rfind("{\n  \"schema\": \"accel.env-recommendation\",\n  \"version\": 1,", 0) == 0);
        QVERIFY(json.find("\"NCCL_P2P_DISABLE\": \"1\"") != std::string::npos);
        QVERIFY(json.find("\"num_processes\": 2") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(tst_Recommender)
#include "tst_recommender.moc"
