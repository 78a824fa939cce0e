#include "app/studio/launch/launchpage.h"

#include "app/studio/cluster/hostlist.h"
#include "app/studio/launch/clusterrunview.h"
#include "app/studio/launch/finetuneform.h"
#include "app/studio/launch/launchexports.h"
#include "app/studio/launch/launchtarget.h"
#include "app/studio/launch/memoryestimatepanel.h"
#include "app/studio/launch/recipeform.h"
#include "app/studio/launch/runcontrol.h"
#include "app/studio/studioresources.h"
#include "core/common/programs.h"
#include "core/config/configio.h"
#include "launcher/export/shellquote.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace accel::app {

namespace ex = launcher::exporting;

LaunchPage::LaunchPage(QWidget *parent) : QWidget(parent)
{
    m_runs = new RunControl(this);
    m_launchCheck = new InterpreterProbe(this);
    connect(m_launchCheck, &InterpreterProbe::finished, this, &LaunchPage::startLocal);
    auto *layout = new QVBoxLayout(this);
    auto *title = new QLabel(tr("<h2>Launch</h2>Run a training script or job with a cluster config, on this machine "
                                "or on cluster hosts. The run continues when the studio closes; follow it on the "
                                "Runs page."),
                             this);
    title->setWordWrap(true);
    layout->addWidget(title);
    m_target = new LaunchTarget(this);
    layout->addWidget(m_target);
    m_program = new ProgramChoice(this);
    layout->addWidget(m_program, 1);
    auto *memoryBox = new QGroupBox(tr("Predicted memory per rank"), this);
    m_memory = new MemoryEstimatePanel(memoryBox);
    (new QVBoxLayout(memoryBox))->addWidget(m_memory);
    layout->addWidget(memoryBox);

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
    m_stop->setObjectName(QStringLiteral("stopRun"));
    m_monitor = new QPushButton(tr("Open monitor"), this);
    m_export = new QPushButton(tr("Export"), this);
    m_demo = new QPushButton(tr("Run the demo (GPT on 2 CPU ranks)"), this);
    m_demo->setVisible(false);
    auto *menu = new QMenu(m_export);
    int count = 0;
    const ExportChoice *choices = exportChoices(&count);
    for (int i = 0; i < count; ++i)
        menu->addAction(tr(choices[i].label), this, [this, i] { exportWithDialog(i); });
    m_export->setMenu(menu);
    for (QPushButton *button : {m_launch, m_stop, m_monitor, m_export, m_demo})
        buttons->addWidget(button);
    buttons->addStretch();
    layout->addLayout(buttons);
    m_state = new QLabel(this);
    m_state->setObjectName(QStringLiteral("launchState"));
    m_state->setWordWrap(true);
    layout->addWidget(m_state);

    m_clusterRun = new ClusterRunView(this);
    layout->addWidget(m_clusterRun);
    connect(m_clusterRun, &ClusterRunView::changed, this, &LaunchPage::updateButtons); // e.g. ended on its own

    connect(m_program, &ProgramChoice::changed, this, &LaunchPage::updateCommand);
    connect(m_program, &ProgramChoice::changed, this, &LaunchPage::updateMemoryEstimate);
    connect(m_target, &LaunchTarget::changed, this, &LaunchPage::updateCommand);
    connect(m_program, &ProgramChoice::statusMessage, this, &LaunchPage::setState);
    connect(m_launch, &QPushButton::clicked, this, &LaunchPage::launch);
    connect(m_stop, &QPushButton::clicked, this, &LaunchPage::stop);
    connect(m_monitor, &QPushButton::clicked, this, [this] {
        if (m_runs->isCluster())
            Q_EMIT openRemoteMonitorRequested(m_clusterRun->runAddresses());
        else
            Q_EMIT openMonitorRequested(runDirectory());
    });
    connect(m_demo, &QPushButton::clicked, this, &LaunchPage::runDemo);
    connect(m_runs, &RunControl::changed, this, &LaunchPage::updateButtons);
    connect(m_runs, &RunControl::launched, this, [this](const QString &id, const QString &dir) {
        m_program->keepStagedJob();
        m_clusterRun->setVisible(false);
        setState(tr("Run %1 started (%2)").arg(id, dir));
        Q_EMIT launched(id, dir);
        Q_EMIT openMonitorRequested(dir); // the new run, selected and followed at once
    });
    connect(m_runs, &RunControl::clusterLaunched, this, [this](const QString &record) {
        m_program->keepStagedJob();
        m_clusterRun->showReport(m_runs->clusterReport());
        setState(tr("Started on %n host(s). Stop stops every node (accel hosts stop).", nullptr,
                    static_cast<int>(m_runs->clusterReport().nodes.size())));
        Q_EMIT clusterLaunched(record);
    });
    connect(m_runs, &RunControl::launchFailed, this, [this](const QString &message) {
        if (m_program->stagesJob())
            m_program->discardStagedJob();
        if (runsOnHosts() && m_runs->isCluster())
            m_clusterRun->showReport(m_runs->clusterReport());
        updateCommand();
        setState(message);
        Q_EMIT launchFailed(message);
    });
    connect(m_runs, &RunControl::stopFinished, this, [this](int code, const QString &output) {
        if (m_runs->isCluster())
            m_clusterRun->showReport(m_runs->clusterReport());
        const QString done =
            m_runs->isCluster() ? tr("Stopped on every host:\n%1").arg(output) : tr("Run %1 stopped").arg(runId());
        setState(code == 0 ? done : (output.isEmpty() ? tr("The stop failed (exit %1)").arg(code) : output));
        Q_EMIT stopFinished(code, output);
    });
    updateCommand();
    updateMemoryEstimate();
}

// A command still running is killed with its process group (RunControl's children); the runs
// themselves are detached and keep going.
LaunchPage::~LaunchPage() = default;

void LaunchPage::setAccelProgram(const QString &program)
{
    m_runs->setAccelProgram(program);
    m_memory->setAccelProgram(program);
    m_program->fineTuneForm()->setAccelProgram(program);
    updateCommand();
    updateMemoryEstimate();
}

void LaunchPage::updateMemoryEstimate()
{
    m_memory->setConfigFile(configFile());
    if (m_program->stagesJob())
        m_memory->setRecipeJob(m_program->formJob());
    else if (programKind() == ProgramKind::JobFile)
        m_memory->setJobFile(m_program->jobFile());
    else
        m_memory->setModelFromField();
}

void LaunchPage::setRunOnHosts(bool onHosts)
{
    m_target->setRunOnHosts(onHosts);
}

bool LaunchPage::runsOnHosts() const
{
    return m_target->runsOnHosts();
}

void LaunchPage::setHosts(const QStringList &hosts)
{
    m_target->setHosts(hosts);
}

void LaunchPage::setHostEnvironment(const QString &text)
{
    m_target->setHostEnvironment(text);
}

QTableWidget *LaunchPage::nodeTable() const
{
    return m_clusterRun->table();
}

Result<ex::ExportInput> LaunchPage::exportInput() const
{
    return m_program->exportInput(m_runs->accelProgram(), runsOnHosts());
}

Result<QStringList> LaunchPage::launchArguments() const
{
    auto args = m_program->launchArguments(runsOnHosts());
    if (!args || !runsOnHosts())
        return args;
    auto input = exportInput();
    if (!input)
        return tl::unexpected(input.error());
    const QString interpreter = programKind() == ProgramKind::PythonScript ? m_program->interpreter() : QString();
    auto hostArgs = m_target->hostArguments(input->config, interpreter);
    if (!hostArgs)
        return tl::unexpected(hostArgs.error());
    QStringList all = {args->first()};
    all << *hostArgs << args->mid(1);
    return all;
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
    const QString python = m_program->interpreter();
    if (!runsOnHosts() && programKind() == ProgramKind::PythonScript && !python.isEmpty() &&
        python != QLatin1String(defaultPython))
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
    return saveConfigCopy(configFile(), path);
}

Result<void> LaunchPage::saveExport(ex::ExportForm form, const QString &path) const
{
    auto text = exportText(form);
    if (!text)
        return tl::unexpected(text.error());
    if (m_program->stagesJob()) {
        // The commands name the staged job file: write it so that they run as exported.
        if (auto written = m_program->writeStagedJob(runsOnHosts()); !written)
            return written;
    }
    return writeCommandScript(form, *text, path);
}

void LaunchPage::updateCommand()
{
    m_command->setPlainText(commandText());
    updateButtons();
}

void LaunchPage::updateButtons()
{
    m_launch->setEnabled(!isBusy() && launchArguments().has_value());
    m_stop->setEnabled(m_runs->canStop() && !(m_runs->isCluster() && m_clusterRun->hasEnded()));
    m_monitor->setEnabled(m_runs->isCluster() ? !m_clusterRun->runAddresses().isEmpty()
                                              : !m_runs->runDirectory().isEmpty());
}

bool LaunchPage::isBusy() const
{
    return m_runs->isStarting() || m_launchCheck->isRunning();
}

QString LaunchPage::runId() const
{
    return m_runs->runId();
}

QString LaunchPage::runDirectory() const
{
    return m_runs->runDirectory();
}

QString LaunchPage::clusterRecord() const
{
    return m_runs->record();
}

void LaunchPage::setState(const QString &message)
{
    m_state->setText(message);
    Q_EMIT statusMessage(message);
}

bool LaunchPage::launch()
{
    auto args = launchArguments();
    if (!args || isBusy()) {
        setState(args ? tr("a launch is already starting") : QString::fromStdString(args.error().toString()));
        return false;
    }
    const bool onHosts = runsOnHosts();
    if (m_program->stagesJob()) {
        if (auto written = m_program->writeStagedJob(onHosts); !written) {
            setState(QString::fromStdString(written.error().toString()));
            return false;
        }
    }
    if (onHosts) {
        const QStringList hosts = *m_target->hosts(); // launchArguments() checked them
        rememberHosts(hosts);
        setState(tr("Starting on %1: network pre-flight, then one supervisor per host...")
                     .arg(hosts.join(QStringLiteral(", "))));
        m_runs->startOnHosts(*args);
    } else if (programKind() == ProgramKind::PythonScript) {
        // Before anything starts: the script is there and the interpreter can import what it imports.
        const QString script = m_program->scriptPath();
        if (!QFileInfo(script).isFile()) {
            setState(tr("%1: no such script").arg(script));
            return false;
        }
        const QString python = m_program->interpreter();
        setState(
            tr("Checking %1 for the modules %2 imports...")
                .arg(python.isEmpty() ? QString::fromLatin1(defaultPython) : python, QFileInfo(script).fileName()));
        m_launchCheck->start(python, script);
    } else {
        startLocal({});
    }
    updateCommand();
    return true;
}

void LaunchPage::startLocal(const InterpreterReport &check)
{
    const bool script = programKind() == ProgramKind::PythonScript;
    auto args = launchArguments(); // as the form is now: it may have changed during the check
    QString problem = script ? check.problem() : QString();
    if (problem.isEmpty() && !args)
        problem = QString::fromStdString(args.error().toString());
    if (problem.isEmpty() && script && check.python != m_program->interpreter())
        problem = tr("The interpreter changed during its check; launch again.");
    if (!problem.isEmpty()) {
        updateCommand();
        setState(problem);
        Q_EMIT launchFailed(problem);
        return;
    }
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (script && !check.python.isEmpty())
        env.insert(QStringLiteral("PYTHON_EXEC"), check.python);
    setState(script
                 ? tr("Starting with %1 (%2)...")
                       .arg(check.python.isEmpty() ? QString::fromLatin1(defaultPython) : check.python, check.summary())
                 : tr("Starting..."));
    m_runs->startLocal(*args, env);
    updateCommand();
}

bool LaunchPage::stop()
{
    const bool started = m_runs->stop();
    if (started)
        setState(m_runs->isCluster() ? tr("Stopping every node...") : tr("Stopping..."));
    return started;
}

void LaunchPage::exportWithDialog(int which)
{
    int count = 0;
    const ExportChoice &choice = exportChoices(&count)[which];
    const QString path = QFileDialog::getSaveFileName(this, tr(choice.label),
                                                      QStringLiteral("launch.%1").arg(QLatin1String(choice.suffix)));
    if (path.isEmpty())
        return;
    const Result<void> result =
        choice.form < 0 ? saveConfigAs(path) : saveExport(static_cast<ex::ExportForm>(choice.form), path);
    setState(result ? tr("Exported %1").arg(path) : QString::fromStdString(result.error().toString()));
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
    setRunOnHosts(false);
    setConfigFile(configPath);
    if (auto loaded = recipeForm()->loadJob(jobPath); !jobPath.isEmpty() && loaded) {
        setProgramKind(ProgramKind::Recipe);
    } else {
        setProgramKind(ProgramKind::JobFile);
        m_program->setJobFile(jobPath);
    }
    m_demo->setVisible(true);
    m_demo->setEnabled(!jobPath.isEmpty());
    if (jobPath.isEmpty())
        m_state->setText(tr("The demo job (resources/jobs/demo-gpt.yaml) was not found."));
}

void LaunchPage::runDemo()
{
    launch(); // like every launch on this machine, the run is then shown on the Runs page
}

} // namespace accel::app
