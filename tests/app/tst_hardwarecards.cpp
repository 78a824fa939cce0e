// Hardware cards render a report built in the test: several GPUs with their topology matrix,
// no GPU with the reason, NUMA nodes and sizes.
#include "app/studio/hardwarecards.h"

#include <QGroupBox>
#include <QLabel>
#include <QTableWidget>
#include <QtTest>

using namespace accel::app;
namespace hw = accel::hardware;

class tst_HardwareCards : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void formatsSizes()
    {
        QCOMPARE(formatBytes(512), QStringLiteral("512 B"));
        QCOMPARE(formatBytes(1536), QStringLiteral("1.50 KiB"));
        QCOMPARE(formatBytes(80ull << 30), QStringLiteral("80.0 GiB"));
    }

    void severalGpusShowTopologyMatrix()
    {
        hw::GpuSection section;
        section.source = "nvml";
        section.driverVersion = "550.54.15";
        for (int i = 0; i < 2; ++i) {
            hw::GpuInfo gpu;
            gpu.index = i;
            gpu.name = "NVIDIA A100-SXM4-80GB";
            gpu.memoryTotalBytes = 80ull << 30;
            gpu.computeMajor = 8;
            gpu.computeMinor = 0;
            gpu.pcieGeneration = 4;
            gpu.pcieWidth = 16;
            gpu.nvlinkActiveLinks = 12;
            section.gpus.push_back(gpu);
        }
        section.topology.devices = {"GPU0", "GPU1"};
        section.topology.links = {{"X", "NV12"}, {"NV12", "X"}};
        section.topology.cpuAffinity = {"0-31", "0-31"};
        section.topology.numaAffinity = {"0", "0"};
        QWidget parent;
        QGroupBox *card = createGpuCard(section, &parent);
        auto *table = card->findChild<QTableWidget *>(QStringLiteral("gpuTable"));
        QVERIFY(table);
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->item(1, 1)->text(), QStringLiteral("NVIDIA A100-SXM4-80GB"));
        QCOMPARE(table->item(0, 3)->text(), QStringLiteral("8.0"));
        QCOMPARE(table->item(0, 4)->text(), QStringLiteral("Gen4 x16"));
        auto *matrix = card->findChild<QTableWidget *>(QStringLiteral("gpuTopology"));
        QVERIFY(matrix);
        QCOMPARE(matrix->item(0, 1)->text(), QStringLiteral("NV12"));
        QCOMPARE(matrix->item(1, 1)->text(), QStringLiteral("X"));
        QCOMPARE(matrix->item(0, 2)->text(), QStringLiteral("0-31"));
        QVERIFY(!card->findChild<QLabel *>(QStringLiteral("gpuUnavailable")));
    }

    void oneGpuHasNoMatrixAndNoGpuSaysWhy()
    {
        hw::GpuSection one;
        one.gpus.resize(1);
        one.topology.devices = {"GPU0"};
        one.topology.links = {{"X"}};
        QWidget parent;
        QVERIFY(!createGpuCard(one, &parent)->findChild<QTableWidget *>(QStringLiteral("gpuTopology")));

        hw::GpuSection none;
        none.unavailableReason = "NVML not available: libnvidia-ml.so.1: cannot open shared object file";
        QGroupBox *card = createGpuCard(none, &parent);
        auto *label = card->findChild<QLabel *>(QStringLiteral("gpuUnavailable"));
        QVERIFY(label);
        QVERIFY(label->text().contains(QStringLiteral("No NVIDIA GPU / NVML not available")));
        QVERIFY(label->text().contains(QStringLiteral("libnvidia-ml.so.1")));
        QVERIFY(!card->findChild<QTableWidget *>());
    }

    void numaNodesListCpuRanges()
    {
        hw::MemoryInfo memory;
        memory.totalBytes = 64ull << 30;
        std::vector<hw::NumaNode> nodes(2);
        nodes[0].id = 0;
        nodes[0].cpus = {0, 1, 2, 3, 8, 9};
        nodes[1].id = 1;
        nodes[1].cpus = {4, 5, 6, 7, 10};
        nodes[1].memoryTotalBytes = 32ull << 30;
        QWidget parent;
        QGroupBox *card = createMemoryCard(memory, nodes, &parent);
        auto *table = card->findChild<QTableWidget *>();
        QVERIFY(table);
        QCOMPARE(table->item(0, 1)->text(), QStringLiteral("0-3,8-9"));
        QCOMPARE(table->item(1, 1)->text(), QStringLiteral("4-7,10"));
        QCOMPARE(table->item(0, 2)->text(), QStringLiteral("unknown"));
        QCOMPARE(table->item(1, 2)->text(), QStringLiteral("32.0 GiB"));
        QCOMPARE(card->findChild<QLabel *>(QStringLiteral("memoryTotal"))->text(), QStringLiteral("64.0 GiB"));
    }
};

QTEST_MAIN(tst_HardwareCards)
#include "tst_hardwarecards.moc"
