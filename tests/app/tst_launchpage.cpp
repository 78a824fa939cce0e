// The Launch page on the offscreen platform: the live command, the exports written to files, and
// a real detached launch through `accel launch --detach` (skipped when accel-worker is not built).
#include "app/studio/configurepage.h"
#include "app/studio/launch/launchpage.h"
#include "app/studio/launch/recipeform.h"
#include "core/config/configio.h"
#include "core/config/questionflow.h"
#include "launcher/jobfile.h"
#include "tests/helpers/testsupport.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
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

QString corpus()
{
    return QFileInfo(test::sourceDir() + "/resources/corpus/corpus.txt").canonicalFilePath();
}

const char *kTwoCpuRanks = "distributed_type: MULTI_CPU\nmixed_precision: 'no'\nnum_processes: 2\nuse_cpu: true\n";

} // namespace

class tst_LaunchPage : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void commandFollowsTheForm();
    void exportsWriteFiles();
    void exportsKeepTheInterpreterRunDirAndName();
    void demoIsPrepared();
    void recipeFormValidatesAndRoundTrips();
    void failedRecipeLaunchLeavesNoStagedRun();
    void launchesARealJob();
    void configureLaunchAndCliAgreeOnProcessCount();
    void stopNeverStaysStuckWhenAccelCannotStart();
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

    // The recipe form: invalid until the corpus is chosen, then the staged job in the command.
    page.setProgramKind(LaunchPage::ProgramKind::Recipe);
    QVERIFY2(preview->toPlainText().contains("recipe form: data.corpus: required"), qPrintable(preview->toPlainText()));
    QVERIFY(!page.launchButton()->isEnabled());
    page.recipeForm()->setValue("data.corpus", corpus());
    const QString staged = page.stagedJobPath();
    QVERIFY(staged.endsWith("-gpt-" + staged.section('-', -1)));
    QCOMPARE(preview->toPlainText(), "accel launch --config_file '" + config + "' --run_dir " +
                                         QFileInfo(staged).path() + " --name gpt --job " + staged);
    QVERIFY(page.launchButton()->isEnabled());
    QVERIFY(!QFileInfo::exists(staged)); // written only when launching or exporting

    // A job file that is not a gpt/mlp job (here: missing) is run as a plain job file.
    page.setJobFile("/jobs/demo-gpt.yaml");
    QCOMPARE(page.programKind(), LaunchPage::ProgramKind::JobFile);
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
    // Scripts name accel by the absolute path this studio runs (it may not be on PATH).
    const QString accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    page.setAccelProgram(accel);

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
        // Regression: exported scripts were not executable and called `accel` by bare name.
        QVERIFY2(QFileInfo(path).isExecutable(), qPrintable(path));
        if (form == ex::ExportForm::AccelLaunch && QFileInfo(accel).isExecutable())
            QVERIFY2(text.contains(accel + " launch"), qPrintable(text));
        QProcess bash;
        bash.start("bash", {"-n", path});
        QVERIFY(bash.waitForFinished(10000));
        QCOMPARE(bash.exitCode(), 0);
        auto imported = ex::importCommand(text.toStdString());
        QVERIFY(imported);
        QCOMPARE(imported->config.numProcesses, std::optional<std::int64_t>(2));
    }
}

// Regression: the exported accel-launch.sh dropped the interpreter (PYTHON_EXEC), --run_dir and
// --name, and the sbatch job was named `accel`. The exported script runs the script with the
// interpreter the page names; a recipe's export names the run as Launch does.
void tst_LaunchPage::exportsKeepTheInterpreterRunDirAndName()
{
    const QString accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (!QFileInfo(accel).isExecutable() || !QFileInfo(python).isExecutable())
        QSKIP("accel is not built or ACCEL_PYTHON is missing");
    QTemporaryDir dir;
    const QString config =
        writeConfig(dir.filePath(QStringLiteral("c.yaml")),
                    "distributed_type: 'NO'\nmixed_precision: 'no'\nnum_processes: 1\nuse_cpu: true\n");
    QFile script(dir.filePath(QStringLiteral("which.py")));
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write("import sys\nprint('interpreter:', sys.executable, 'args:', sys.argv[1:])\n");
    script.close();
    LaunchPage page;
    page.setAccelProgram(accel);
    page.setConfigFile(config);
    page.setScript(script.fileName(), QStringLiteral("--lr 0.1"));
    page.setInterpreter(python);

    const QString exported = dir.filePath(QStringLiteral("accel-launch.sh"));
    QVERIFY(page.saveExport(ex::ExportForm::AccelLaunch, exported));
    const QString data = dir.filePath(QStringLiteral("data"));
    const auto ran = test::runProgram(QStringLiteral("bash"), {exported}, 60000, {},
                                      {QStringLiteral("XDG_DATA_HOME=") + data, QStringLiteral("PYTHON_EXEC=")});
    QVERIFY2(ran.exitCode == 0, qPrintable(ran.err));
    const QStringList runs =
        QDir(data + QStringLiteral("/accel-studio/runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(runs.size(), 1);
    QFile log(data + QStringLiteral("/accel-studio/runs/") + runs.first() + QStringLiteral("/logs/rank0.log"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QString printed = QString::fromUtf8(log.readAll());
    QVERIFY2(printed.contains(QStringLiteral("interpreter: ") + python + QStringLiteral(" args: ['--lr', '0.1']")),
             qPrintable(printed));
    auto sbatch = page.exportText(ex::ExportForm::Sbatch);
    QVERIFY(sbatch);
    QVERIFY2(QString::fromStdString(*sbatch).contains(QStringLiteral("#SBATCH --job-name=which\n")), sbatch->c_str());
    QVERIFY2(QString::fromStdString(*sbatch).contains(QStringLiteral("PYTHON_EXEC=") + python), sbatch->c_str());

    // A recipe: the export names the staged run folder and the run as the command Launch runs.
    page.setProgramKind(LaunchPage::ProgramKind::Recipe);
    page.recipeForm()->setValue(QStringLiteral("data.corpus"), corpus());
    page.recipeForm()->setValue(QStringLiteral("name"), QStringLiteral("tiny-gpt"));
    auto accelText = page.exportText(ex::ExportForm::AccelLaunch);
    QVERIFY(accelText);
    auto imported = ex::importCommand(*accelText);
    QVERIFY2(imported, accelText->c_str());
    QCOMPARE(QString::fromStdString(imported->runDirectory), QFileInfo(page.stagedJobPath()).path());
    QCOMPARE(QString::fromStdString(imported->runName), QStringLiteral("tiny-gpt"));
    auto arguments = page.launchArguments();
    QVERIFY(arguments);
    QVERIFY2(QString::fromStdString(*accelText).contains(arguments->mid(1).join(QLatin1Char(' '))), accelText->c_str());
    sbatch = page.exportText(ex::ExportForm::Sbatch);
    QVERIFY(sbatch);
    QVERIFY2(QString::fromStdString(*sbatch).contains(QStringLiteral("#SBATCH --job-name=tiny-gpt\n")) &&
                 QString::fromStdString(*sbatch).contains(QStringLiteral("--name tiny-gpt")),
             sbatch->c_str());
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
    QCOMPARE(page.programKind(), LaunchPage::ProgramKind::Recipe);
    QCOMPARE(page.recipeForm()->jobPath(), job);
    QCOMPARE(page.recipeForm()->value("model.n_embd"), QString("128"));
    QCOMPARE(page.recipeForm()->value("training.max_steps"), QString("300"));
    QVERIFY(page.commandText().contains("--name demo-gpt --job " + page.stagedJobPath()));
}

void tst_LaunchPage::recipeFormValidatesAndRoundTrips()
{
    QTemporaryDir dir;
    LaunchPage page;
    page.setConfigFile(writeConfig(dir.path() + "/c.yaml", kTwoCpuRanks));
    page.setProgramKind(LaunchPage::ProgramKind::Recipe);
    app::RecipeForm *form = page.recipeForm();
    page.show();
    form->setValue("data.corpus", corpus());

    // Typing a head count that does not divide n_embd shows the problem beside n_embd at once.
    auto *heads = qobject_cast<QLineEdit *>(form->editor("model.n_head"));
    QVERIFY(heads);
    heads->selectAll();
    QTest::keyClicks(heads, "3");
    QCOMPARE(form->value("model.n_head"), QString("3"));
    QVERIFY2(form->fieldError("model.n_embd").contains("divisible by model.n_head (3)"),
             qPrintable(form->fieldError("model.n_embd")));
    auto *error = form->findChild<QLabel *>("error:model.n_embd");
    QVERIFY(error && error->isVisible());
    QVERIFY(!page.launchButton()->isEnabled());
    QVERIFY(page.commandText().contains("model.n_embd"));
    heads->selectAll();
    QTest::keyClicks(heads, "4");
    QVERIFY(form->fieldError("model.n_embd").isEmpty());
    QVERIFY(page.launchButton()->isEnabled());

    // Other kinds of problems, each beside its own field.
    auto *batch = qobject_cast<QLineEdit *>(form->editor("training.batch_size"));
    batch->selectAll();
    QTest::keyClicks(batch, "-1");
    QVERIFY(form->fieldError("training.batch_size").contains("whole number from 1 up"));
    batch->selectAll();
    QTest::keyClicks(batch, "16");

    // Switching to mlp asks for its own data; the shared training fields stay.
    form->setRecipe("mlp");
    QCOMPARE(form->value("training.batch_size"), QString("16"));
    QVERIFY(form->fieldError("mlp.data").contains("required"));
    form->setRecipe("gpt");
    QCOMPARE(form->value("model.n_head"), QString("2")); // the recipe's own fields start from defaults
    form->setValue("model.n_head", "4");
    form->setValue("data.corpus", corpus());
    form->setValue("training.mixed_precision", "bf16");
    form->setValue("name", "my run");

    // form -> file -> form.
    const QString path = dir.path() + "/saved job.yaml";
    QVERIFY(form->saveJob(path));
    LaunchPage other;
    other.setJobFile(path);
    QCOMPARE(other.programKind(), LaunchPage::ProgramKind::Recipe);
    QVERIFY(other.recipeForm()->job() == form->job());
    auto *precision = qobject_cast<QComboBox *>(other.recipeForm()->editor("training.mixed_precision"));
    QVERIFY(precision);
    QCOMPARE(precision->currentData().toString(), QString("bf16"));
    QCOMPARE(qobject_cast<QLineEdit *>(other.recipeForm()->editor("model.n_head"))->text(), QString("4"));

    // A job the form cannot edit is reported, the form unchanged.
    QVERIFY(!form->loadJob(test::sourceDir() + "/resources/jobs/selftest.yaml"));
    QCOMPARE(form->value("name"), QString("my run"));
}

void tst_LaunchPage::failedRecipeLaunchLeavesNoStagedRun()
{
    QTemporaryDir dir;
    qputenv("XDG_DATA_HOME", dir.path().toLocal8Bit());
    LaunchPage page;
    page.setAccelProgram(dir.path() + "/no-such-accel");
    page.setConfigFile(writeConfig(dir.path() + "/c.yaml", kTwoCpuRanks));
    page.setProgramKind(LaunchPage::ProgramKind::Recipe);
    page.recipeForm()->setValue("data.corpus", corpus());
    const QString staged = page.stagedJobPath();
    QVERIFY(staged.startsWith(dir.path()));
    QSignalSpy failed(&page, &LaunchPage::launchFailed);
    QVERIFY(page.launch());
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10000);
    QVERIFY(!QFileInfo::exists(QFileInfo(staged).path()));
    QVERIFY(page.stagedJobPath() != staged); // the next launch stages a new run

    // Exporting a recipe launch writes the staged job the command names.
    const QString script = dir.path() + "/launch.sh";
    QVERIFY(page.saveExport(ex::ExportForm::AccelLaunch, script));
    QVERIFY(QFileInfo::exists(page.stagedJobPath()));
    auto job = launcher::JobFile::load(page.stagedJobPath().toStdString());
    QVERIFY(job);
    QVERIFY(*job == page.recipeForm()->job());
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

    // The new run is handed to the window at once; "Open monitor" hands it again.
    QCOMPARE(monitor.count(), 1);
    QCOMPARE(monitor.first().first().toString(), runDir);
    page.monitorButton()->click();
    QCOMPARE(monitor.count(), 2);
    QCOMPARE(monitor.last().first().toString(), runDir);

    QSignalSpy stopped(&page, &LaunchPage::stopFinished);
    QVERIFY(page.stop());
    QTRY_VERIFY_WITH_TIMEOUT(stopped.count() == 1, 30000);
    // accel stop ended the supervisor (or found the short run already finished): exit 0 either way.
    QVERIFY2(stopped.first().first().toInt() == 0, qPrintable(stopped.first().at(1).toString()));
}

void tst_LaunchPage::configureLaunchAndCliAgreeOnProcessCount()
{
    // Regression: Configure and Launch disagreed about how many processes the wizard's own
    // MULTI_CPU config starts. Now both show the launcher's count, worded as `accel launch
    // --dry-run` words it.
    const QString accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    if (!QFileInfo(accel).isExecutable())
        QSKIP("accel is not built");
    QTemporaryDir dir;
    auto built = config::QuestionFlow::standard().build({{"machine_type", "MULTI_CPU"}, {"num_processes", "3"}});
    QVERIFY(built);
    QFile script(dir.filePath(QStringLiteral("train.py")));
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write("print('hello')\n");
    script.close();
    const QString path = dir.filePath(QStringLiteral("multi_cpu.yaml"));
    QVERIFY(config::saveConfigFile(*built, path.toStdString()));

    app::ConfigurePage configure;
    QVERIFY(configure.openFile(path));
    const QString inConfigure = configure.findChild<QLabel *>(QStringLiteral("processCount"))->text();
    LaunchPage launch;
    launch.setScript(dir.filePath(QStringLiteral("train.py")));
    launch.setConfigFile(path);
    const QString inLaunch = launch.findChild<QLabel *>(QStringLiteral("processCount"))->text();
    const auto dryRun =
        test::runAccel({QStringLiteral("launch"), QStringLiteral("--dry-run"), QStringLiteral("--config_file"), path,
                        dir.filePath(QStringLiteral("train.py"))});
    QVERIFY2(dryRun.exitCode == 0, qPrintable(dryRun.err));
    const QString expected = QStringLiteral("3 processes on this machine");
    QVERIFY2(inConfigure.contains(expected), qPrintable(inConfigure));
    QVERIFY2(inLaunch.contains(expected), qPrintable(inLaunch));
    QVERIFY2(dryRun.out.section(QLatin1Char('\n'), 0, 0).endsWith(expected), qPrintable(dryRun.out));
}

void tst_LaunchPage::stopNeverStaysStuckWhenAccelCannotStart()
{
    // Regression: Stop waited for a QProcess that never started and stayed stuck.
    QTemporaryDir dir;
    const QString runDir = dir.filePath(QStringLiteral("runs/fake-0001"));
    // A stand-in for `accel launch --detach --json` that reports a started run.
    const QString fake = dir.filePath(QStringLiteral("fake-accel"));
    QFile script(fake);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(QStringLiteral("#!/bin/sh\necho '{\"schema\":\"accel.launch-detached\",\"id\":\"fake-0001\","
                                "\"run_dir\":\"%1\"}'\n")
                     .arg(runDir)
                     .toUtf8());
    script.close();
    QVERIFY(script.setPermissions(script.permissions() | QFileDevice::ExeOwner));
    LaunchPage page;
    page.setAccelProgram(fake);
    page.setConfigFile(writeConfig(dir.filePath(QStringLiteral("c.yaml")), kTwoCpuRanks));
    QFile train(dir.filePath(QStringLiteral("train.py")));
    QVERIFY(train.open(QIODevice::WriteOnly)); // an empty script: nothing to import
    train.close();
    page.setScript(train.fileName());
    QSignalSpy launched(&page, &LaunchPage::launched);
    QVERIFY(page.launch());
    QTRY_COMPARE_WITH_TIMEOUT(launched.size(), 1, 10000);
    QCOMPARE(page.runDirectory(), runDir);

    page.setAccelProgram(dir.filePath(QStringLiteral("no-such-accel")));
    QSignalSpy stopped(&page, &LaunchPage::stopFinished);
    QVERIFY(page.stop());
    QTRY_COMPARE_WITH_TIMEOUT(stopped.size(), 1, 10000);
    QVERIFY(stopped.at(0).at(0).toInt() != 0);
    QVERIFY2(page.findChild<QLabel *>(QStringLiteral("launchState"))->text().contains(QStringLiteral("cannot start")),
             qPrintable(page.findChild<QLabel *>(QStringLiteral("launchState"))->text()));
    // Not stuck: Stop can be asked again, and ends again.
    QVERIFY(page.stop());
    QTRY_COMPARE_WITH_TIMEOUT(stopped.size(), 2, 10000);
}

QTEST_MAIN(tst_LaunchPage)
#include "tst_launchpage.moc"
