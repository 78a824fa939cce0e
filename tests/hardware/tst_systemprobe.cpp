// The live sections of the report compared with what this machine says through other means:
// `nproc`, `hostname`, /proc, /sys, `df`. Also detection through a generated fake root.
#include "core/common/fileutil.h"
#include "core/hardware/hardwaredetector.h"
#include "core/hardware/procparsers.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::hardware;

static QString firstLineOf(const test::ProcessResult &result)
{
    return result.out.section(QLatin1Char('\n'), 0, 0).trimmed();
}

static void writeFile(const QString &path, const QByteArray &content)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(content);
}

class tst_SystemProbe : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void cpuMatchesNprocAndCpuinfo()
    {
        const CpuInfo cpu = detectCpu();
        // GNU nproc honours OMP_NUM_THREADS/OMP_THREAD_LIMIT (the test environment sets the first).
        const QStringList noOmp = {QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("OMP_THREAD_LIMIT")};
        const auto nproc = test::runProgram(QStringLiteral("nproc"), {}, 10000, {}, noOmp);
        QCOMPARE(nproc.exitCode, 0);
        QCOMPARE(cpu.availableCpus, firstLineOf(nproc).toInt());
        const auto all = test::runProgram(QStringLiteral("nproc"), {QStringLiteral("--all")}, 10000, {}, noOmp);
        QCOMPARE(cpu.logicalCpus, firstLineOf(all).toInt());
        auto text = fileutil::readFile("/proc/cpuinfo");
        QVERIFY(text.has_value());
        QCOMPARE(cpu.logicalCpus, static_cast<int>(QString::fromStdString(*text).count(QRegularExpression(
                                      QStringLiteral("^processor\\s*:"), QRegularExpression::MultilineOption))));
        QVERIFY(cpu.sockets >= 1);
        QVERIFY(cpu.physicalCores >= cpu.sockets);
        QVERIFY(cpu.physicalCores <= cpu.logicalCpus);
        // Every reported flag is really in /proc/cpuinfo.
        for (const std::string &flag : cpu.flags)
            QVERIFY2(text->find(" " + flag) != std::string::npos, flag.c_str());
    }

    void systemMatchesHostnameAndOsRelease()
    {
        const SystemInfo system = detectSystem();
        const auto hostname = test::runProgram(QStringLiteral("hostname"), {});
        QCOMPARE(QString::fromStdString(system.hostname), firstLineOf(hostname));
        const auto release = test::runProgram(QStringLiteral("uname"), {QStringLiteral("-r")});
        QCOMPARE(QString::fromStdString(system.kernelRelease), firstLineOf(release));
        auto osRelease = fileutil::readFile("/etc/os-release");
        if (osRelease) {
            QCOMPARE(system.osName, parseOsRelease(*osRelease)["PRETTY_NAME"]);
            QVERIFY(!system.osId.empty());
        }
        QVERIFY(system.platform.rfind("Linux-" + system.kernelRelease + "-", 0) == 0);
        QVERIFY(system.platform.find("-with-glibc" + system.libcVersion) != std::string::npos);
    }

    void numaNodesMatchSys()
    {
        const auto nodes = detectNumaNodes();
        const QStringList folders =
            QDir(QStringLiteral("/sys/devices/system/node")).entryList({QStringLiteral("node*")}, QDir::Dirs);
        if (folders.isEmpty())
            QSKIP("this kernel exposes no /sys/devices/system/node");
        QCOMPARE(nodes.size(), size_t(folders.size()));
        size_t cpus = 0;
        for (const auto &node : nodes)
            cpus += node.cpus.size();
        QCOMPARE(static_cast<int>(cpus), detectCpu().logicalCpus);
    }

    void memoryMatchesProcMeminfo()
    {
        const MemoryInfo memory = detectMemory();
        auto text = fileutil::readFile("/proc/meminfo");
        QVERIFY(text.has_value());
        QCOMPARE(memory.totalBytes, parseMemInfo(*text).totalBytes);
        QVERIFY(memory.totalBytes > 0);
        QVERIFY(memory.availableBytes <= memory.totalBytes);
    }

    void diskMatchesDf()
    {
        QTemporaryDir dir;
        const auto disks =
            detectDisks({dir.path().toStdString(), dir.filePath(QStringLiteral("not/yet/there")).toStdString()});
        QCOMPARE(disks.size(), size_t(2));
        QVERIFY(disks[0].error.empty());
        const auto df = test::runProgram(QStringLiteral("df"),
                                         {QStringLiteral("-B1"), QStringLiteral("--output=size"), dir.path()});
        if (df.exitCode != 0)
            QSKIP("df --output is not available");
        QCOMPARE(disks[0].totalBytes, df.out.split(QLatin1Char('\n')).value(1).trimmed().toULongLong());
        QVERIFY(disks[0].freeBytes <= disks[0].totalBytes);
        // A folder that does not exist yet is measured on its nearest existing parent.
        QVERIFY(disks[1].error.empty());
        QCOMPARE(disks[1].totalBytes, disks[0].totalBytes);
        QCOMPARE(disks[1].path, dir.filePath(QStringLiteral("not/yet/there")).toStdString());
    }

    void networkHasLoopbackAndDefaultRoute()
    {
        const auto interfaces = detectNetwork();
        const NetworkInterface *loopback = nullptr;
        for (const auto &interface : interfaces) {
            if (interface.name == "lo")
                loopback = &interface;
        }
        QVERIFY(loopback);
        QVERIFY(loopback->loopback);
        QVERIFY(loopback->mtu > 0);
        bool has127 = false;
        for (const auto &address : loopback->addresses)
            has127 =
                has127 || (address.family == "ipv4" && address.address == "127.0.0.1" && address.prefixLength == 8);
        QVERIFY(has127);
        auto route = fileutil::readFile("/proc/net/route");
        QVERIFY(route.has_value());
        const auto defaults = parseIpv4DefaultRoutes(*route);
        for (const auto &interface : interfaces)
            QCOMPARE(interface.defaultRouteIpv4, defaults.count(interface.name) > 0);
        const auto ip = test::runProgram(QStringLiteral("ip"), {QStringLiteral("-4"), QStringLiteral("route"),
                                                                QStringLiteral("show"), QStringLiteral("default")});
        if (ip.exitCode == 0 && !ip.out.trimmed().isEmpty()) {
            const QStringList words = ip.out.simplified().split(QLatin1Char(' '));
            const QString device = words.value(words.indexOf(QStringLiteral("dev")) + 1);
            QVERIFY2(defaults.count(device.toStdString()), qPrintable(ip.out));
        }
    }

    void fakeRootTree()
    {
        // Detection reads through DetectOptions::root, so a generated tree stands in for a host.
        QTemporaryDir root;
        const QString base = root.path();
        auto data = [](const char *name) {
            return *fileutil::readFile(test::dataPath(QStringLiteral("hardware/") + QLatin1String(name)).toStdString());
        };
        writeFile(base + QStringLiteral("/proc/cpuinfo"), QByteArray::fromStdString(data("cpuinfo-xeon-2socket.txt")));
        writeFile(base + QStringLiteral("/proc/meminfo"), QByteArray::fromStdString(data("meminfo.txt")));
        writeFile(base + QStringLiteral("/etc/os-release"), QByteArray::fromStdString(data("os-release-ubuntu.txt")));
        writeFile(base + QStringLiteral("/sys/devices/system/node/node0/cpulist"), "0-1,4-5\n");
        writeFile(base + QStringLiteral("/sys/devices/system/node/node0/meminfo"), "Node 0 MemTotal: 1048576 kB\n");
        writeFile(base + QStringLiteral("/sys/devices/system/node/node1/cpulist"), "2-3,6-7\n");
        writeFile(base + QStringLiteral("/sys/devices/system/node/possible"), "0-1\n");
        const std::string rootPath = base.toStdString();
        const CpuInfo cpu = detectCpu(rootPath);
        QCOMPARE(cpu.sockets, 2);
        QCOMPARE(cpu.logicalCpus, 8);
        QCOMPARE(detectMemory(rootPath).swapTotalBytes, uint64_t(8388604) * 1024);
        QCOMPARE(detectSystem(rootPath).osName, std::string("Ubuntu 22.04.4 LTS"));
        const auto nodes = detectNumaNodes(rootPath);
        QCOMPARE(nodes.size(), size_t(2));
        QCOMPARE(formatCpuList(nodes[1].cpus), std::string("2-3,6-7"));
        QCOMPARE(nodes[0].memoryTotalBytes, uint64_t(1) << 30);
        QCOMPARE(nodes[1].memoryTotalBytes, uint64_t(0));
    }

    void wholeReportWithoutChildren()
    {
        DetectOptions options;
        options.probePython = false;
        options.probeWorker = false;
        options.nvmlLibrary = "libnvidia-ml-accel-test-absent.so.1";
        const HardwareReport report = detectHardware(options);
        QVERIFY(report.generatedAt.size() == 20 && report.generatedAt.back() == 'Z');
        QVERIFY(report.cpu.logicalCpus > 0);
        QVERIFY(report.gpu.gpus.empty());
        QVERIFY(report.gpu.unavailableReason.rfind("NVML not available: ", 0) == 0);
        QCOMPARE(report.disks.size(), defaultDiskPaths().size());
        QVERIFY(!report.python.available);
    }

    // The probe through the one NVML loader, on the two-GPU stand-in library (no GPU here).
    void gpusThroughTheNvmlLoader()
    {
        DetectOptions options;
        options.probePython = false;
        options.probeWorker = false;
        options.nvmlLibrary = ACCEL_FAKE_NVML;
        const HardwareReport report = detectHardware(options);
        QCOMPARE(report.gpu.source, std::string("nvml"));
        QCOMPARE(report.gpu.unavailableReason, std::string());
        QCOMPARE(report.gpu.driverVersion, std::string("550.54.15"));
        QCOMPARE(report.gpu.cudaDriverVersion, std::string("12.4"));
        QCOMPARE(report.gpu.gpus.size(), size_t(2));
        QCOMPARE(report.gpu.gpus[1].name, std::string("Fake GPU 1"));
        QCOMPARE(report.gpu.gpus[1].memoryUsedBytes, uint64_t(2) << 30);
        QCOMPARE(report.gpu.gpus[0].computeMajor, 9);
        QCOMPARE(report.gpu.gpus[0].processes.size(), size_t(1));
        QCOMPARE(report.gpu.gpus[0].processes[0].pid, 4242u);
    }
};

QTEST_GUILESS_MAIN(tst_SystemProbe)
#include "tst_systemprobe.moc"
