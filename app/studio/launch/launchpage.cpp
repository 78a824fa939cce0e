#include "app/studio/launch/launchpage.h"

#include "app/studio/launch/recipeform.h"
#include "app/studio/processcount.h"
#include "app/studio/studioresources.h"
#include "core/common/fileutil.h"
#include "core/config/configio.h"
#include "launcher/export/shellquote.h"
#include "launcher/rundirectory.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QToolButton>
#include <QVBoxLayout>

namespace accel::app {

namespace ex = launcher::exporting;

namespace {

QStringList toQStringList(const std::vector<std::string> &words)
{
    QStringList list;
    for (const std::string &word : words)
        list << QString::fromStdString(word);
    return list;
}

// Export menu entries: two config formats, then the four command forms.
struct ExportChoice {
    const char *label;
    const char *suffix;
    int form; // -1 YAML config, -2 JSON config, else ExportForm
};
const ExportChoice kExports[] = {
    {"Config as YAML...", "yaml", -1},
    {"Config as JSON...", "json", -2},
    {"accel launch command...", "sh", static_cast<int>(ex::ExportForm::AccelLaunch)},
    {"accelerate launch command...", "sh", static_cast<int>(ex::ExportForm::AccelerateLaunch)},
    {"torchrun commands per node...", "sh", static_cast<int>(ex::ExportForm::Torchrun)},
    {"SLURM sbatch script...", "sbatch", static_cast<int>(ex::ExportForm::Sbatch)},
};

} // namespace

LaunchPage::LaunchPage(QWidget *parent) : QWidget(parent)
{
    m_accel = launcher::AccelCommand::defaultProgram();
    buildUi();
    updateCommand();
    m_runWatch.setInterval(1000);
    connect(&m_runWatch, &QTimer::timeout, this, &LaunchPage::watchRunState);
}

// A command still running is killed with its process group by AccelCommand's destructor; the
// run itself is detached and keeps going.
LaunchPage::~LaunchPage() = default;

void LaunchPage::buildUi()
{
    auto *layout = new QVBoxLayout(this);
    auto *title = new QLabel(tr("<h2>Launch</h2>Run a training script or job with a cluster config. "
                                "The run continues when the studio closes; follow it on the Runs page."),
                             this);
    title->setWordWrap(true);
    layout->addWidget(title);

    auto *form = new QFormLayout;
    m_kind = new QComboBox(this);
    m_kind->setObjectName(QStringLiteral("programKind"));
    m_kind->addItems({tr("Python script"), tr("Built-in recipe (form)"), tr("TorchScript model (job file)"),
                      tr("C++ plugin (job file)"), tr("Job file (any recipe)")});
    form->addRow(tr("Program:"), m_kind);

    m_programStack = new QStackedWidget(this);
    auto *scriptBox = new QWidget(m_programStack);
    auto *scriptForm = new QFormLayout(scriptBox);
    scriptForm->setContentsMargins(0, 0, 0, 0);
    m_script = new QLineEdit(scriptBox);
    m_script->setObjectName(QStringLiteral("script"));
    m_script->setPlaceholderText(tr("train.py"));
    m_args = new QLineEdit(scriptBox);
    m_args->setObjectName(QStringLiteral("arguments"));
    m_args->setPlaceholderText(tr("--lr 3e-4 --epochs 2 (shell quoting allowed)"));
    m_python = new QLineEdit(scriptBox);
    m_python->setObjectName(QStringLiteral("interpreter"));
    m_python->setPlaceholderText(tr("python3, or a venv's bin/python"));
    scriptForm->addRow(tr("Script:"), m_script);
    scriptForm->addRow(tr("Arguments:"), m_args);
    scriptForm->addRow(tr("Interpreter:"), m_python);
    auto *jobBox = new QWidget(m_programStack);
    auto *jobForm = new QFormLayout(jobBox);
    jobForm->setContentsMargins(0, 0, 0, 0);
    m_job = new QLineEdit(jobBox);
    m_job->setObjectName(QStringLiteral("jobFile"));
    m_job->setPlaceholderText(tr("resources/jobs/demo-gpt.yaml (recipe gpt, mlp, torchscript or plugin)"));
    auto *browseJob = new QToolButton(jobBox);
    browseJob->setText(QStringLiteral("..."));
    auto *jobRow = new QHBoxLayout;
    jobRow->addWidget(m_job);
    jobRow->addWidget(browseJob);
    jobForm->addRow(tr("Job file:"), jobRow);
    m_recipeForm = new RecipeForm;
    auto *recipeScroll = new QScrollArea(m_programStack);
    recipeScroll->setObjectName(QStringLiteral("recipeScroll"));
    recipeScroll->setWidgetResizable(true);
    recipeScroll->setFrameShape(QFrame::NoFrame);
    recipeScroll->setWidget(m_recipeForm);
    m_programStack->addWidget(scriptBox);
    m_programStack->addWidget(recipeScroll);
    m_programStack->addWidget(jobBox);

    m_config = new QLineEdit(this);
    m_config->setObjectName(QStringLiteral("configFile"));
    m_config->setPlaceholderText(tr("cluster config (.yaml or .json)"));
    auto *browseConfig = new QToolButton(this);
    browseConfig->setText(QStringLiteral("..."));
    auto *configRow = new QHBoxLayout;
    configRow->addWidget(m_config);
    configRow->addWidget(browseConfig);
    form->addRow(tr("Config file:"), configRow);
    m_processes = new QLabel(this);
    m_processes->setObjectName(QStringLiteral("processCount"));
    m_processes->setWordWrap(true);
    form->addRow(QString(), m_processes);
    layout->addLayout(form);
    layout->addWidget(m_programStack, 1);

    layout->addWidget(new QLabel(tr("Command:"), this));
    m_command = new QPlainTextEdit(this);
    m_command->setObjectName(QStringLiteral("commandPreview"));
    m_command->setReadOnly(true);
    m_command->setMaximumHeight(90);
    m_command->setFont(QFont(QStringLiteral("monospace")));
    layout->addWidget(m_command);

    auto *buttons = new QHBoxLayout;
    m_launch = new QPushButton(tr("Launch"), this);
    m_stop = new QPushButton(tr("Stop"), this);
    m_monitor = new QPushButton(tr("Open monitor"), this);
    m_export = new QPushButton(tr("Export"), this);
    m_demo = new QPushButton(tr("Run the demo (GPT on 2 CPU ranks)"), this);
    m_demo->setVisible(false);
    auto *menu = new QMenu(m_export);
    for (int i = 0; i < static_cast<int>(std::size(kExports)); ++i)
        menu->addAction(tr(kExports[i].label), this, [this, i] { exportWithDialog(i); });
    m_export->setMenu(menu);
    m_stop->setEnabled(false);
    m_monitor->setEnabled(false);
    for (QPushButton *button : {m_launch, m_stop, m_monitor, m_export, m_demo})
        buttons->addWidget(button);
    buttons->addStretch();
    layout->addLayout(buttons);
    m_state = new QLabel(this);
    m_state->setObjectName(QStringLiteral("launchState"));
    m_state->setWordWrap(true);
    layout->addWidget(m_state);

    connect(m_kind, &QComboBox::currentIndexChanged, this, [this](int index) {
        m_programStack->setCurrentIndex(std::min(index, 2));
        updateCommand();
    });
    connect(m_recipeForm, &RecipeForm::changed, this, &LaunchPage::updateCommand);
    connect(m_recipeForm, &RecipeForm::statusMessage, this, [this](const QString &message) {
        m_state->setText(message);
        Q_EMIT statusMessage(message);
    });
    for (QLineEdit *edit : {m_script, m_args, m_python, m_job, m_config})
        connect(edit, &QLineEdit::textChanged, this, &LaunchPage::updateCommand);
    connect(browseJob, &QToolButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Job file"), m_job->text(), tr("Job files (*.yaml *.yml)"));
        if (!path.isEmpty())
            m_job->setText(path);
    });
    connect(browseConfig, &QToolButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Cluster config"), m_config->text(),
                                                          tr("Configs (*.yaml *.yml *.json)"));
        if (!path.isEmpty())
            m_config->setText(path);
    });
    connect(m_launch, &QPushButton::clicked, this, &LaunchPage::launch);
    connect(m_stop, &QPushButton::clicked, this, &LaunchPage::stop);
    connect(m_monitor, &QPushButton::clicked, this, [this] { Q_EMIT openMonitorRequested(m_runDir); });
    connect(m_demo, &QPushButton::clicked, this, &LaunchPage::runDemo);
}

void LaunchPage::setProgramKind(ProgramKind kind)
{
    m_kind->setCurrentIndex(static_cast<int>(kind));
}

LaunchPage::ProgramKind LaunchPage::programKind() const
{
    return static_cast<ProgramKind>(m_kind->currentIndex());
}

void LaunchPage::setScript(const QString &path, const QString &arguments)
{
    setProgramKind(ProgramKind::PythonScript);
    m_script->setText(path);
    m_args->setText(arguments);
}

void LaunchPage::setInterpreter(const QString &python)
{
    m_python->setText(python);
}

void LaunchPage::setJobFile(const QString &path)
{
    const ProgramKind kind = programKind();
    if (kind == ProgramKind::PythonScript || kind == ProgramKind::Recipe) {
        if (m_recipeForm->loadJob(path)) {
            setProgramKind(ProgramKind::Recipe);
            return;
        }
        setProgramKind(ProgramKind::JobFile);
    }
    m_job->setText(path);
}

QString LaunchPage::stagedJobPath() const
{
    QString name = m_recipeForm->value(QStringLiteral("name"));
    if (name.isEmpty())
        name = m_recipeForm->recipe();
    if (m_stagedRunDir.isEmpty() || name != m_stagedName) {
        m_stagedName = name;
        m_stagedRunDir =
            launcher::RunDirectory::defaultRunsRoot() + QLatin1Char('/') + launcher::RunDirectory::makeRunId(name);
    }
    return m_stagedRunDir + QStringLiteral("/job.yaml");
}

Result<void> LaunchPage::writeStagedJob() const
{
    const QString path = stagedJobPath();
    if (!QDir().mkpath(QFileInfo(path).path()))
        return makeError(ErrorCode::Io, "cannot create the run's staging folder", QFileInfo(path).path().toStdString());
    return m_recipeForm->saveJob(path);
}

void LaunchPage::discardStagedRun()
{
    // Only a folder this page staged and no run ever used (no run.json) is removed.
    if (!m_stagedRunDir.isEmpty() && !QFileInfo::exists(m_stagedRunDir + QStringLiteral("/run.json"))) {
        QFile::remove(m_stagedRunDir + QStringLiteral("/job.yaml"));
        QDir().rmdir(m_stagedRunDir);
    }
    m_stagedRunDir.clear();
}

void LaunchPage::setConfigFile(const QString &path)
{
    m_config->setText(path);
}

QString LaunchPage::configFile() const
{
    return m_config->text().trimmed();
}

Result<ex::ExportInput> LaunchPage::exportInput() const
{
    ex::ExportInput input;
    // Exported scripts run outside the studio, often without accel on PATH: name the accel this
    // studio runs by its absolute path.
    const QFileInfo accel(m_accel.contains(QLatin1Char('/')) ? m_accel : QStandardPaths::findExecutable(m_accel));
    input.accelProgram = accel.isExecutable() ? accel.absoluteFilePath().toStdString() : m_accel.toStdString();
    input.configPath = configFile().toStdString();
    if (programKind() == ProgramKind::PythonScript) {
        if (m_script->text().trimmed().isEmpty())
            return makeError(ErrorCode::InvalidInput, "choose a Python script to run");
        input.program.kind = launcher::ProgramSpec::Kind::PythonScript;
        input.program.target = m_script->text().trimmed().toStdString();
        auto args = ex::shellSplit(m_args->text().toStdString());
        if (!args)
            return makeError(ErrorCode::InvalidInput, "arguments: " + args.error().message);
        input.program.args = *args;
        if (!m_python->text().trimmed().isEmpty())
            input.program.python = m_python->text().trimmed().toStdString();
    } else if (programKind() == ProgramKind::Recipe) {
        if (auto ok = m_recipeForm->job().check(); !ok)
            return makeError(ErrorCode::InvalidInput, "recipe form: " + ok.error().message);
        input.program.kind = launcher::ProgramSpec::Kind::Job;
        input.program.target = stagedJobPath().toStdString();
    } else {
        if (m_job->text().trimmed().isEmpty())
            return makeError(ErrorCode::InvalidInput, "choose a job file (recipe, TorchScript model or plugin)");
        input.program.kind = launcher::ProgramSpec::Kind::Job;
        input.program.target = m_job->text().trimmed().toStdString();
    }
    if (input.configPath.empty())
        return makeError(ErrorCode::InvalidInput, "choose a cluster config file");
    auto config = config::loadConfigFile(input.configPath);
    if (!config)
        return tl::unexpected(config.error());
    input.config = *config;
    return input;
}

Result<QStringList> LaunchPage::launchArguments() const
{
    auto input = exportInput();
    if (!input)
        return tl::unexpected(input.error());
    QStringList args = {QStringLiteral("launch"), QStringLiteral("--config_file"), configFile()};
    if (programKind() == ProgramKind::Recipe)
        args << QStringLiteral("--run_dir") << QFileInfo(stagedJobPath()).path() << QStringLiteral("--name")
             << m_stagedName;
    if (input->program.kind == launcher::ProgramSpec::Kind::Job)
        return args << QStringLiteral("--job") << QString::fromStdString(input->program.target);
    return args << QString::fromStdString(input->program.target) << toQStringList(input->program.args);
}

QString LaunchPage::commandText() const
{
    auto args = launchArguments();
    if (!args)
        return tr("# %1").arg(QString::fromStdString(args.error().toString()));
    std::vector<std::string> words = {"accel"};
    for (const QString &arg : *args)
        words.push_back(arg.toStdString());
    QString text = QString::fromStdString(ex::shellJoin(words));
    const QString python = m_python->text().trimmed();
    if (programKind() == ProgramKind::PythonScript && !python.isEmpty() && python != QLatin1String("python3"))
        text =
            QStringLiteral("PYTHON_EXEC=%1 %2").arg(QString::fromStdString(ex::shellQuote(python.toStdString())), text);
    return text;
}

Result<std::string> LaunchPage::exportText(ex::ExportForm form) const
{
    auto input = exportInput();
    if (!input)
        return tl::unexpected(input.error());
    return ex::exportCommand(form, *input);
}

Result<void> LaunchPage::saveConfigAs(const QString &path) const
{
    auto config = config::loadConfigFile(configFile().toStdString());
    if (!config)
        return tl::unexpected(config.error());
    return config::saveConfigFile(*config, path.toStdString());
}

Result<void> LaunchPage::saveExport(ex::ExportForm form, const QString &path) const
{
    auto text = exportText(form);
    if (!text)
        return tl::unexpected(text.error());
    if (programKind() == ProgramKind::Recipe) {
        // The commands name the staged job file: write it so that they run as exported.
        if (auto written = writeStagedJob(); !written)
            return written;
    }
    std::string content = *text;
    if (form != ex::ExportForm::Sbatch)
        content = "#!/bin/bash\n" + content;
    if (auto written = fileutil::writeFileAtomic(path.toStdString(), content); !written)
        return written;
    // A script, so executable (sbatch scripts too: they also run with bash directly).
    QFile file(path);
    if (!file.setPermissions(file.permissions() | QFileDevice::ExeOwner | QFileDevice::ExeGroup |
                             QFileDevice::ExeOther))
        return makeError(ErrorCode::Io, "cannot make the script executable: " + file.errorString().toStdString(),
                         path.toStdString());
    return {};
}

void LaunchPage::updateCommand()
{
    m_command->setPlainText(commandText());
    bool accepted = false;
    const QString count = processCountForFile(configFile(), &accepted);
    m_processes->setText(accepted ? tr("Starts %1.").arg(count) : count);
    m_launch->setEnabled(launchArguments().has_value() && !isBusy());
}

launcher::AccelCommand *LaunchPage::startAccel(const QStringList &arguments)
{
    auto *command = new launcher::AccelCommand(this);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    const QString python = m_python->text().trimmed();
    if (programKind() == ProgramKind::PythonScript && !python.isEmpty())
        env.insert(QStringLiteral("PYTHON_EXEC"), python);
    command->setEnvironment(env);
    command->setProgram(m_accel);
    command->start(arguments);
    return command;
}

bool LaunchPage::launch()
{
    auto args = launchArguments();
    if (!args || isBusy()) {
        const QString message =
            args ? tr("a launch is already starting") : QString::fromStdString(args.error().toString());
        m_state->setText(message);
        Q_EMIT statusMessage(message);
        return false;
    }
    if (programKind() == ProgramKind::Recipe) {
        if (auto written = writeStagedJob(); !written) {
            const QString message = QString::fromStdString(written.error().toString());
            m_state->setText(message);
            Q_EMIT statusMessage(message);
            return false;
        }
    }
    *args << QStringLiteral("--detach") << QStringLiteral("--json");
    m_state->setText(tr("Starting..."));
    m_process = startAccel(*args);
    connect(m_process, &launcher::AccelCommand::done, this, &LaunchPage::onLaunchFinished);
    updateCommand();
    return true;
}

void LaunchPage::onLaunchFinished(const launcher::AccelOutcome &outcome)
{
    if (m_process)
        m_process->deleteLater();
    m_process = nullptr;
    const QString err = QString::fromUtf8(outcome.standardError).trimmed();
    const QJsonObject object = QJsonDocument::fromJson(outcome.standardOutput).object();
    const bool ok = outcome.succeeded() &&
                    object.value(QStringLiteral("schema")).toString() == QLatin1String("accel.launch-detached");
    if (ok)
        m_stagedRunDir.clear(); // the next launch stages a new run
    else if (programKind() == ProgramKind::Recipe)
        discardStagedRun();
    updateCommand();
    if (!ok) {
        const QString message = outcome.failedToStart ? tr("cannot start %1: %2").arg(m_accel, outcome.error)
                                : err.isEmpty()       ? tr("accel launch failed: %1").arg(outcome.describe())
                                                      : err;
        m_state->setText(message);
        Q_EMIT launchFailed(message);
        Q_EMIT statusMessage(message);
        return;
    }
    m_runId = object.value(QStringLiteral("id")).toString();
    m_runDir = object.value(QStringLiteral("run_dir")).toString();
    m_stop->setEnabled(true);
    m_monitor->setEnabled(true);
    m_runWatch.start();
    m_state->setText(tr("Run %1 started (%2)").arg(m_runId, m_runDir));
    Q_EMIT statusMessage(tr("Launched run %1").arg(m_runId));
    Q_EMIT launched(m_runId, m_runDir);
}

bool LaunchPage::stop()
{
    if (m_runDir.isEmpty() || m_stopProcess)
        return false;
    m_stop->setEnabled(false);
    m_stopProcess = startAccel({QStringLiteral("stop"), m_runDir});
    // done() comes exactly once, also when `accel` cannot start: Stop never stays stuck.
    connect(m_stopProcess, &launcher::AccelCommand::done, this, [this](const launcher::AccelOutcome &outcome) {
        if (m_stopProcess)
            m_stopProcess->deleteLater();
        m_stopProcess = nullptr;
        QString output = QString::fromUtf8(outcome.standardOutput + outcome.standardError).trimmed();
        if (outcome.failedToStart)
            output = tr("cannot start %1: %2").arg(m_accel, outcome.error);
        const int code = outcome.shellCode();
        m_state->setText(code == 0 ? tr("Run %1 stopped").arg(m_runId)
                                   : (output.isEmpty() ? tr("accel stop: %1").arg(outcome.describe()) : output));
        watchRunState();
        Q_EMIT stopFinished(code, output);
    });
    return true;
}

void LaunchPage::watchRunState()
{
    if (m_runDir.isEmpty()) {
        m_runWatch.stop();
        m_stop->setEnabled(false);
        return;
    }
    auto run = launcher::RunDirectory::open(m_runDir, QFileInfo(m_runDir).path());
    const QString state = run ? run->effectiveState() : QString();
    const bool live = run && !launcher::runstate::isFinal(state);
    m_stop->setEnabled(live && !m_stopProcess);
    if (!live)
        m_runWatch.stop();
}

void LaunchPage::exportWithDialog(int which)
{
    const ExportChoice &choice = kExports[which];
    const QString path = QFileDialog::getSaveFileName(this, tr(choice.label),
                                                      QStringLiteral("launch.%1").arg(QLatin1String(choice.suffix)));
    if (path.isEmpty())
        return;
    const Result<void> result =
        choice.form < 0 ? saveConfigAs(path) : saveExport(static_cast<ex::ExportForm>(choice.form), path);
    const QString message = result ? tr("Exported %1").arg(path) : QString::fromStdString(result.error().toString());
    m_state->setText(message);
    Q_EMIT statusMessage(message);
}

QString LaunchPage::findDemoJob()
{
    return findResourceFile(QStringLiteral("jobs/demo-gpt.yaml"));
}

void LaunchPage::prepareDemo(const QString &jobPath, const QString &configPath)
{
    if (!QFileInfo::exists(configPath)) {
        // Two CPU ranks on this machine: what the demo needs whatever hardware is recommended.
        auto config = config::parseConfig("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\n"
                                          "mixed_precision: 'no'\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\n",
                                          config::ConfigFormat::Yaml, configPath.toStdString());
        if (config) {
            if (auto saved = config::saveConfigFile(*config, configPath.toStdString()); !saved)
                m_state->setText(QString::fromStdString(saved.error().toString()));
        }
    }
    m_config->setText(configPath);
    if (auto loaded = m_recipeForm->loadJob(jobPath); !jobPath.isEmpty() && loaded) {
        setProgramKind(ProgramKind::Recipe);
    } else {
        setProgramKind(ProgramKind::JobFile);
        m_job->setText(jobPath);
    }
    m_demo->setVisible(true);
    m_demo->setEnabled(!jobPath.isEmpty());
    if (jobPath.isEmpty())
        m_state->setText(tr("The demo job (resources/jobs/demo-gpt.yaml) was not found."));
}

void LaunchPage::runDemo()
{
    if (!launch())
        return;
    connect(
        this, &LaunchPage::launched, this,
        [this](const QString &, const QString &runDir) { Q_EMIT openMonitorRequested(runDir); },
        Qt::SingleShotConnection);
}

} // namespace accel::app
