// The Python that runs a user's script: where interpreters are found (the script's project's
// .venv / venv / env, an active virtualenv or conda env, the user's virtualenvs and conda envs,
// python3 on PATH), the modules the script imports at top level, and a probe that asks an
// interpreter, without importing anything heavy, which Python it is, its torch and accelerate
// versions and which of the script's modules it cannot find. Nothing here blocks: the probe runs
// the interpreter as a child process and reports once through finished().
#pragma once

#include <QObject>
#include <QPointer>
#include <QStringList>

namespace accel::launcher {
class AccelCommand;
struct AccelOutcome;
} // namespace accel::launcher

namespace accel::app {

// What one interpreter said (or why it could not say anything).
struct InterpreterReport {
    QString python;      // as given ("python3", "/home/me/proj/.venv/bin/python")
    QString scriptPath;  // the script whose imports were checked; empty: none
    bool ran = false;    // the interpreter ran the probe
    QString error;       // why it did not (not found, not executable, timed out, bad output)
    QString version;     // "3.11.2"
    QString executable;  // sys.executable
    QString torch;       // version, empty when not installed
    QString accelerate;  // version, empty when not installed
    QStringList imports; // the script's top-level imports that were checked
    QStringList missing; // those the interpreter cannot find

    bool hasTrainingStack() const { return ran && !torch.isEmpty() && !accelerate.isEmpty(); }
    bool canRunScript() const { return ran && missing.isEmpty(); }
    // "Python 3.11.2 · torch 2.12.1 · accelerate 1.15.0" / "... · no torch · no accelerate".
    QString summary() const;
    // Why the script cannot run with it, naming the interpreter and the modules; empty when it can.
    QString problem() const;
};

// The top-level (unindented) `import a.b, c as d` / `from e.f import g` of a Python file, as
// top-level package names in order (a, c, e), without relative imports and __future__. Empty
// when the file cannot be read.
QStringList scriptImports(const QString &scriptPath);

// Interpreters worth offering for `scriptPath`, best first, each once: the .venv, venv or env of
// the script's folder and every folder above it; $VIRTUAL_ENV and $CONDA_PREFIX; ~/.virtualenvs,
// ~/.venvs, ~/venvs, ~/.local/share/virtualenvs, pyenv versions; conda environments (listed in
// ~/.conda/environments.txt, under ~/.conda/envs and the usual conda, miniconda, miniforge and
// mamba installs in HOME and /opt, with their base environments); python3 on PATH. Only
// executables that exist are listed.
QStringList pythonCandidates(const QString &scriptPath);

// Asks one interpreter (see InterpreterReport). Starting again cancels the probe in flight.
class InterpreterProbe : public QObject {
    Q_OBJECT
public:
    explicit InterpreterProbe(QObject *parent = nullptr);
    ~InterpreterProbe() override;

    // `python` empty means python3. `scriptPath` empty: no imports are checked.
    void start(const QString &python, const QString &scriptPath = {});
    void cancel();
    bool isRunning() const { return !m_command.isNull(); }

Q_SIGNALS:
    void finished(const accel::app::InterpreterReport &report);

private:
    void onDone(const launcher::AccelOutcome &outcome);

    QPointer<launcher::AccelCommand> m_command;
    InterpreterReport m_report;
};

} // namespace accel::app
