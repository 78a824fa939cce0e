#include "app/studio/launch/programchoice.h"

#include "app/studio/launch/datapreviewpanel.h"
#include "app/studio/launch/finetuneform.h"
#include "app/studio/launch/interpreterfield.h"
#include "app/studio/launch/recipeform.h"
#include "app/studio/processcount.h"
#include "core/config/configio.h"
#include "launcher/export/shellquote.h"
#include "launcher/rundirectory.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QSettings>
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

// A line edit with a "..." button that picks a file.
QHBoxLayout *fileRow(QLineEdit *edit, const QString &title, const QString &filter, QWidget *parent)
{
    auto *browse = new QToolButton(parent);
    browse->setText(QStringLiteral("..."));
    auto *row = new QHBoxLayout;
    row->addWidget(edit);
    row->addWidget(browse);
    QObject::connect(browse, &QToolButton::clicked, edit, [edit, title, filter, parent] {
        const QString path = QFileDialog::getOpenFileName(parent, title, edit->text(), filter);
        if (!path.isEmpty())
            edit->setText(path);
    });
    return row;
}

} // namespace

ProgramChoice::ProgramChoice(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto *form = new QFormLayout;
    m_kind = new QComboBox(this);
    m_kind->setObjectName(QStringLiteral("programKind"));
    m_kind->addItems({tr("Python script"), tr("Built-in recipe (form)"), tr("TorchScript model (job file)"),
                      tr("C++ plugin (job file)"), tr("Job file (any recipe)"),
                      tr("Fine-tune a Hugging Face model (full or LoRA)")});
    form->addRow(tr("Program:"), m_kind);

    m_stack = new QStackedWidget(this);
    auto *scriptBox = new QWidget(m_stack);
    auto *scriptForm = new QFormLayout(scriptBox);
    scriptForm->setContentsMargins(0, 0, 0, 0);
    m_script = new QLineEdit(scriptBox);
    m_script->setObjectName(QStringLiteral("script"));
    m_script->setPlaceholderText(tr("train.py"));
    m_args = new QLineEdit(scriptBox);
    m_args->setObjectName(QStringLiteral("arguments"));
    m_args->setPlaceholderText(tr("--lr 3e-4 --epochs 2 (shell quoting allowed)"));
    m_interpreter = new InterpreterField(scriptBox);
    scriptForm->addRow(tr("Script:"),
                       fileRow(m_script, tr("Training script"), tr("Python scripts (*.py);;All files (*)"), scriptBox));
    scriptForm->addRow(tr("Arguments:"), m_args);
    scriptForm->addRow(tr("Interpreter:"), m_interpreter);
    auto *jobBox = new QWidget(m_stack);
    auto *jobForm = new QFormLayout(jobBox);
    jobForm->setContentsMargins(0, 0, 0, 0);
    m_job = new QLineEdit(jobBox);
    m_job->setObjectName(QStringLiteral("jobFile"));
    m_job->setPlaceholderText(tr("resources/jobs/demo-gpt.yaml (recipe gpt, mlp, torchscript or plugin)"));
    jobForm->addRow(tr("Job file:"), fileRow(m_job, tr("Job file"), tr("Job files (*.yaml *.yml)"), jobBox));
    m_recipeForm = new RecipeForm;
    auto *recipeScroll = new QScrollArea(m_stack);
    recipeScroll->setObjectName(QStringLiteral("recipeScroll"));
    recipeScroll->setWidgetResizable(true);
    recipeScroll->setFrameShape(QFrame::NoFrame);
    recipeScroll->setWidget(m_recipeForm);
    m_fineTune = new FineTuneForm;
    auto *fineTuneScroll = new QScrollArea(m_stack);
    fineTuneScroll->setObjectName(QStringLiteral("fineTuneScroll"));
    fineTuneScroll->setWidgetResizable(true);
    fineTuneScroll->setFrameShape(QFrame::NoFrame);
    fineTuneScroll->setWidget(m_fineTune);
    m_stack->addWidget(scriptBox);
    m_stack->addWidget(recipeScroll);
    m_stack->addWidget(jobBox);
    m_stack->addWidget(fineTuneScroll);

    m_config = new QLineEdit(this);
    m_config->setObjectName(QStringLiteral("configFile"));
    m_config->setPlaceholderText(tr("cluster config (.yaml or .json)"));
    form->addRow(tr("Config file:"),
                 fileRow(m_config, tr("Cluster config"), tr("Configs (*.yaml *.yml *.json)"), this));
    auto *processes = new QLabel(this);
    processes->setObjectName(QStringLiteral("processCount"));
    processes->setWordWrap(true);
    form->addRow(QString(), processes);
    layout->addLayout(form);
    layout->addWidget(m_stack, 1);

    // The fine-tune form is long: while it is shown it takes its whole height (the page scrolls in
    // the window), and nothing of it while another program is chosen.
    auto fitFineTune = [this, fineTuneScroll] {
        fineTuneScroll->setMinimumHeight(kind() == Kind::FineTune ? m_fineTune->sizeHint().height() : 0);
    };
    connect(m_kind, &QComboBox::currentIndexChanged, this, [this, fitFineTune](int index) {
        // Script, recipe form, the job-file field (TorchScript, plugin, any job), the fine-tune form.
        m_stack->setCurrentIndex(index == int(Kind::FineTune) ? 3 : std::min(index, 2));
        fitFineTune();
        Q_EMIT changed();
    });
    connect(m_fineTune, &FineTuneForm::changed, fineTuneScroll, fitFineTune);
    connect(m_fineTune->dataPreview(), &DataPreviewPanel::previewed, fineTuneScroll, fitFineTune);
    connect(m_recipeForm, &RecipeForm::changed, this, &ProgramChoice::changed);
    connect(m_fineTune, &FineTuneForm::changed, this, &ProgramChoice::changed);
    connect(m_config, &QLineEdit::textChanged, m_fineTune, [this] { m_fineTune->setConfigFile(configFile()); });
    connect(m_recipeForm, &RecipeForm::statusMessage, this, &ProgramChoice::statusMessage);
    for (QLineEdit *edit : {m_script, m_args, m_job, m_config})
        connect(edit, &QLineEdit::textChanged, this, &ProgramChoice::changed);
    connect(m_interpreter, &InterpreterField::changed, this, &ProgramChoice::changed);
    connect(m_script, &QLineEdit::textChanged, m_interpreter, [this] { m_interpreter->setScriptPath(scriptPath()); });
    connect(m_config, &QLineEdit::textChanged, processes, [this, processes] {
        bool accepted = false;
        const QString count = processCountForFile(configFile(), &accepted);
        processes->setText(accepted ? tr("Starts %1.").arg(count) : count);
    });
}

QString ProgramChoice::jobFile() const
{
    return m_job->text().trimmed();
}

void ProgramChoice::setKind(Kind kind)
{
    m_kind->setCurrentIndex(static_cast<int>(kind));
}

ProgramChoice::Kind ProgramChoice::kind() const
{
    return static_cast<Kind>(m_kind->currentIndex());
}

void ProgramChoice::setScript(const QString &path, const QString &arguments)
{
    setKind(Kind::PythonScript);
    m_script->setText(path);
    m_args->setText(arguments);
}

void ProgramChoice::setInterpreter(const QString &python)
{
    m_interpreter->setInterpreter(python);
}

QString ProgramChoice::interpreter() const
{
    return m_interpreter->interpreter();
}

QString ProgramChoice::scriptPath() const
{
    const QString script = m_script->text().trimmed();
    return script.isEmpty() ? QString() : QFileInfo(script).absoluteFilePath();
}

void ProgramChoice::rememberForm(const QString &group)
{
    m_settingsGroup = group;
    QSettings settings;
    settings.beginGroup(group);
    if (settings.contains(QStringLiteral("kind"))) {
        m_restoring = true;
        m_script->setText(settings.value(QStringLiteral("script")).toString());
        m_args->setText(settings.value(QStringLiteral("arguments")).toString());
        m_interpreter->setInterpreter(settings.value(QStringLiteral("interpreter")).toString());
        m_job->setText(settings.value(QStringLiteral("job_file")).toString());
        m_config->setText(settings.value(QStringLiteral("config_file")).toString());
        const QString recipeJob = settings.value(QStringLiteral("recipe_job")).toString();
        if (!recipeJob.isEmpty())
            (void)m_recipeForm->loadJob(recipeJob);
        // The fine-tune form as it was left (its job's YAML; paths in it are absolute).
        const QString fineTune = settings.value(QStringLiteral("finetune_job")).toString();
        if (auto job = launcher::JobFile::parse(fineTune.toStdString(), "finetune.yaml");
            !fineTune.isEmpty() && job && job->recipe() == "causal_lm")
            m_fineTune->setJob(*job);
        const int kind = settings.value(QStringLiteral("kind")).toInt();
        if (kind >= 0 && kind < m_kind->count())
            m_kind->setCurrentIndex(kind);
        m_restoring = false;
    }
    settings.endGroup();
    connect(this, &ProgramChoice::changed, this, &ProgramChoice::saveForm, Qt::UniqueConnection);
}

void ProgramChoice::saveForm() const
{
    if (m_settingsGroup.isEmpty() || m_restoring)
        return;
    QSettings settings;
    settings.beginGroup(m_settingsGroup);
    settings.setValue(QStringLiteral("kind"), m_kind->currentIndex());
    settings.setValue(QStringLiteral("script"), m_script->text());
    settings.setValue(QStringLiteral("arguments"), m_args->text());
    settings.setValue(QStringLiteral("interpreter"), m_interpreter->interpreter());
    settings.setValue(QStringLiteral("job_file"), m_job->text());
    settings.setValue(QStringLiteral("config_file"), m_config->text());
    settings.setValue(QStringLiteral("recipe_job"), m_recipeForm->jobPath());
    settings.setValue(QStringLiteral("finetune_job"), QString::fromStdString(m_fineTune->job().toYaml()));
    settings.endGroup();
}

void ProgramChoice::setJobFile(const QString &path)
{
    if (auto job = launcher::JobFile::load(path.toStdString()); job && job->recipe() == "causal_lm") {
        m_fineTune->setJob(*job);
        setKind(Kind::FineTune);
        return;
    }
    if (kind() == Kind::PythonScript || kind() == Kind::Recipe) {
        if (m_recipeForm->loadJob(path)) {
            setKind(Kind::Recipe);
            return;
        }
        setKind(Kind::JobFile);
    }
    m_job->setText(path);
}

const launcher::JobFile &ProgramChoice::formJob() const
{
    return kind() == Kind::FineTune ? m_fineTune->job() : m_recipeForm->job();
}

QString ProgramChoice::stagedJobPath(bool onHosts) const
{
    QString name = QString::fromStdString(formJob().value("name"));
    if (name.isEmpty())
        name = QString::fromStdString(formJob().recipe());
    if (m_stagedDir.isEmpty() || name != m_stagedName || onHosts != m_stagedOnHosts) {
        m_stagedName = name;
        m_stagedOnHosts = onHosts;
        const QString runsRoot = launcher::RunDirectory::defaultRunsRoot();
        const QString root = onHosts ? QFileInfo(runsRoot).path() + QStringLiteral("/cluster-jobs") : runsRoot;
        m_stagedDir = root + QLatin1Char('/') + launcher::RunDirectory::makeRunId(name);
    }
    return m_stagedDir + QStringLiteral("/job.yaml");
}

Result<void> ProgramChoice::writeStagedJob(bool onHosts) const
{
    const QString path = stagedJobPath(onHosts);
    if (!QDir().mkpath(QFileInfo(path).path()))
        return makeError(ErrorCode::Io, "cannot create the run's staging folder", QFileInfo(path).path().toStdString());
    return formJob().save(path.toStdString());
}

void ProgramChoice::discardStagedJob()
{
    // Only a folder this page staged and no run ever used (no run.json) is removed.
    if (!m_stagedDir.isEmpty() && !QFileInfo::exists(m_stagedDir + QStringLiteral("/run.json"))) {
        QFile::remove(m_stagedDir + QStringLiteral("/job.yaml"));
        QDir().rmdir(m_stagedDir);
    }
    m_stagedDir.clear();
}

void ProgramChoice::keepStagedJob()
{
    m_stagedDir.clear();
}

void ProgramChoice::setConfigFile(const QString &path)
{
    m_config->setText(path);
}

QString ProgramChoice::configFile() const
{
    return m_config->text().trimmed();
}

Result<ex::ExportInput> ProgramChoice::exportInput(const QString &accelProgram, bool onHosts) const
{
    ex::ExportInput input;
    // Exported scripts run outside the studio, often without accel on PATH: name the accel this
    // studio runs by its absolute path.
    const QFileInfo accel(accelProgram.contains(QLatin1Char('/')) ? accelProgram
                                                                  : QStandardPaths::findExecutable(accelProgram));
    input.accelProgram = accel.isExecutable() ? accel.absoluteFilePath().toStdString() : accelProgram.toStdString();
    input.configPath = configFile().toStdString();
    if (kind() == Kind::PythonScript) {
        if (m_script->text().trimmed().isEmpty())
            return makeError(ErrorCode::InvalidInput, "choose a Python script to run");
        input.program.kind = launcher::ProgramSpec::Kind::PythonScript;
        input.program.target = m_script->text().trimmed().toStdString();
        auto args = ex::shellSplit(m_args->text().toStdString());
        if (!args)
            return makeError(ErrorCode::InvalidInput, "arguments: " + args.error().message);
        input.program.args = *args;
        if (!interpreter().isEmpty())
            input.program.python = interpreter().toStdString();
    } else if (stagesJob()) {
        if (auto ok = formJob().check(); !ok)
            return makeError(ErrorCode::InvalidInput,
                             (kind() == Kind::FineTune ? "fine-tune form: " : "recipe form: ") + ok.error().message);
        input.program.kind = launcher::ProgramSpec::Kind::Job;
        input.program.target = stagedJobPath(onHosts).toStdString();
        // The staged job's folder is the run's own on this machine; on hosts each node makes its own.
        if (!onHosts)
            input.runDirectory = QFileInfo(stagedJobPath()).path().toStdString();
        input.runName = m_stagedName.toStdString();
    } else {
        if (m_job->text().trimmed().isEmpty())
            return makeError(ErrorCode::InvalidInput, "choose a job file (recipe, TorchScript model or plugin)");
        input.program.kind = launcher::ProgramSpec::Kind::Job;
        input.program.target = m_job->text().trimmed().toStdString();
    }
    // The SLURM job is named after the run: its --name, else the script's or job file's name.
    input.jobName = input.runName.empty()
                        ? QFileInfo(QString::fromStdString(input.program.target)).completeBaseName().toStdString()
                        : input.runName;
    if (input.jobName.empty())
        input.jobName = "accel";
    if (input.configPath.empty())
        return makeError(ErrorCode::InvalidInput, "choose a cluster config file");
    auto config = config::loadConfigFile(input.configPath);
    if (!config)
        return tl::unexpected(config.error());
    input.config = *config;
    return input;
}

Result<QStringList> ProgramChoice::launchArguments(bool onHosts) const
{
    auto input = exportInput(QString(), onHosts);
    if (!input)
        return tl::unexpected(input.error());
    QStringList args = {QStringLiteral("launch"), QStringLiteral("--config_file"), configFile()};
    if (!input->runDirectory.empty())
        args << QStringLiteral("--run_dir") << QString::fromStdString(input->runDirectory);
    if (!input->runName.empty())
        args << QStringLiteral("--name") << QString::fromStdString(input->runName);
    if (input->program.kind == launcher::ProgramSpec::Kind::Job)
        return args << QStringLiteral("--job") << QString::fromStdString(input->program.target);
    return args << QString::fromStdString(input->program.target) << toQStringList(input->program.args);
}

} // namespace accel::app
