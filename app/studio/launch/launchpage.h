// The Launch page: pick a program (Python script with interpreter and arguments; a built-in recipe
// edited in a form, RecipeForm; or a job file for a TorchScript model, a C++ plugin or any recipe)
// and a cluster config, see the exact `accel launch` command live, start it detached (`accel launch
// --detach --json`, non-blocking, the run id parsed from its output), stop it (`accel stop RUN`),
// jump to the monitor, and export the config (YAML/JSON) or the command in its four forms
// (launcher/export). A recipe form is written as job.yaml into the run's staging folder (the run
// directory `accel launch --run_dir` then uses) just before the launch.
#pragma once

#include "core/common/result.h"
#include "launcher/accelcommand.h"
#include "launcher/export/commandexport.h"

#include <QPointer>
#include <QTimer>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;

namespace accel::app {

class RecipeForm;

class LaunchPage : public QWidget {
    Q_OBJECT
public:
    enum class ProgramKind { PythonScript, Recipe, TorchScript, Plugin, JobFile };

    explicit LaunchPage(QWidget *parent = nullptr);
    ~LaunchPage() override;

    void setProgramKind(ProgramKind kind);
    ProgramKind programKind() const;
    void setScript(const QString &path, const QString &arguments = {});
    void setInterpreter(const QString &python); // empty or python3: the default
    // A gpt/mlp job goes into the recipe form when the kind is Recipe (or a Python script);
    // other jobs, or other kinds, use the job-file field (kind JobFile unless TorchScript/Plugin).
    void setJobFile(const QString &path);
    RecipeForm *recipeForm() const { return m_recipeForm; }
    // Where the recipe form is written at launch: <runs root>/<new run id>/job.yaml.
    QString stagedJobPath() const;
    void setConfigFile(const QString &path);
    QString configFile() const;
    // The accel program (default: accel beside this program, else accel on PATH).
    void setAccelProgram(const QString &program)
    {
        m_accel = program;
        updateCommand();
    }

    // Arguments of `accel launch` for the current choices (without --detach/--json), or an error.
    Result<QStringList> launchArguments() const;
    // The command as shown: quoted, with PYTHON_EXEC=... when another interpreter is chosen.
    QString commandText() const;
    // The program spec and config for the exports.
    Result<launcher::exporting::ExportInput> exportInput() const;
    Result<std::string> exportText(launcher::exporting::ExportForm form) const;
    // Writes the config (format by extension) or a command form to `path`.
    Result<void> saveConfigAs(const QString &path) const;
    Result<void> saveExport(launcher::exporting::ExportForm form, const QString &path) const;

    // Starts `accel launch --detach --json ...`; false (and a status message) when the input is bad
    // or a launch is still starting.
    bool launch();
    bool stop(); // `accel stop <run dir>` for the last launched run (Stop applies while it is live)
    bool isBusy() const { return !m_process.isNull(); }
    QString runId() const { return m_runId; }
    QString runDirectory() const { return m_runDir; }

    // First-run demo: the demo job on 2 CPU ranks with `configPath` (written when missing).
    void prepareDemo(const QString &jobPath, const QString &configPath);
    static QString findDemoJob();
    QPushButton *launchButton() const { return m_launch; }
    QPushButton *demoButton() const { return m_demo; }
    QPushButton *stopButton() const { return m_stop; }
    QPushButton *monitorButton() const { return m_monitor; }

Q_SIGNALS:
    void launched(const QString &runId, const QString &runDirectory);
    void launchFailed(const QString &message);
    void stopFinished(int exitCode, const QString &output);
    void openMonitorRequested(const QString &runDirectory);
    void statusMessage(const QString &message);

private:
    void buildUi();
    void updateCommand();
    void onLaunchFinished(const launcher::AccelOutcome &outcome);
    void watchRunState(); // Stop is enabled only while the launched run is live
    void exportWithDialog(int which);
    void runDemo();
    launcher::AccelCommand *startAccel(const QStringList &arguments);
    Result<void> writeStagedJob() const;
    void discardStagedRun();

    QComboBox *m_kind = nullptr;
    QStackedWidget *m_programStack = nullptr;
    QLineEdit *m_script = nullptr;
    QLineEdit *m_args = nullptr;
    QLineEdit *m_python = nullptr;
    QLineEdit *m_job = nullptr;
    RecipeForm *m_recipeForm = nullptr;
    mutable QString m_stagedRunDir;
    mutable QString m_stagedName;
    QLineEdit *m_config = nullptr;
    QPlainTextEdit *m_command = nullptr;
    QPushButton *m_launch = nullptr;
    QPushButton *m_stop = nullptr;
    QPushButton *m_monitor = nullptr;
    QPushButton *m_export = nullptr;
    QPushButton *m_demo = nullptr;
    QLabel *m_state = nullptr;
    QLabel *m_processes = nullptr; // how many processes the launch starts (processCountForFile)
    QString m_accel;
    QPointer<launcher::AccelCommand> m_process;
    QPointer<launcher::AccelCommand> m_stopProcess;
    QTimer m_runWatch;
    QString m_runId;
    QString m_runDir;
};

} // namespace accel::app
