// The Hardware page detects this machine on a worker thread and shows what /proc/cpuinfo says.
#include "app/studio/hardwarepage.h"

#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QtTest>

using namespace accel::app;

namespace {
struct CpuInfoFacts {
    QString model;
    int logicalCpus = 0;
    int physicalCores = 0; // distinct (physical id, core id) pairs; 0 when the file lacks them
};

CpuInfoFacts readProcCpuinfo()
{
    CpuInfoFacts facts;
    QFile file(QStringLiteral("/proc/cpuinfo"));
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return facts;
    const QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'));
    QSet<QString> cores;
    QString physicalId;
    for (const QString &line : lines) {
        const QString key = line.section(QLatin1Char(':'), 0, 0).trimmed();
        const QString value = line.section(QLatin1Char(':'), 1).trimmed();
        if (key == QLatin1String("processor"))
            ++facts.logicalCpus;
        else if (key == QLatin1String("model name") && facts.model.isEmpty())
            facts.model = value;
        else if (key == QLatin1String("physical id"))
            physicalId = value;
        else if (key == QLatin1String("core id"))
            cores.insert(physicalId + QLatin1Char('/') + value);
    }
    facts.physicalCores = static_cast<int>(cores.size());
    return facts;
}

accel::hardware::DetectOptions fastOptions()
{
    accel::hardware::DetectOptions options;
    options.probePython = false; // seconds of Python start-up that this test does not look at
    options.probeWorker = false;
    return options;
}
} // namespace

class tst_HardwarePage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void showsThisMachinesCpu()
    {
        const CpuInfoFacts facts = readProcCpuinfo();
        if (facts.logicalCpus == 0)
            QSKIP("/proc/cpuinfo is not readable here");
        HardwarePage page;
        page.setDetectOptions(fastOptions());
        QSignalSpy finished(&page, &HardwarePage::detectionFinished);
        page.show(); // the first show starts detection
        QVERIFY(page.isDetecting());
        QVERIFY(finished.wait(60000));
        QVERIFY(page.hasReport());
        QVERIFY(!page.isDetecting());

        auto *model = page.findChild<QLabel *>(QStringLiteral("cpuModel"));
        QVERIFY(model);
        if (!facts.model.isEmpty())
            QCOMPARE(model->text(), facts.model);
        auto *logical = page.findChild<QLabel *>(QStringLiteral("cpuLogicalCpus"));
        QVERIFY(logical);
        QCOMPARE(logical->text(), QString::number(facts.logicalCpus));
        auto *physical = page.findChild<QLabel *>(QStringLiteral("cpuPhysicalCores"));
        QVERIFY(physical);
        if (facts.physicalCores > 0)
            QCOMPARE(physical->text(), QString::number(facts.physicalCores));
        QVERIFY(physical->text().toInt() >= 1);
        QVERIFY(physical->text().toInt() <= facts.logicalCpus);

        for (const char *card :
             {"cpuCard", "memoryCard", "diskCard", "networkCard", "gpuCard", "recommendationCard", "softwareCard"})
            QVERIFY2(page.findChild<QGroupBox *>(QString::fromLatin1(card)), card);
        // No NVIDIA driver in CI: the GPU card says so instead of showing an empty table.
        if (page.report().gpu.gpus.empty()) {
            auto *none = page.findChild<QLabel *>(QStringLiteral("gpuUnavailable"));
            QVERIFY(none);
            QVERIFY(none->text().contains(QStringLiteral("No NVIDIA GPU")));
        }

        const QString text = page.reportText();
        if (!facts.model.isEmpty())
            QVERIFY2(text.contains(facts.model), qPrintable(text));
    }

    void refreshRunsAgainWithoutBlocking()
    {
        HardwarePage page;
        page.setDetectOptions(fastOptions());
        QSignalSpy finished(&page, &HardwarePage::detectionFinished);
        page.refresh();
        page.refresh(); // ignored while running
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.count(), 1);
        auto *openButton = page.findChild<QPushButton *>(QStringLiteral("openInConfigure"));
        QVERIFY(openButton->isEnabled());
        QSignalSpy open(&page, &HardwarePage::openInConfigureRequested);
        openButton->click();
        QCOMPARE(open.count(), 1);
        const auto config = page.recommendedConfig();
        QVERIFY(config.numProcesses.has_value());
    }
};

QTEST_MAIN(tst_HardwarePage)
#include "tst_hardwarepage.moc"
