// The Launch page: where to run (this machine, or cluster hosts over SSH), what to run
// (ProgramChoice: a Python script, a built-in recipe in a form, a Hugging Face model to fine-tune
// (FineTuneForm), or a job file) with a cluster
// config, the exact `accel` command live, Launch and Stop (RunControl: `accel launch --detach
// --json` / `accel stop RUN`, or `accel launch --hosts H1,H2 --json` / `accel hosts stop RECORD`
// with every node's result in a table), the monitor for local runs, and the exports (the config in
// YAML/JSON or the command in its four forms, launchexports.h). A Python script on this machine is
// checked before anything starts: the file exists and the interpreter runs and finds every module
// the script imports at top level. Every run started here is detached (it outlives the studio)
// and shown on the Runs page at once (openMonitorRequested).
#pragma once

#include "app/studio/launch/programchoice.h"
#include "app/studio/launch/pythoninterpreters.h"
#include "core/common/result.h"
#include "launcher/export/commandexport.h"

#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;

namespace accel::app {

class ClusterRunView;
class LaunchTarget;
class MemoryEstimatePanel;
class FineTuneForm;
class RecipeForm;
class RunControl;

class LaunchPage : public QWidget {
    Q_OBJECT
public:
    using ProgramKind = ProgramChoice::Kind;

    explicit LaunchPage(QWidget *parent = nullptr);
    ~LaunchPage() override;

    void setProgramKind(ProgramKind kind) { m_program->setKind(kind); }
    ProgramKind programKind() const { return m_program->kind(); }
    void setScript(const QString &path, const QString &arguments = {}) { m_program->setScript(path, arguments); }
    void setInterpreter(const QString &python) { m_program->setInterpreter(python); }
    QString interpreter() const { return m_program->interpreter(); }
    InterpreterField *interpreterField() const { return m_program->interpreterField(); }
    // Remembers the form in the studio's settings (ProgramChoice::rememberForm).
    void rememberForm() { m_program->rememberForm(QStringLiteral("launch")); }
    void setJobFile(const QString &path) { m_program->setJobFile(path); }
    RecipeForm *recipeForm() const { return m_program->recipeForm(); }
    FineTuneForm *fineTuneForm() const { return m_program->fineTuneForm(); }
    QString stagedJobPath() const { return m_program->stagedJobPath(runsOnHosts()); }
    void setConfigFile(const QString &path) { m_program->setConfigFile(path); }
    QString configFile() const { return m_program->configFile(); }
    void setAccelProgram(const QString &program);

    // Where to run: this machine (default) or the hosts (a cluster, machine 0 first).
    void setRunOnHosts(bool onHosts);
    bool runsOnHosts() const;
    void setHosts(const QStringList &hosts); // also chooses the hosts
    // KEY=VALUE words (shell quoting allowed) for accel on every host (`--remote_env`).
    void setHostEnvironment(const QString &text);

    // Arguments of `accel` for the current choices (local: without --detach/--json), or an error.
    Result<QStringList> launchArguments() const;
    // The command as shown: quoted, with PYTHON_EXEC=... when another interpreter runs locally.
    QString commandText() const;
    Result<launcher::exporting::ExportInput> exportInput() const;
    Result<std::string> exportText(launcher::exporting::ExportForm form) const;
    Result<void> saveConfigAs(const QString &path) const;
    Result<void> saveExport(launcher::exporting::ExportForm form, const QString &path) const;

    // Starts the launch; false (and a status message) when the input is bad or one is starting. A
    // Python script on this machine is checked first (see above): launchFailed() when it cannot run.
    bool launch();
    bool stop(); // the last launched run (or every node of the last cluster launch)
    bool isBusy() const;
    QString runId() const;
    QString runDirectory() const;
    QString clusterRecord() const; // the record of the last started cluster launch, else empty

    // First-run demo: the demo job on 2 CPU ranks with `configPath` (written when missing).
    void prepareDemo(const QString &jobPath, const QString &configPath);
    static QString findDemoJob();
    QPushButton *launchButton() const { return m_launch; }
    QPushButton *demoButton() const { return m_demo; }
    QPushButton *stopButton() const { return m_stop; }
    QPushButton *monitorButton() const { return m_monitor; }
    QTableWidget *nodeTable() const;
    MemoryEstimatePanel *memoryEstimate() const { return m_memory; }

Q_SIGNALS:
    void launched(const QString &runId, const QString &runDirectory);
    void clusterLaunched(const QString &record);
    void launchFailed(const QString &message);
    void stopFinished(int exitCode, const QString &output);
    void openMonitorRequested(const QString &runDirectory);
    // "Open monitor" after a cluster launch: every node's run (ClusterRunView::runAddresses()).
    void openRemoteMonitorRequested(const QStringList &runAddresses);
    void statusMessage(const QString &message);

private:
    void updateCommand();
    void updateMemoryEstimate();
    void updateButtons();
    void setState(const QString &message);
    void exportWithDialog(int which);
    void runDemo();
    void startLocal(const InterpreterReport &check);

    ProgramChoice *m_program = nullptr;
    RunControl *m_runs = nullptr;
    LaunchTarget *m_target = nullptr;
    QPlainTextEdit *m_command = nullptr;
    QPushButton *m_launch = nullptr;
    QPushButton *m_stop = nullptr;
    QPushButton *m_monitor = nullptr;
    QPushButton *m_export = nullptr;
    QPushButton *m_demo = nullptr;
    QLabel *m_state = nullptr;
    ClusterRunView *m_clusterRun = nullptr;
    MemoryEstimatePanel *m_memory = nullptr;
    InterpreterProbe *m_launchCheck = nullptr;
};

} // namespace accel::app
