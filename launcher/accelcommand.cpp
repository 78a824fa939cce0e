#include "launcher/accelcommand.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

namespace accel::launcher {

AccelCommand::AccelCommand(QObject *parent)
    : HostCommand(parent), m_program(defaultProgram()), m_environment(QProcessEnvironment::systemEnvironment())
{
    qRegisterMetaType<AccelOutcome>();
    m_timeout.setSingleShot(true);
    m_escalation.setSingleShot(true);
    connect(&m_timeout, &QTimer::timeout, this, [this] {
        m_timedOut = true;
        beginStop();
    });
    connect(&m_escalation, &QTimer::timeout, this, &AccelCommand::escalate);
    connect(&m_process, &QProcess::readyReadStandardOutput, this, [this] { readChannel(QProcess::StandardOutput); });
    connect(&m_process, &QProcess::readyReadStandardError, this, [this] { readChannel(QProcess::StandardError); });
    connect(&m_process, &QProcess::finished, this, &AccelCommand::onFinished);
    connect(&m_process, &QProcess::errorOccurred, this, &AccelCommand::onError);
}

AccelCommand::~AccelCommand()
{
    if (m_running) {
        m_running = false; // no done() from a half-destroyed object
        signalGroup(SIGKILL);
        m_process.waitForFinished(2000); // SIGKILL: immediate; reaps the child
    }
}

QString AccelCommand::defaultProgram()
{
    if (QCoreApplication::instance()) {
        const QString besideUs = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("accel"));
        if (QFileInfo(besideUs).isExecutable())
            return besideUs;
    }
    return QStringLiteral("accel");
}

bool AccelCommand::start(const QStringList &arguments)
{
    if (m_running)
        return false;
    m_arguments = arguments;
    m_outcome = AccelOutcome{};
    m_cancelled = false;
    m_timedOut = false;
    m_stopStep = 0;
    m_pid = 0;
    m_running = true;

    m_process.setProgram(m_program);
    m_process.setArguments(arguments);
    m_process.setProcessEnvironment(m_environment);
    m_process.setWorkingDirectory(m_workingDirectory);
    if (m_input.isEmpty())
        m_process.setStandardInputFile(QProcess::nullDevice());
    else
        m_process.setStandardInputFile(QString()); // a pipe, written below
    m_process.setChildProcessModifier([] {
        // Own session and process group: cancel() reaches everything the command forked (a detached
        // supervisor calls setsid() itself and is not part of it), and a terminal's Ctrl-C does not.
        ::setsid();
        ::signal(SIGPIPE, SIG_DFL);
        ::signal(SIGINT, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        // A command still running when its starter dies is asked to stop (a lingering `accel tail
        // --follow` would otherwise run forever).
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    });
    m_process.start();
    if (!m_running)
        return true; // failed to start: done() is already queued
    m_pid = m_process.processId();
    if (!m_input.isEmpty()) {
        m_process.write(m_input);
        m_process.closeWriteChannel();
    }
    if (m_timeoutMs > 0)
        m_timeout.start(m_timeoutMs);
    return true;
}

void AccelCommand::cancel()
{
    if (!m_running || m_cancelled || m_timedOut)
        return;
    m_cancelled = true;
    beginStop();
}

void AccelCommand::beginStop()
{
    m_timeout.stop();
    m_stopStep = 0;
    escalate();
}

void AccelCommand::escalate()
{
    if (!m_running)
        return;
    static const int steps[] = {SIGINT, SIGTERM, SIGKILL};
    if (m_stopStep >= 3)
        return;
    signalGroup(steps[m_stopStep++]);
    if (m_stopStep < 3)
        m_escalation.start(m_graceMs);
}

void AccelCommand::signalGroup(int signal) const
{
    if (m_pid > 0)
        ::killpg(static_cast<pid_t>(m_pid), signal);
}

void AccelCommand::readChannel(QProcess::ProcessChannel channel)
{
    m_process.setReadChannel(channel);
    const QByteArray data = m_process.readAll();
    if (data.isEmpty())
        return;
    const bool isOut = channel == QProcess::StandardOutput;
    if (m_keepOutput)
        (isOut ? m_outcome.standardOutput : m_outcome.standardError) += data;
    Q_EMIT outputReceived(isOut ? data : QByteArray(), isOut ? QByteArray() : data);
}

void AccelCommand::onFinished(int exitCode, QProcess::ExitStatus status)
{
    readChannel(QProcess::StandardOutput);
    readChannel(QProcess::StandardError);
    AccelOutcome outcome = m_outcome;
    if (status == QProcess::CrashExit)
        outcome.signal = exitCode; // Qt reports the terminating signal as the exit code of a crash
    else
        outcome.exitCode = exitCode;
    finish(std::move(outcome));
}

void AccelCommand::onError(QProcess::ProcessError error)
{
    if (error != QProcess::FailedToStart || !m_running)
        return;
    AccelOutcome outcome = m_outcome;
    outcome.failedToStart = true;
    outcome.error = m_program + QStringLiteral(": ") + m_process.errorString();
    finish(std::move(outcome));
}

void AccelCommand::finish(AccelOutcome outcome)
{
    if (!m_running)
        return;
    m_running = false;
    m_timeout.stop();
    m_escalation.stop();
    outcome.cancelled = m_cancelled;
    outcome.timedOut = m_timedOut;
    if (m_timedOut)
        outcome.error = QStringLiteral("%1 %2 did not end within %3 ms")
                            .arg(QFileInfo(m_program).fileName(), m_arguments.value(0))
                            .arg(m_timeoutMs);
    // Always from the event loop: a failure to start is detected inside start(), before the caller
    // may have connected to done().
    QMetaObject::invokeMethod(
        this, [this, outcome] { Q_EMIT done(outcome); }, Qt::QueuedConnection);
}

} // namespace accel::launcher
