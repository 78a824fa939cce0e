// The Launch page on the offscreen platform: the live command, the exports written to files, and
// a real detached launch through `accel launch --detach` (skipped when accel-worker is not built).
#include "app/studio/launch/launchpage.h"
#include "core/config/configio.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using accel::app::LaunchPage;
namespace ex = accel::launcher::exporting;

namespace {

QString writeConfig(const QString &path, const char *yaml)
{
    auto config = config::parseConfig(yaml, config::ConfigFormat::Yaml, path.toStdString());
    if (!config || !config::saveConfigFile(*config, path.toStdString()))
        qFatal("cannot write test config %s", qPrintable(path));
    return path;
}

const char *kTwoCpuRanks = "distributed_type: MULTI_CPU\nmixed_precision: 'no'\nnum_processes: 2\nuse_cpu: true\n";

} // namespace

class tst_LaunchPage : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void commandFollowsTheForm();
    void exportsWriteFiles();
    void demoIsPrepared();
    void launchesARealJob();
};

void tst_LaunchPage::commandFollowsTheForm()
{
    QTemporaryDir dir;
    LaunchPage page;
    auto *preview = page.findChild<QPlainTextEdit *>(QStringLiteral("commandPreview"));
    QVERIFY(preview);
    QVERIFY(preview->toPlainText().startsWith("# ")); // nothing chosen yet: the reason
    QVERIFY(!page.launchButton()->isEnabled());

    const QString config = writeConfig(dir.path() + "/my config.yaml", kTwoCpuRanks);
    page.setScript("train.py", "--lr 3e-4 --tag 'a b'");
    page.setConfigFile(config);
    QCOMPARE(preview->toPlainText(), "accel launch --config_file '" + config + "' train.py --lr 3e-4 --tag 'a b'");
    QVERIFY(page.launchButton()->isEnabled());

    // Typing in the fields updates the command at once.
    page.findChild<QLineEdit *>(QStringLiteral("interpreter"))->setText("/opt/venv/bin/python");
    QVERIFY(preview->toPlainText().startsWith("PYTHON_EXEC=/opt/venv/bin/python accel launch"));
    page.findChild<QLineEdit *>(QStringLiteral("arguments"))->setText("'unterminated");
    QVERIFY(preview->toPlainText().contains("unterminated single quote"));
    QVERIFY(!page.launchButton()->isEnabled());

    page.setProgramKind(LaunchPage::ProgramKind::Recipe);
    page.setJobFile("/jobs/demo-gpt.yaml");
    QCOMPARE(preview->toPlainText(), "accel launch --config_file '" + config + "' --job /jobs/demo-gpt.yaml");

    page.setConfigFile(dir.path() + "/missing.yaml");
    QVERIFY(preview->toPlainText().contains("missing.yaml"));
    QVERIFY(!page.launch());
}

void tst_LaunchPage::exportsWriteFiles()
{
    QTemporaryDir dir;
    LaunchPage page;
    page.setConfigFile(writeConfig(dir.path() + "/c.yaml", kTwoCpuRanks));
    page.setScript("train.py", "--epochs 2");

    QVERIFY(page.saveConfigAs(dir.path() + "/c.json"));
    auto json = config::loadConfigFile((dir.path() + "/c.json").toStdString());
    QVERIFY(json);
    QCOMPARE(json->numProcesses, std::optional<std::int64_t>(2));

    for (ex::ExportForm form : {ex::ExportForm::AccelLaunch, ex::ExportForm::AccelerateLaunch, ex::ExportForm::Torchrun,
                                ex::ExportForm::Sbatch}) {
        const QString path = dir.path() + "/export-" + ex::exportFormName(form) + ".sh";
        QVERIFY(page.saveExport(form, path));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(file.readAll());
        QVERIFY(text.startsWith("#!/bin/bash\n"));
        QVERIFY2(text.contains("train.py --epochs 2"), qPrintable(text));
        QProcess bash;
        bash.start("bash", {"-n", path});
        QVERIFY(bash.waitForFinished(10000));
        QCOMPARE(bash.exitCode(), 0);
        auto imported = ex::importCommand(text.toStdString());
        QVERIFY(imported);
        QCOMPARE(imported->config.numProcesses, std::optional<std::int64_t>(2));
    }
}

void tst_LaunchPage::demoIsPrepared()
{
    QTemporaryDir dir;
    LaunchPage page;
    const QString job = LaunchPage::findDemoJob();
    QVERIFY2(!job.isEmpty(), "resources/jobs/demo-gpt.yaml not found");
    page.prepareDemo(job, dir.path() + "/demo_config.yaml");
    QVERIFY(page.demoButton()->isVisibleTo(&page));
    QVERIFY(page.demoButton()->isEnabled());
    auto config = config::loadConfigFile((dir.path() + "/demo_config.yaml").toStdString());
    QVERIFY(config);
    QCOMPARE(config->distributedType, config::DistributedType::MultiCpu);
    QCOMPARE(config->numProcesses, std::optional<std::int64_t>(2));
    QVERIFY(page.commandText().endsWith("--job " + job));
}

void tst_LaunchPage::launchesARealJob()
{
    const QString accel = QDir(test::binDir()).filePath("accel");
    const QString worker = QDir(test::binDir()).filePath("accel-worker");
    if (!QFileInfo(accel).isExecutable() || !QFileInfo(worker).isExecutable())
        QSKIP("accel or accel-worker is not built (the worker needs libtorch)");
    QTemporaryDir dir;
    qputenv("XDG_DATA_HOME", dir.path().toLocal8Bit()); // runs go under the scratch folder

    LaunchPage page;
    page.setAccelProgram(accel);
    page.setConfigFile(writeConfig(dir.path() + "/c.yaml", kTwoCpuRanks));
    page.setJobFile(test::sourceDir() + "/resources/jobs/selftest.yaml");
    QSignalSpy launched(&page, &LaunchPage::launched);
    QSignalSpy failed(&page, &LaunchPage::launchFailed);
    QSignalSpy monitor(&page, &LaunchPage::openMonitorRequested);
    QVERIFY(page.launch());
    QVERIFY(page.isBusy()); // non-blocking: the page returns before accel does
    QTRY_VERIFY_WITH_TIMEOUT(launched.count() + failed.count() > 0, 30000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    const QString id = launched.first().at(0).toString();
    const QString runDir = launched.first().at(1).toString();
    QVERIFY(!id.isEmpty());
    QCOMPARE(page.runId(), id);
    QCOMPARE(QFileInfo(runDir).fileName(), id);
    QVERIFY(QFileInfo::exists(runDir + "/run.json"));
    QVERIFY(runDir.startsWith(dir.path()));

    // "Open monitor" hands the run directory to the window.
    auto buttons = page.findChildren<QPushButton *>();
    for (QPushButton *button : buttons) {
        if (button->text() == "Open monitor")
            button->click();
    }
    QCOMPARE(monitor.count(), 1);
    QCOMPARE(monitor.first().first().toString(), runDir);

    QSignalSpy stopped(&page, &LaunchPage::stopFinished);
    QVERIFY(page.stop());
    QTRY_VERIFY_WITH_TIMEOUT(stopped.count() == 1, 30000);
    // accel stop ended the supervisor (or found the short run already finished): exit 0 either way.
    QVERIFY2(stopped.first().first().toInt() == 0, qPrintable(stopped.first().at(1).toString()));
}

QTEST_MAIN(tst_LaunchPage)
#include "tst_launchpage.moc"
