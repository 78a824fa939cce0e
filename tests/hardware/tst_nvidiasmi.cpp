// nvidia-smi query/topology parsers on documented samples, and the NVML probe's behaviour when
// the library is absent. Tests that need a real NVIDIA GPU skip with the reason.
#include "core/common/fileutil.h"
#include "core/hardware/nvidiasmi.h"
#include "core/hardware/nvmlprobe.h"
#include "tests/helpers/testsupport.h"

#include <QtTest>

using namespace accel;
using namespace accel::hardware;

static std::string sample(const char *name)
{
    auto text = fileutil::readFile(test::dataPath(QStringLiteral("hardware/") + QLatin1String(name)).toStdString());
    if (!text)
        qFatal("missing sample %s: %s", name, text.error().toString().c_str());
    return *text;
}

class tst_NvidiaSmi : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void queryArgumentsMatchFields()
    {
        const auto arguments = nvidiaSmiQueryArguments();
        QCOMPARE(arguments.size(), size_t(2));
        QCOMPARE(arguments[0],
                 std::string("--query-gpu=index,name,uuid,pci.bus_id,memory.total,memory.used,memory.free,"
                             "compute_cap,driver_version,pcie.link.gen.current,pcie.link.width.current"));
        QCOMPARE(arguments[1], std::string("--format=csv,noheader,nounits"));
    }

    void queryA100x8()
    {
        auto section = parseNvidiaSmiQuery(sample("nvidia-smi-query-a100x8.csv"));
        QVERIFY2(section.has_value(), section ? "" : section.error().toString().c_str());
        QCOMPARE(section->source, std::string("nvidia-smi"));
        QCOMPARE(section->driverVersion, std::string("535.104.05"));
        QCOMPARE(section->gpus.size(), size_t(8));
        const GpuInfo &first = section->gpus[0];
        QCOMPARE(first.index, 0);
        QCOMPARE(first.name, std::string("NVIDIA A100-SXM4-80GB"));
        QCOMPARE(first.uuid, std::string("GPU-1b2c3d4e-0000-1111-2222-333344445550"));
        QCOMPARE(first.pciBusId, std::string("00000000:07:00.0"));
        QCOMPARE(first.memoryTotalBytes, uint64_t(81920) << 20);
        QCOMPARE(first.computeMajor, 8);
        QCOMPARE(first.computeMinor, 0);
        QCOMPARE(first.computeCapability(), 80);
        QCOMPARE(first.pcieGeneration, 4);
        QCOMPARE(first.pcieWidth, 16);
        QCOMPARE(section->gpus[7].index, 7);
        QCOMPARE(section->gpus[7].memoryUsedBytes, uint64_t(38120) << 20);
    }

    void queryWithMissingValues()
    {
        auto section = parseNvidiaSmiQuery(sample("nvidia-smi-query-rtx4090x2.csv"));
        QVERIFY(section.has_value());
        QCOMPARE(section->gpus.size(), size_t(2));
        QCOMPARE(section->gpus[1].name, std::string("NVIDIA GeForce RTX 4090"));
        QCOMPARE(section->gpus[1].computeCapability(), 89);
        QCOMPARE(section->gpus[1].memoryUsedBytes, uint64_t(0)); // [N/A]
        QCOMPARE(section->gpus[1].pcieGeneration, 0);            // [Not Supported]
        QCOMPARE(section->gpus[1].pcieWidth, 8);
    }

    void queryWithOwnFieldOrder()
    {
        auto section = parseNvidiaSmiQuery("NVIDIA H100 80GB HBM3, 9.0\n", {"name", "compute_cap"});
        QVERIFY(section.has_value());
        QCOMPARE(section->gpus.size(), size_t(1));
        QCOMPARE(section->gpus[0].computeCapability(), 90);
        QCOMPARE(section->gpus[0].index, 0);
    }

    void queryWithWrongColumnCountNamesTheLine()
    {
        auto section = parseNvidiaSmiQuery("0, NVIDIA A100, 8.0\n", nvidiaSmiQueryFields());
        QVERIFY(!section.has_value());
        QCOMPARE(section.error().code, ErrorCode::InvalidInput);
        QVERIFY(section.error().context.find("line 1") != std::string::npos);
        QVERIFY(section.error().message.find("expected 11") != std::string::npos);
    }

    void queryWithBadComputeCapability()
    {
        auto section = parseNvidiaSmiQuery("A100, 80\n", {"name", "compute_cap"});
        QVERIFY(!section.has_value());
        QVERIFY(section.error().message.find("compute_cap") != std::string::npos);
    }

    void topologyA100x8WithNics()
    {
        auto topology = parseNvidiaSmiTopology(sample("nvidia-smi-topo-a100x8.txt"));
        QVERIFY2(topology.has_value(), topology ? "" : topology.error().toString().c_str());
        QCOMPARE(topology->devices.size(), size_t(10));
        QCOMPARE(topology->devices[7], std::string("GPU7"));
        QCOMPARE(topology->devices[8], std::string("NIC0"));
        QCOMPARE(topology->link("GPU0", "GPU0"), std::string("X"));
        QCOMPARE(topology->link("GPU0", "GPU5"), std::string("NV12"));
        QCOMPARE(topology->link("GPU0", "NIC0"), std::string("PXB"));
        QCOMPARE(topology->link("NIC1", "GPU7"), std::string("PXB"));
        QCOMPARE(topology->link("GPU0", "GPU9"), std::string());
        QVERIFY(isNvLink(topology->link("GPU3", "GPU4")));
        QCOMPARE(topology->cpuAffinity[0], std::string("48-63,176-191"));
        QCOMPARE(topology->numaAffinity[4], std::string("7"));
        QCOMPARE(topology->cpuAffinity[8], std::string()); // NIC rows carry no affinity
        QCOMPARE(topology->nicNames.size(), size_t(2));
        QCOMPARE(topology->nicNames[1].first, std::string("NIC1"));
        QCOMPARE(topology->nicNames[1].second, std::string("mlx5_1"));
    }

    void topologyWithAnsiEscapesAndNoNvLink()
    {
        auto topology = parseNvidiaSmiTopology(sample("nvidia-smi-topo-rtx4090x2.txt"));
        QVERIFY2(topology.has_value(), topology ? "" : topology.error().toString().c_str());
        const std::vector<std::string> devices = {"GPU0", "GPU1"};
        QCOMPARE(topology->devices, devices);
        QCOMPARE(topology->link("GPU0", "GPU1"), std::string("SYS"));
        QVERIFY(!isNvLink(topology->link("GPU0", "GPU1")));
        QCOMPARE(topology->cpuAffinity[1], std::string("16-31,48-63"));
        QCOMPARE(topology->numaAffinity[1], std::string("1"));
    }

    void topologyErrors()
    {
        auto noHeader = parseNvidiaSmiTopology("No devices were found\n");
        QVERIFY(!noHeader.has_value());
        QVERIFY(noHeader.error().message.find("GPU0") != std::string::npos);
        auto shortRow = parseNvidiaSmiTopology("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \nGPU1\tSYS\t X \n");
        QVERIFY(!shortRow.has_value());
        QVERIFY(shortRow.error().message.find("GPU0") != std::string::npos);
        auto missingRow = parseNvidiaSmiTopology("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSYS\n");
        QVERIFY(!missingRow.has_value());
        QVERIFY(missingRow.error().message.find("no row for GPU1") != std::string::npos);
    }

    void combinedSectionFromBothOutputs()
    {
        auto section =
            gpuSectionFromNvidiaSmi(sample("nvidia-smi-query-a100x8.csv"), sample("nvidia-smi-topo-a100x8.txt"));
        QVERIFY2(section.has_value(), section ? "" : section.error().toString().c_str());
        QCOMPARE(section->gpus.size(), size_t(8));
        QCOMPARE(section->gpus[3].nvlinkActiveLinks, 12);
        QCOMPARE(section->topology.link("GPU2", "GPU6"), std::string("NV12"));
        auto pcie =
            gpuSectionFromNvidiaSmi(sample("nvidia-smi-query-rtx4090x2.csv"), sample("nvidia-smi-topo-rtx4090x2.txt"));
        QVERIFY(pcie.has_value());
        QCOMPARE(pcie->gpus[0].nvlinkActiveLinks, 0);
        auto queryOnly = gpuSectionFromNvidiaSmi(sample("nvidia-smi-query-rtx4090x2.csv"), "");
        QVERIFY(queryOnly.has_value());
        QVERIFY(queryOnly->topology.empty());
        auto badTopology = gpuSectionFromNvidiaSmi(sample("nvidia-smi-query-rtx4090x2.csv"), "No devices were found");
        QVERIFY(!badTopology.has_value());
    }

    void nvmlAbsentIsReportedNotFailed()
    {
        const GpuSection section = probeNvml("libnvidia-ml-accel-test-absent.so.1");
        QVERIFY(section.gpus.empty());
        QCOMPARE(section.source, std::string());
        QVERIFY2(section.unavailableReason.rfind("NVML not available: ", 0) == 0, section.unavailableReason.c_str());
        // dlerror names the library it could not open.
        QVERIFY(section.unavailableReason.find("libnvidia-ml-accel-test-absent.so.1") != std::string::npos);
    }

    void nvmlOnThisMachine()
    {
        const GpuSection section = probeNvml();
        if (section.source.empty())
            QSKIP(("needs an NVIDIA driver with NVML: " + section.unavailableReason).c_str());
        if (section.gpus.empty())
            QSKIP("NVML loaded but reports no GPU");
        // With a driver the probe must fill what every CUDA GPU has.
        QVERIFY(!section.driverVersion.empty());
        for (const GpuInfo &gpu : section.gpus) {
            QVERIFY(!gpu.name.empty());
            QVERIFY(gpu.uuid.rfind("GPU-", 0) == 0 || gpu.uuid.rfind("MIG-", 0) == 0);
            QVERIFY(gpu.memoryTotalBytes > 0);
            QVERIFY(gpu.hasComputeCapability());
        }
        QCOMPARE(section.topology.devices.size(), section.gpus.size());
        QCOMPARE(section.topology.link("GPU0", "GPU0"), std::string("X"));
    }
};

QTEST_GUILESS_MAIN(tst_NvidiaSmi)
#include "tst_nvidiasmi.moc"
