// What the Launch page runs: the program (a Python script with interpreter and arguments; a
// built-in recipe edited in RecipeForm; a Hugging Face model fine-tuned in FineTuneForm; or a job
// file for a TorchScript model, a C++ plugin or any recipe) and the cluster config, turned into
// `accel launch` arguments and the exports' input. A form's job (recipe or fine-tune) is written as
// job.yaml into a staging folder just before the launch: the run's own
// directory (`accel launch --run_dir`) on this machine, a cluster-jobs folder for cluster hosts
// (each node makes its own run directory there).
#pragma once

#include "core/common/result.h"
#include "launcher/export/commandexport.h"
#include "launcher/jobfile.h"

#include <QWidget>

class QComboBox;
class QLineEdit;
class QStackedWidget;

namespace accel::app {

class FineTuneForm;
class InterpreterField;
class RecipeForm;

class ProgramChoice : public QWidget {
    Q_OBJECT
public:
    enum class Kind { PythonScript, Recipe, TorchScript, Plugin, JobFile, FineTune };

    explicit ProgramChoice(QWidget *parent = nullptr);

    void setKind(Kind kind);
    Kind kind() const;
    void setScript(const QString &path, const QString &arguments = {});
    void setInterpreter(const QString &python); // empty or python3: the default
    QString interpreter() const;                // as typed, trimmed
    InterpreterField *interpreterField() const { return m_interpreter; }
    QString scriptPath() const; // the script field as an absolute path; empty when empty
    // A gpt/mlp job goes into the recipe form when the kind is Recipe (or a Python script), a
    // causal_lm job into the Fine-tune form (kind FineTune); other jobs, or other kinds, use the
    // job-file field (kind JobFile unless TorchScript/Plugin).
    void setJobFile(const QString &path);
    QString jobFile() const; // the job-file field, trimmed
    RecipeForm *recipeForm() const { return m_recipeForm; }
    FineTuneForm *fineTuneForm() const { return m_fineTune; }
    // Whether the kind launches a form's job (Recipe, FineTune), written at launch; that job.
    bool stagesJob() const { return kind() == Kind::Recipe || kind() == Kind::FineTune; }
    const launcher::JobFile &formJob() const;
    // Where the recipe form is written at launch (<runs root>/<new run id>/job.yaml on this
    // machine; <data>/accel-studio/cluster-jobs/<new run id>/job.yaml for cluster hosts).
    QString stagedJobPath(bool onHosts = false) const;
    Result<void> writeStagedJob(bool onHosts) const;
    void discardStagedJob(); // after a failed launch: removes what no run used
    void keepStagedJob();    // after a launch: the next one stages anew
    void setConfigFile(const QString &path);
    QString configFile() const;
    QLineEdit *configField() const { return m_config; }
    // Restores the form from the studio's settings (QSettings group `group`: kind, script,
    // arguments, interpreter, job file, config file, the recipe form's job file) and saves it there
    // on every change from now on.
    void rememberForm(const QString &group);

    // The program spec and config for the exports; `accelProgram` is named by its absolute path.
    Result<launcher::exporting::ExportInput> exportInput(const QString &accelProgram, bool onHosts = false) const;
    // Arguments of `accel launch` (without --detach/--json/--hosts), or why there are none. On
    // hosts a recipe launch has no --run_dir: each node makes its own.
    Result<QStringList> launchArguments(bool onHosts = false) const;

Q_SIGNALS:
    void changed();
    void statusMessage(const QString &message);

private:
    QComboBox *m_kind = nullptr;
    QStackedWidget *m_stack = nullptr;
    QLineEdit *m_script = nullptr;
    QLineEdit *m_args = nullptr;
    InterpreterField *m_interpreter = nullptr;
    QLineEdit *m_job = nullptr;
    QLineEdit *m_config = nullptr;
    RecipeForm *m_recipeForm = nullptr;
    FineTuneForm *m_fineTune = nullptr;
    mutable QString m_stagedDir;
    mutable QString m_stagedName;
    mutable bool m_stagedOnHosts = false;
    QString m_settingsGroup; // empty: the form is not remembered
    bool m_restoring = false;

    void saveForm() const;
};

} // namespace accel::app
