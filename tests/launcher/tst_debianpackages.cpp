// The Debian packages end to end (label `package`, minutes: it downloads a Debian 12 system and Qt).
// packaging/package.sh writes accel, accel-studio, accel-worker and accel-worker-cuda from this build;
// debootstrap makes a fresh Debian 12 (bookworm, minbase) root from deb.debian.org; `apt install` of the
// first three there brings every dependency from Debian alone. Inside the root, which sees neither the
// build tree nor the Python environment (nor anything else of this machine's file system), with the
// CPU-only worker: no CUDA library beyond what libtorch_cpu.so needs, `accel --version`,
// `accel-worker --capabilities --json` (no CUDA, and why), `accel demo` to its end on 2 CPU ranks, and
// the desktop entry's Exec line starting the studio on an X server (Xvfb) far enough to render its
// window. Last, accel-worker-cuda installed on top gives the worker its CUDA plugin and NCCL.
#include "tests/helpers/accelpackages.h"
#include "tests/helpers/sanitizerbuild.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <unistd.h>

class tst_DebianPackages : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void versionAndWorkerCapabilities();
    void demoRunsToTheEnd();
    void menuEntryStartsTheStudio();
    void cudaPackageAddsNccl();

private:
    // Runs `command` (sh) inside the root, with /proc, /sys and /dev mounted in a private mount
    // namespace that ends with it.
    accel::test::ProcessResult inRoot(const QString &command, int timeoutMs = 600000);

    QTemporaryDir m_scratch;
    QString m_root;
};

namespace {

void logStep(const char *what, const QElapsedTimer &clock)
{
    qInfo("%s (%.0f s)", what, static_cast<double>(clock.elapsed()) / 1000.0);
}

#ifdef ACCEL_UNDER_SANITIZER
// The packages of a sanitizer build carry instrumented programs; inside the root, which sees none of
// this machine's files, LeakSanitizer reads the project's suppressions from a copy (initTestCase).
#define ACCEL_ROOT_LSAN_SUPPRESSIONS "/etc/accel-studio-lsan.supp"
constexpr char kRootSuppressions[] = ACCEL_ROOT_LSAN_SUPPRESSIONS;
#define kRootSanitizerOptions "LSAN_OPTIONS=suppressions=" ACCEL_ROOT_LSAN_SUPPRESSIONS " "
#else
#define kRootSanitizerOptions ""
#endif

} // namespace

accel::test::ProcessResult tst_DebianPackages::inRoot(const QString &command, int timeoutMs)
{
    const QString script =
        QStringLiteral("set -e; r=\"$1\"; mount -t proc proc \"$r/proc\"; mount -t sysfs sys \"$r/sys\"; "
                       "mount --rbind /dev \"$r/dev\"; "
                       "exec chroot \"$r\" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin:/usr/sbin:/sbin "
                       "LANG=C.UTF-8 " kRootSanitizerOptions "/bin/sh -c \"$2\"");
    return accel::test::runProgram(QStringLiteral("unshare"),
                                   {QStringLiteral("--mount"), QStringLiteral("--propagation"),
                                    QStringLiteral("private"), QStringLiteral("sh"), QStringLiteral("-c"), script,
                                    QStringLiteral("sh"), m_root, command},
                                   timeoutMs);
}

void tst_DebianPackages::initTestCase()
{
    if (::geteuid() != 0)
        QSKIP("needs root (debootstrap, chroot, mounts)");
    if (!QFileInfo(QStringLiteral("/usr/sbin/debootstrap")).isExecutable())
        QSKIP("debootstrap is not installed (Debian: debootstrap)");
    QVERIFY2(QFileInfo(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))).isExecutable(),
             "build accel, accel-studio and accel-worker first");
    QVERIFY(m_scratch.isValid());
    QElapsedTimer clock;
    clock.start();
    const QString dist = m_scratch.filePath(QStringLiteral("dist"));
    const QString made =
        accel::test::makeAccelPackages(dist, QStringLiteral("accel,accel-studio,accel-worker,accel-worker-cuda"));
    QVERIFY2(made.isEmpty(), qPrintable(made));
    logStep("packages written", clock);

    m_root = m_scratch.filePath(QStringLiteral("root"));
    const auto strapped = accel::test::runProgram(QStringLiteral("/usr/sbin/debootstrap"),
                                                  {QStringLiteral("--variant=minbase"), QStringLiteral("bookworm"),
                                                   m_root, QStringLiteral("http://deb.debian.org/debian")},
                                                  1200000);
    QVERIFY2(strapped.exitCode == 0, qPrintable(strapped.out.right(3000) + strapped.err.right(3000)));
    logStep("debootstrap done", clock);
    QFile::remove(m_root + QStringLiteral("/etc/resolv.conf"));
    QVERIFY(QFile::copy(QStringLiteral("/etc/resolv.conf"), m_root + QStringLiteral("/etc/resolv.conf")));
#ifdef ACCEL_UNDER_SANITIZER
    QVERIFY(QFile::copy(QDir(accel::test::sourceDir()).filePath(QStringLiteral("tests/sanitizers/lsan.supp")),
                        m_root + QLatin1String(kRootSuppressions)));
#endif
    QVERIFY(QDir().mkpath(m_root + QStringLiteral("/tmp/debs")));
    QVERIFY(QDir().mkpath(m_root + QStringLiteral("/tmp/debs-cuda")));
    for (const QString &deb : QDir(dist).entryList({QStringLiteral("*.deb")}, QDir::Files)) {
        const QString folder = deb.startsWith(QStringLiteral("accel-worker-cuda_")) ? QStringLiteral("/tmp/debs-cuda/")
                                                                                    : QStringLiteral("/tmp/debs/");
        QVERIFY(QFile::rename(QDir(dist).filePath(deb), m_root + folder + deb));
    }
    QVERIFY2(!QDir(m_root + QStringLiteral("/tmp/debs-cuda")).isEmpty(), "package.sh wrote no accel-worker-cuda");

    // The packages and their Debian dependencies; xvfb and xauth only for the menu entry's check.
    const auto installed =
        inRoot(QStringLiteral("export DEBIAN_FRONTEND=noninteractive; apt-get update -q && "
                              "apt-get install -y -q ./tmp/debs/*.deb xvfb xauth && rm -rf /tmp/debs"),
               1800000);
    QVERIFY2(installed.exitCode == 0, qPrintable(installed.out.right(4000) + installed.err.right(4000)));
    logStep("apt install ./*.deb done", clock);
    // Nothing of this machine's build or Python environment is there to lean on.
    const auto isolated = inRoot(
        QStringLiteral("test ! -e %1 && test ! -e %2 && ! ldd /usr/bin/accel-worker | grep -e 'not found' -e /work")
            .arg(accel::test::sourceDir(), QDir(accel::test::binDir()).absolutePath()));
    QVERIFY2(isolated.exitCode == 0, qPrintable(isolated.out + isolated.err));
    // The CPU-only worker: of CUDA, only what libtorch_cpu.so itself NEEDs (the CUDA runtime, CUPTI). Read
    // from outside: the minimal root has no readelf.
    const QString carried = m_root + QStringLiteral("/usr/lib/accel-studio");
    const auto torchCpu = accel::test::runProgram(QStringLiteral("readelf"),
                                                  {QStringLiteral("-d"), carried + QStringLiteral("/libtorch_cpu.so")});
    QCOMPARE(torchCpu.exitCode, 0);
    const QStringList names = QDir(carried).entryList(QDir::Files);
    qInfo("accel-worker carries: %s", qPrintable(names.join(QLatin1Char(' '))));
    for (const QString &name : names) {
        if (name.contains(QRegularExpression(
                QStringLiteral("^lib(cu|nccl|nvshmem|nvrtc|nvJit|torch\\.so|torch_cuda|c10_cuda|caffe2_nvrtc)"))))
            QVERIFY2(torchCpu.out.contains(QStringLiteral("[%1]").arg(name)), qPrintable(name));
    }
}

void tst_DebianPackages::versionAndWorkerCapabilities()
{
    const auto version = inRoot(QStringLiteral("accel --version"));
    QCOMPARE(version.exitCode, 0);
    QCOMPARE(version.out.trimmed(), QStringLiteral("accel %1").arg(ACCEL_VERSION));
    const auto capabilities = inRoot(QStringLiteral("accel-worker --capabilities --json"));
    QVERIFY2(capabilities.exitCode == 0, qPrintable(capabilities.out + capabilities.err));
    const QJsonObject report = QJsonDocument::fromJson(capabilities.out.toUtf8()).object();
    QVERIFY2(!report.isEmpty(), qPrintable(capabilities.out));
    qInfo("accel-worker --capabilities --json: %s", qPrintable(capabilities.out.simplified().left(600)));
    QVERIFY2(capabilities.out.contains(QStringLiteral("2.12")), qPrintable(capabilities.out)); // its libtorch
    QCOMPARE(report.value(QStringLiteral("cuda_compiled")).toBool(true), false);
    QVERIFY2(report.value(QStringLiteral("cuda_plugin")).toString().contains(QStringLiteral("accel-worker-cuda")),
             qPrintable(capabilities.out));
    const auto man = inRoot(QStringLiteral("test -s /usr/share/man/man1/accel.1.gz && test -s "
                                           "/usr/share/man/man1/accel-worker.1.gz && test -s "
                                           "/usr/share/man/man1/accel-studio.1.gz"));
    QCOMPARE(man.exitCode, 0);
}

void tst_DebianPackages::demoRunsToTheEnd()
{
    QElapsedTimer clock;
    clock.start();
    const auto demo = inRoot(QStringLiteral("OMP_NUM_THREADS=1 accel demo --json"), 900000);
    QVERIFY2(demo.exitCode == 0, qPrintable(demo.out.right(3000) + demo.err.right(3000)));
    const QJsonObject summary = QJsonDocument::fromJson(demo.out.toUtf8()).object();
    qInfo("accel demo --json (%.0f s): %s", static_cast<double>(clock.elapsed()) / 1000.0,
          qPrintable(demo.out.simplified().left(800)));
    QCOMPARE(summary.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.demo"));
    QCOMPARE(summary.value(QStringLiteral("exit_code")).toInt(-1), 0);
    QVERIFY(summary.value(QStringLiteral("total_steps")).toInt() > 0);
    QCOMPARE(summary.value(QStringLiteral("steps")).toInt(), summary.value(QStringLiteral("total_steps")).toInt());
}

void tst_DebianPackages::menuEntryStartsTheStudio()
{
    const auto desktop = inRoot(QStringLiteral("cat /usr/share/applications/accel-studio.desktop"));
    QCOMPARE(desktop.exitCode, 0);
    const auto exec = QRegularExpression(QStringLiteral("(?m)^Exec=(\\S+)")).match(desktop.out);
    QVERIFY2(exec.hasMatch(), qPrintable(desktop.out));
    QVERIFY(desktop.out.contains(QStringLiteral("Icon=accel-studio")));
    const auto icon =
        inRoot(QStringLiteral("test -s /usr/share/icons/hicolor/scalable/apps/accel-studio.svg && test -s "
                              "/usr/share/metainfo/accel-studio.metainfo.xml"));
    QCOMPARE(icon.exitCode, 0);
    // The program the menu starts, on an X server, rendering its first window to a file.
    const auto started =
        inRoot(QStringLiteral("cd /root && QT_QPA_PLATFORM=xcb xvfb-run -a -s '-screen 0 1280x860x24' %1 "
                              "--screenshot /root/studio.png && test -s /root/studio.png")
                   .arg(exec.captured(1)),
               180000);
    QVERIFY2(started.exitCode == 0, qPrintable(started.out.right(3000) + started.err.right(3000)));
}

void tst_DebianPackages::cudaPackageAddsNccl()
{
    QElapsedTimer clock;
    clock.start();
    const auto installed =
        inRoot(QStringLiteral("export DEBIAN_FRONTEND=noninteractive; "
                              "apt-get install -y -q ./tmp/debs-cuda/*.deb && rm -rf /tmp/debs-cuda"),
               1800000);
    QVERIFY2(installed.exitCode == 0, qPrintable(installed.out.right(4000) + installed.err.right(4000)));
    logStep("apt install ./accel-worker-cuda_*.deb done", clock);
    const auto capabilities = inRoot(QStringLiteral("accel-worker --capabilities --json"));
    QVERIFY2(capabilities.exitCode == 0, qPrintable(capabilities.out + capabilities.err));
    qInfo("with accel-worker-cuda: %s", qPrintable(capabilities.out.simplified().left(400)));
    const QJsonObject report = QJsonDocument::fromJson(capabilities.out.toUtf8()).object();
    QCOMPARE(report.value(QStringLiteral("cuda_compiled")).toBool(), true);
    QCOMPARE(report.value(QStringLiteral("cuda_plugin")).toString(),
             QStringLiteral("/usr/lib/accel-studio/libaccel_runtime_cuda.so"));
    QVERIFY2(report.value(QStringLiteral("nccl_version")).toString().count(QLatin1Char('.')) == 2,
             qPrintable(capabilities.out));
    const auto closure =
        inRoot(QStringLiteral("! ldd /usr/lib/accel-studio/libaccel_runtime_cuda.so | grep 'not found'"));
    QVERIFY2(closure.exitCode == 0, qPrintable(closure.out + closure.err));
}

QTEST_GUILESS_MAIN(tst_DebianPackages)
#include "tst_debianpackages.moc"
