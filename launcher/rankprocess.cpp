#include "launcher/rankprocess.h"

#include "core/rundir/privatefiles.h"

#include <QProcessEnvironment>

#include <fcntl.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace accel::launcher {

QString RankExit::describe() const
{
    if (failedToStart)
        return QStringLiteral("failed to start: ") + error;
    if (signal) {
        const char *name = sigabbrev_np(signal);
        return QStringLiteral("signal %1 (SIG%2)").arg(signal).arg(QString::fromLatin1(name ? name : "?"));
    }
    return QStringLiteral("exit %1").arg(exitCode);
}

RankProcess::RankProcess(Spec spec, QObject *parent) : QObject(parent), m_spec(std::move(spec))
{
    connect(&m_process, &QProcess::readyReadStandardOutput, this, [this] { readChannel(QProcess::StandardOutput); });
    connect(&m_process, &QProcess::readyReadStandardError, this, [this] { readChannel(QProcess::StandardError); });
    connect(&m_process, &QProcess::finished, this, &RankProcess::onFinished);
    connect(&m_process, &QProcess::errorOccurred, this, &RankProcess::onError);
}

RankProcess::~RankProcess()
{
    if (m_running) {
        signalGroup(SIGKILL);
        m_process.waitForFinished(2000);
    }
}

void RankProcess::start()
{
    if (!m_spec.runDirectory.isEmpty()) {
        auto fd = rundir::openRunFile(QFile::encodeName(m_spec.runDirectory).toStdString(),
                                      m_spec.logFile.toStdString(), rundir::OpenFor::Append);
        if (!fd)
            failLog(QString::fromStdString(fd.error().toString()));
        else if (!m_log.open(*fd, QIODevice::WriteOnly | QIODevice::Append | QIODevice::Unbuffered,
                             QFileDevice::AutoCloseHandle))
            ::close(*fd);
    }
    m_process.setProgram(m_spec.command.value(0));
    m_process.setArguments(m_spec.command.mid(1));
    m_process.setEnvironment(m_spec.environment);
    if (!m_spec.workingDirectory.isEmpty())
        m_process.setWorkingDirectory(m_spec.workingDirectory);
    m_process.setStandardInputFile(QProcess::nullDevice());
    const pid_t supervisor = ::getpid();
    const int rankUmask = m_spec.umask;
    const int inheritFd = m_spec.inheritFd;
    m_process.setChildProcessModifier([supervisor, rankUmask, inheritFd] {
        if (inheritFd >= 0)
            ::fcntl(inheritFd, F_SETFD, 0); // kept across exec
        if (rankUmask >= 0)
            ::umask(static_cast<mode_t>(rankUmask));
        // Own session and process group: the terminal's Ctrl-C reaches only the supervisor,
        // which stops the ranks itself, and killpg() reaches the rank's own children.
        ::setsid();
        // The supervisor ignores SIGPIPE (a closed terminal pipe must not end the run) and
        // SIGXFSZ (a file-size limit is a write error there, like a full disk); ranks get the
        // defaults back, and an empty signal mask.
        ::signal(SIGPIPE, SIG_DFL);
        ::signal(SIGXFSZ, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        // Die with the supervisor, even when it is killed with SIGKILL.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != supervisor)
            ::_exit(127); // the supervisor died before prctl took effect
    });
    m_clock.start();
    m_running = true;
    m_process.start();
    if (m_process.state() != QProcess::NotRunning || m_process.processId() > 0) {
        m_pid = m_process.processId();
        Q_EMIT started(m_spec.rank, m_pid);
    }
}

void RankProcess::signalGroup(int signal) const
{
    if (m_pid > 0)
        ::killpg(static_cast<pid_t>(m_pid), signal);
}

void RankProcess::readChannel(QProcess::ProcessChannel channel)
{
    m_process.setReadChannel(channel);
    const QByteArray data = m_process.readAll();
    if (data.isEmpty())
        return;
    // Straight to the descriptor: a short write (full disk) keeps its errno for the message.
    if (m_log.isOpen() && !rundir::writeAll(m_log.handle(), data.constData(), static_cast<size_t>(data.size())))
        failLog(m_spec.runDirectory + QLatin1Char('/') + m_spec.logFile + QStringLiteral(": write failed: ") +
                QString::fromLocal8Bit(std::strerror(errno)));
    if (!m_spec.mirror)
        return;
    const int index = channel == QProcess::StandardOutput ? 0 : 1;
    QByteArray &partial = m_partial[index];
    partial += data;
    FILE *out = index == 0 ? stdout : stderr;
    const QByteArray prefix = "[rank " + QByteArray::number(m_spec.rank) + "] ";
    qsizetype start = 0;
    for (qsizetype newline = partial.indexOf('\n'); newline >= 0; newline = partial.indexOf('\n', start)) {
        const QByteArray line = prefix + partial.mid(start, newline - start + 1);
        std::fwrite(line.constData(), 1, static_cast<size_t>(line.size()), out);
        start = newline + 1;
    }
    partial.remove(0, start);
    std::fflush(out);
}

void RankProcess::onFinished(int exitCode, QProcess::ExitStatus status)
{
    readChannel(QProcess::StandardOutput);
    readChannel(QProcess::StandardError);
    for (int index = 0; index < 2; ++index) {
        if (m_spec.mirror && !m_partial[index].isEmpty()) {
            const QByteArray line = "[rank " + QByteArray::number(m_spec.rank) + "] " + m_partial[index] + "\n";
            std::fwrite(line.constData(), 1, static_cast<size_t>(line.size()), index == 0 ? stdout : stderr);
            m_partial[index].clear();
        }
    }
    RankExit exit;
    exit.rank = m_spec.rank;
    exit.pid = m_pid;
    if (status == QProcess::CrashExit)
        exit.signal = exitCode; // Qt reports the terminating signal as the exit code of a crash
    else
        exit.exitCode = exitCode;
    finish(exit);
}

void RankProcess::onError(QProcess::ProcessError error)
{
    if (error != QProcess::FailedToStart)
        return;
    RankExit exit;
    exit.rank = m_spec.rank;
    exit.failedToStart = true;
    exit.error = m_spec.command.value(0) + QStringLiteral(": ") + m_process.errorString();
    finish(exit);
}

void RankProcess::failLog(const QString &error)
{
    if (m_log.isOpen())
        m_log.close();
    if (m_logFailed)
        return;
    m_logFailed = true;
    Q_EMIT logWriteFailed(m_spec.rank, error);
}

void RankProcess::finish(RankExit exit)
{
    if (m_reported)
        return;
    m_reported = true;
    m_running = false;
    exit.runtimeSeconds = static_cast<double>(m_clock.elapsed()) / 1000.0;
    if (m_log.isOpen())
        m_log.flush();
    Q_EMIT exited(exit);
}

} // namespace accel::launcher
