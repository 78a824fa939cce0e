// One rank of a run: a child process in its own session and process group (so stopping the
// rank also stops whatever it forked), killed by the kernel if the supervisor dies
// (PR_SET_PDEATHSIG), its stdout/stderr appended to logs/rank<N>.log (opened without following
// symlinks; a failed write, e.g. a full disk, is reported once by logWriteFailed) and optionally
// mirrored to the terminal with a "[rank N]" prefix.
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QObject>
#include <QProcess>
#include <QStringList>

#include <cstdio>

namespace accel::launcher {

struct RankExit {
    int rank = 0;
    qint64 pid = 0;
    int exitCode = 0; // when exited normally
    int signal = 0;   // terminating signal, 0 if exited normally
    bool failedToStart = false;
    QString error; // why it failed to start
    double runtimeSeconds = 0;

    bool succeeded() const { return !failedToStart && signal == 0 && exitCode == 0; }
    // Shell convention: the exit code, or 128 + signal; 127 when the program could not start.
    int shellCode() const { return failedToStart ? 127 : signal ? 128 + signal : exitCode; }
    QString describe() const; // "exit 3", "signal 9 (SIGKILL)", "failed to start: ..."
};

class RankProcess : public QObject {
    Q_OBJECT
public:
    struct Spec {
        int rank = 0;
        QStringList command;     // program and arguments
        QStringList environment; // KEY=VALUE, complete
        QString workingDirectory;
        QString runDirectory; // empty: no log
        QString logFile;      // relative to runDirectory, e.g. "logs/rank0.log"
        int umask = -1;       // the rank's umask (the supervisor's own is private); -1 keeps it
        bool mirror = false;  // copy output to the terminal with a prefix
        int inheritFd = -1;   // a descriptor the rank keeps across exec (its number unchanged)
    };

    explicit RankProcess(Spec spec, QObject *parent = nullptr);
    ~RankProcess() override;

    void start();
    int rank() const { return m_spec.rank; }
    qint64 pid() const { return m_pid; }
    bool isRunning() const { return m_running; }
    // Sends a signal to the rank's whole process group (the rank and everything it forked).
    void signalGroup(int signal) const;

Q_SIGNALS:
    void started(int rank, qint64 pid);
    void exited(const accel::launcher::RankExit &exit);
    // The log could not be opened or written (full disk, quota, a symlink in its place); the
    // rank's output is then drained and dropped.
    void logWriteFailed(int rank, const QString &error);

private:
    void readChannel(QProcess::ProcessChannel channel);
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void onError(QProcess::ProcessError error);
    void finish(RankExit exit);
    void failLog(const QString &error);

    Spec m_spec;
    QProcess m_process;
    QFile m_log;
    QByteArray m_partial[2]; // unterminated last line per channel, for the mirror
    QElapsedTimer m_clock;
    qint64 m_pid = 0;
    bool m_running = false;
    bool m_reported = false;
    bool m_logFailed = false;
};

} // namespace accel::launcher
