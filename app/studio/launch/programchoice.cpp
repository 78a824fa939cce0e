#include "app/studio/launch/programchoice.h"

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
                      tr("C++ plugin (job file)"), tr("Job file (any recipe)")});
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
    m_python = new QLineEdit(scriptBox);
    m_python->setObjectName(QStringLiteral("interpreter"));
    m_python->setPlaceholderText(tr("python3, or a venv's bin/python"));
    scriptForm->addRow(tr("Script:"), m_script);
    scriptForm->addRow(tr("Arguments:"), m_args);
    scriptForm->addRow(tr("Interpreter:"), m_python);
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
    m_stack->addWidget(scriptBox);
    m_stack->addWidget(recipeScroll);
    m_stack->addWidget(jobBox);

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

    connect(m_kind, &QComboBox::currentIndexChanged, this, [this](int index) {
        m_stack->setCurrentIndex(std::min(index, 2));
        Q_EMIT changed();
    });
    connect(m_recipeForm, &RecipeForm::changed, this, &ProgramChoice::changed);
    connect(m_recipeForm, &RecipeForm::statusMessage, this, &ProgramChoice::statusMessage);
    for (QLineEdit *edit : {m_script, m_args, m_python, m_job, m_config})
        connect(edit, &QLineEdit::textChanged, this, &ProgramChoice::changed);
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
    m_python->setText(python);
}

QString ProgramChoice::interpreter() const
{
    return m_python->text().trimmed();
}

void ProgramChoice::setJobFile(const QString &path)
{
    if (kind() == Kind::PythonScript || kind() == Kind::Recipe) {
        if (m_recipeForm->loadJob(path)) {
            setKind(Kind::Recipe);
            return;
        }
        setKind(Kind::JobFile);
    }
    m_job->setText(path);
}

QString ProgramChoice::stagedJobPath(bool onHosts) const
{
    QString name = m_recipeForm->value(QStringLiteral("name"));
    if (name.isEmpty())
        name = m_recipeForm->recipe();
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
    return m_recipeForm->saveJob(path);
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
    } else if (kind() == Kind::Recipe) {
        if (auto ok = m_recipeForm->job().check(); !ok)
            return makeError(ErrorCode::InvalidInput, "recipe form: " + ok.error().message);
        input.program.kind = launcher::ProgramSpec::Kind::Job;
        input.program.target = stagedJobPath(onHosts).toStdString();
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

Result<QStringList> ProgramChoice::launchArguments(bool onHosts) const
{
    auto input = exportInput(QString(), onHosts);
    if (!input)
        return tl::unexpected(input.error());
    QStringList args = {QStringLiteral("launch"), QStringLiteral("--config_file"), configFile()};
    if (kind() == Kind::Recipe) {
        if (!onHosts)
            args << QStringLiteral("--run_dir") << QFileInfo(stagedJobPath()).path();
        args << QStringLiteral("--name") << m_stagedName;
    }
    if (input->program.kind == launcher::ProgramSpec::Kind::Job)
        return args << QStringLiteral("--job") << QString::fromStdString(input->program.target);
    return args << QString::fromStdString(input->program.target) << toQStringList(input->program.args);
}

} // namespace accel::app
