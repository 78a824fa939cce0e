// AccelCommand: runs one `accel` command on this machine as a child process in its own session and
// process group, collects its stdout and stderr, and reports its end exactly once through
// done(AccelOutcome): exit code, terminating signal, failed to start (with the reason), cancelled
// or timed out. Cancelling (or a timeout) escalates SIGINT -> SIGTERM -> SIGKILL to the whole
// process group on timers; nothing blocks the calling thread.
//
//     auto *command = new AccelCommand(this);
//     connect(command, &AccelCommand::done, this, [command](const AccelOutcome &outcome) {
//         ... outcome.succeeded(), outcome.standardOutput, outcome.describe() ...
//         command->deleteLater();
//     });
//     command->start({"stop", runDir});
//
// done() is always delivered from the event loop, never from inside start(), so connecting after
// start() is safe. Destroying a running command kills its process group without emitting done().
#pragma once

#include "launcher/hostcommand.h"

#include <QProcess>
#include <QProcessEnvironment>
#include <QStringList>
#include <QTimer>

namespace accel::launcher {

class AccelCommand : public HostCommand {
    Q_OBJECT
public:
    explicit AccelCommand(QObject *parent = nullptr);
    ~AccelCommand() override;

    // The `accel` program next to the running executable when there is one, else "accel" (PATH).
    static QString defaultProgram();

    // All optional; they apply to the next start().
    void setProgram(const QString &program) { m_program = program; }
    QString program() const { return m_program; }
    void setEnvironment(const QProcessEnvironment &environment) { m_environment = environment; }
    void setWorkingDirectory(const QString &directory) { m_workingDirectory = directory; }
    void setStandardInput(const QByteArray &input) { m_input = input; } // default: /dev/null
    void setTimeout(int milliseconds) { m_timeoutMs = milliseconds; }   // <= 0: none (default)
    void setStopGrace(int milliseconds) { m_graceMs = milliseconds; }   // per step of the escalation
    // Keep the output in the outcome (default). Off for long streams that are read from
    // outputReceived only.
    void setKeepOutput(bool keep) { m_keepOutput = keep; }

    // Starts `program arguments...`. Returns false (and does nothing) if it is already running.
    bool start(const QStringList &arguments);
    bool isRunning() const override { return m_running; }
    qint64 processId() const { return m_pid; }
    QStringList arguments() const { return m_arguments; }

public Q_SLOTS:
    void cancel() override;

private:
    void readChannel(QProcess::ProcessChannel channel);
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void onError(QProcess::ProcessError error);
    void beginStop();
    void escalate();
    void signalGroup(int signal) const;
    void finish(AccelOutcome outcome);

    QString m_program;
    QStringList m_arguments;
    QProcessEnvironment m_environment;
    QString m_workingDirectory;
    QByteArray m_input;
    int m_timeoutMs = 0;
    int m_graceMs = 2000;
    bool m_keepOutput = true;

    QProcess m_process;
    QTimer m_timeout;
    QTimer m_escalation;
    int m_stopStep = 0; // signals sent so far while stopping
    qint64 m_pid = 0;
    bool m_running = false;
    bool m_cancelled = false;
    bool m_timedOut = false;
    AccelOutcome m_outcome; // output gathered so far
};

} // namespace accel::launcher
