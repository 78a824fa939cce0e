// The accel.env JSON form: every field survives a round trip, the schema header comes first,
// and bad documents are rejected with the key that is wrong.
#include "core/hardware/envtext.h"
#include "core/hardware/reportjson.h"
#include "tests/hardware/samplereports.h"

#include <QtTest>

using namespace accel;
using namespace accel::hardware;

static HardwareReport fullReport()
{
    HardwareReport report = test::gpuHost(2, "NVIDIA A100-SXM4-80GB", 8, 0, "535.104.05", 12);
    report.generatedAt = "2026-01-02T03:04:05Z";
    report.accelVersion = "0.1.0";
    report.system = {
        "Debian GNU/Linux 12 (bookworm)", "debian", "12",     "Linux", "6.1.0-18-amd64",
        "#1 SMP PREEMPT_DYNAMIC",         "x86_64", "node01", "2.36",  "Linux-6.1.0-18-amd64-x86_64-with-glibc2.36"};
    report.cpu.vendor = "GenuineIntel";
    report.cpu.availableCpus = 60;
    report.numaNodes[1].memoryTotalBytes = uint64_t(128) << 30;
    report.memory = {uint64_t(1) << 40, uint64_t(900) << 30, uint64_t(8) << 30, uint64_t(7) << 30};
    report.disks = {{"/data", "", uint64_t(4) << 40, uint64_t(1) << 40},
                    {"/nope", "statvfs failed: Permission denied", 0, 0}};
    NetworkInterface eth;
    eth.name = "eno1";
    eth.up = true;
    eth.mtu = 9000;
    eth.speedMbps = 100000;
    eth.defaultRouteIpv4 = true;
    eth.addresses = {{"ipv4", "10.0.0.5", 24}, {"ipv6", "fd00::5", 64}};
    NetworkInterface lo;
    lo.name = "lo";
    lo.up = lo.loopback = true;
    lo.mtu = 65536;
    report.network = {eth, lo};
    report.gpu.gpus[1].processes = {{4242, uint64_t(3) << 30}};
    report.gpu.topology.nicNames = {{"NIC0", "mlx5_0"}};
    report.worker.available = true;
    report.worker.path = "/opt/accel/bin/accel-worker";
    report.worker.torchVersion = "2.12.1";
    report.worker.cudaCompiled = true;
    report.worker.gpuCount = 0;
    report.worker.cudaVersion = "13.0";
    report.worker.cudnn = "9.20.0";
    report.worker.nccl = true;
    report.worker.ncclVersion = "2.29.7";
    report.worker.gloo = true;
    report.worker.openmpThreads = 8;
    report.worker.blas = "mkl";
    report.python = {true, "", "/usr/bin/python3", "3.11.2", "1.13.0", "not installed", "1.24.2", ""};
    report.config = {"/home/u/.cache/huggingface/accelerate/default_config.yaml",
                     false,
                     true,
                     "",
                     {{"compute_environment", "LOCAL_MACHINE"}, {"debug", "False"}}};
    return report;
}

class tst_ReportJson : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void schemaHeaderComesFirst()
    {
        const std::string json = reportToJson(fullReport());
        QVERIFY(json.rfind("{\n  \"schema\": \"accel.env\",\n  \"version\": 1,\n", 0) == 0);
        QVERIFY(json.back() == '\n');
        const std::string compact = reportToJson(fullReport(), -1);
        QVERIFY(compact.rfind("{\"schema\":\"accel.env\",\"version\":1,", 0) == 0);
    }

    void roundTripKeepsEveryField()
    {
        const HardwareReport original = fullReport();
        const std::string first = reportToJson(original);
        auto parsed = reportFromJson(first);
        QVERIFY2(parsed.has_value(), parsed ? "" : parsed.error().toString().c_str());
        // Serialising the parsed report gives the same text: nothing was lost or changed.
        QCOMPARE(QString::fromStdString(reportToJson(*parsed)), QString::fromStdString(first));
        QCOMPARE(parsed->gpu.gpus[1].processes[0].pid, 4242u);
        QCOMPARE(parsed->gpu.gpus[0].computeCapability(), 80);
        QCOMPARE(parsed->gpu.topology.link("GPU0", "GPU1"), std::string("NV12"));
        QCOMPARE(parsed->numaNodes[1].cpus.size(), original.numaNodes[1].cpus.size());
        QCOMPARE(parsed->memory.totalBytes, uint64_t(1) << 40);
        QCOMPARE(parsed->config.entries.size(), size_t(2));
        QCOMPARE(parsed->worker.blas, std::string("mkl"));
        QVERIFY(parsed->worker.cudaCompiled);
        QCOMPARE(parsed->worker.ncclVersion, std::string("2.29.7"));
        QCOMPARE(parsed->network[0].addresses[1].address, std::string("fd00::5"));
        // The human text of a parsed report works like a local one.
        QVERIFY(formatEnvText(*parsed).find("- GPU type: NVIDIA A100-SXM4-80GB\n") != std::string::npos);
        QVERIFY2(formatEnvText(*parsed).find("libtorch version: 2.12.1 (CUDA: compiled 13.0, no GPU, NCCL: 2.29.7") !=
                     std::string::npos,
                 formatEnvText(*parsed).c_str());
    }

    void unknownComputeCapabilityIsNull()
    {
        HardwareReport report = fullReport();
        report.gpu.gpus[0].computeMajor = -1;
        const std::string json = reportToJson(report);
        QVERIFY(json.find("\"compute_capability\": null") != std::string::npos);
        auto parsed = reportFromJson(json);
        QVERIFY(parsed.has_value());
        QVERIFY(!parsed->gpu.gpus[0].hasComputeCapability());
    }

    void missingSectionsKeepDefaults()
    {
        auto parsed = reportFromJson(R"({"schema": "accel.env", "version": 1, "cpu": {"sockets": 2}})");
        QVERIFY(parsed.has_value());
        QCOMPARE(parsed->cpu.sockets, 2);
        QVERIFY(parsed->gpu.gpus.empty());
        QVERIFY(parsed->network.empty());
    }

    void rejections_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("mentions");
        QTest::addColumn<int>("code");
        const int invalid = int(ErrorCode::InvalidInput);
        QTest::newRow("not json") << "{nope"
                                  << "not valid JSON" << invalid;
        QTest::newRow("other schema") << R"({"schema": "accel.run", "version": 1})"
                                      << "accel.env" << invalid;
        QTest::newRow("no schema") << R"({"version": 1})"
                                   << "\"schema\"" << invalid;
        QTest::newRow("newer version") << R"({"schema": "accel.env", "version": 2})"
                                       << "2 is not understood" << int(ErrorCode::Unsupported);
        QTest::newRow("version as text") << R"({"schema": "accel.env", "version": "1"})"
                                         << "version" << invalid;
        QTest::newRow("wrong type") << R"({"schema": "accel.env", "version": 1, "cpu": {"sockets": "two"}})"
                                    << "cpu.sockets: expected an integer, got string" << invalid;
        QTest::newRow("nested wrong type") << R"({"schema": "accel.env", "version": 1, "gpu": {"gpus": [{"name": 5}]}})"
                                           << "gpu.gpus[0].name: expected a string" << invalid;
        QTest::newRow("bad cpu list")
            << R"({"schema": "accel.env", "version": 1, "numa_nodes": [{"id": 0, "cpus": "x-y"}]})"
            << "numa_nodes[0].cpus" << invalid;
        QTest::newRow("ragged topology")
            << R"({"schema": "accel.env", "version": 1, "gpu": {"topology": {"devices": ["GPU0", "GPU1"], "links": [["X"]]}}})"
            << "gpu.topology.links" << invalid;
        QTest::newRow("bad capability")
            << R"({"schema": "accel.env", "version": 1, "gpu": {"gpus": [{"compute_capability": "80"}]}})"
            << "compute_capability" << invalid;
    }

    void rejections()
    {
        QFETCH(QString, json);
        QFETCH(QString, mentions);
        QFETCH(int, code);
        auto parsed = reportFromJson(json.toStdString());
        QVERIFY(!parsed.has_value());
        QCOMPARE(int(parsed.error().code), code);
        QVERIFY2(QString::fromStdString(parsed.error().toString()).contains(mentions),
                 parsed.error().toString().c_str());
    }

    void configEntriesLikeAccelerateEnv()
    {
        const std::string yaml = "compute_environment: LOCAL_MACHINE\n"
                                 "debug: false\n"
                                 "distributed_type: 'NO'\n"
                                 "downcast_bf16: 'no'\n"
                                 "dynamo_config:\n"
                                 "  dynamo_backend: INDUCTOR\n"
                                 "  dynamo_use_fullgraph: true\n"
                                 "gpu_ids: all\n"
                                 "num_processes: 1\n"
                                 "tpu_env: []\n";
        auto entries = configEntriesFromText(yaml, false, "default_config.yaml");
        QVERIFY(entries.has_value());
        QCOMPARE(entries->size(), size_t(8));
        QCOMPARE((*entries)[1], std::make_pair(std::string("debug"), std::string("False")));
        QCOMPARE((*entries)[2].second, std::string("NO"));
        QCOMPARE((*entries)[4],
                 std::make_pair(std::string("dynamo_config"),
                                std::string("{'dynamo_backend': 'INDUCTOR', 'dynamo_use_fullgraph': True}")));
        QCOMPARE((*entries)[6].second, std::string("1"));
        QCOMPARE((*entries)[7].second, std::string("[]"));

        // `accelerate config default` writes JSON into the .yaml file.
        auto json = configEntriesFromText(
            "{\n  \"debug\": false,\n  \"num_processes\": 2,\n  \"fsdp_config\": {\"fsdp_version\": 2}\n}\n", false,
            "default_config.yaml");
        QVERIFY(json.has_value());
        QCOMPARE(json->size(), size_t(3));
        QCOMPARE((*json)[0].second, std::string("False"));
        QCOMPARE((*json)[2].second, std::string("{'fsdp_version': 2}"));

        auto bad = configEntriesFromText("key value without colon\n", false, "c.yaml");
        QVERIFY(!bad.has_value());
        QCOMPARE(bad.error().context, std::string("c.yaml: line 1"));
    }

    void gigabytesLikeAccelerate()
    {
        QCOMPARE(formatGigabytes(uint64_t(24731708) * 1024), std::string("23.59 GB"));
        QCOMPARE(formatGigabytes(0), std::string("0.00 GB"));
    }
};

QTEST_GUILESS_MAIN(tst_ReportJson)
#include "tst_reportjson.moc"
