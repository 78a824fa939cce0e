// The pure parsers of core/hardware over documented sample texts (tests/data/hardware).
#include "core/common/cputopology.h"
#include "core/common/fileutil.h"
#include "core/hardware/procparsers.h"
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

class tst_ProcParsers : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void osReleaseUnquotesValues()
    {
        auto values = parseOsRelease(sample("os-release-ubuntu.txt"));
        QCOMPARE(values["PRETTY_NAME"], std::string("Ubuntu 22.04.4 LTS"));
        QCOMPARE(values["ID"], std::string("ubuntu"));
        QCOMPARE(values["VERSION_ID"], std::string("22.04"));
        QCOMPARE(values["HOME_URL"], std::string("https://www.ubuntu.com/"));
        QCOMPARE(values.count("# Comment lines and blank lines are allowed."), size_t(0));
    }

    void cpuInfoTwoSocketXeon()
    {
        const CpuInfo cpu = parseCpuInfo(sample("cpuinfo-xeon-2socket.txt"));
        QCOMPARE(cpu.model, std::string("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"));
        QCOMPARE(cpu.vendor, std::string("GenuineIntel"));
        QCOMPARE(cpu.sockets, 2);
        QCOMPARE(cpu.physicalCores, 4);
        QCOMPARE(cpu.logicalCpus, 8);
        QCOMPARE(cpu.availableCpus, 0);
        const std::vector<std::string> expected = {"avx", "avx2", "fma", "avx512f", "avx512_vnni"};
        QCOMPARE(cpu.flags, expected);
        QVERIFY(cpu.hasFlag("avx512f"));
        QVERIFY(!cpu.hasFlag("avx512_bf16"));
        QVERIFY(!cpu.hasFlag("amx_bf16"));
    }

    void cpuInfoArmWithoutTopologyCountsEveryCpuAsACore()
    {
        const CpuInfo cpu = parseCpuInfo(sample("cpuinfo-arm64.txt"));
        QCOMPARE(cpu.logicalCpus, 4);
        QCOMPARE(cpu.physicalCores, 4);
        QCOMPARE(cpu.sockets, 1);
        QCOMPARE(cpu.vendor, std::string("ARM implementer 0x41"));
        const std::vector<std::string> expected = {"asimd", "sve"};
        QCOMPARE(cpu.flags, expected);
    }

    // One count and one rule: the report, the launch merge and the runtime's OMP_NUM_THREADS all
    // come from core/common/cputopology.
    void threadsPerRankFromThePhysicalCores()
    {
        const CpuTopology xeon = parseCpuTopology(sample("cpuinfo-xeon-2socket.txt"));
        QCOMPARE(xeon.physicalCores, parseCpuInfo(sample("cpuinfo-xeon-2socket.txt")).physicalCores);
        QCOMPARE(threadsPerRank(xeon.physicalCores, 2), 2);
        QCOMPARE(threadsPerRank(xeon.physicalCores, 3), 1);
        QCOMPARE(threadsPerRank(xeon.physicalCores, 8), 1);
        QCOMPARE(threadsPerRank(xeon.physicalCores, 0), 4);
        QCOMPARE(threadsPerRank(0, 1), 1);
        QCOMPARE(localPhysicalCores(), std::max(1, parseCpuInfo(*fileutil::readFile("/proc/cpuinfo")).physicalCores));
    }

    void emptyCpuInfo()
    {
        const CpuInfo cpu = parseCpuInfo("");
        QCOMPARE(cpu.logicalCpus, 0);
        QCOMPARE(cpu.sockets, 0);
    }

    void memInfoInBytes()
    {
        const MemoryInfo memory = parseMemInfo(sample("meminfo.txt"));
        QCOMPARE(memory.totalBytes, uint64_t(527992640) * 1024);
        QCOMPARE(memory.availableBytes, uint64_t(498765432) * 1024);
        QCOMPARE(memory.swapTotalBytes, uint64_t(8388604) * 1024);
        QCOMPARE(memory.swapFreeBytes, uint64_t(8000000) * 1024);
    }

    void nodeMemInfo()
    {
        QCOMPARE(parseNodeMemTotal("Node 1 MemTotal:       263940480 kB\nNode 1 MemFree: 1 kB\n"),
                 uint64_t(263940480) * 1024);
        QCOMPARE(parseNodeMemTotal("garbage"), uint64_t(0));
    }

    void cpuLists_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("valid");
        QTest::addColumn<QString>("canonical");
        QTest::newRow("range") << "0-3" << true << "0-3";
        QTest::newRow("mixed") << "0-3,8,10-11\n" << true << "0-3,8,10-11";
        QTest::newRow("unsorted duplicates") << "5,1,2,3,2" << true << "1-3,5";
        QTest::newRow("single") << "7" << true << "7";
        QTest::newRow("empty") << "" << true << "";
        QTest::newRow("reversed range") << "3-1" << false << "";
        QTest::newRow("letters") << "0-a" << false << "";
        QTest::newRow("negative") << "-1" << false << "";
    }

    void cpuLists()
    {
        QFETCH(QString, text);
        QFETCH(bool, valid);
        QFETCH(QString, canonical);
        std::vector<int> cpus;
        QCOMPARE(parseCpuList(text.toStdString(), cpus), valid);
        if (valid)
            QCOMPARE(QString::fromStdString(formatCpuList(cpus)), canonical);
    }

    void ipv4DefaultRoute()
    {
        const auto interfaces = parseIpv4DefaultRoutes(sample("route.txt"));
        QCOMPARE(interfaces, std::set<std::string>({"eno1"}));
    }

    void ipv6DefaultRouteIgnoresRejectRoute()
    {
        const auto interfaces = parseIpv6DefaultRoutes(sample("ipv6_route.txt"));
        QCOMPARE(interfaces, std::set<std::string>({"eno2"}));
    }

    void splitHelpers()
    {
        QCOMPARE(trim("  a b \t\n"), std::string("a b"));
        QCOMPARE(splitWhitespace(" a  b\tc ").size(), size_t(3));
        QCOMPARE(splitLines("a\r\nb\n").size(), size_t(2));
        QCOMPARE(splitLines("a\r\nb\n")[0], std::string("a"));
    }
};

QTEST_GUILESS_MAIN(tst_ProcParsers)
#include "tst_procparsers.moc"
