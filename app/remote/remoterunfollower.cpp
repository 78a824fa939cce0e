#include "app/remote/remoterunfollower.h"

#include <QJsonObject>

#include <algorithm>

namespace accel::app {

using launcher::AccelOutcome;
using launcher::Host;
using launcher::HostCommand;
using launcher::HostCommandOptions;

namespace {

constexpr qsizetype kStderrKept = 4096;

// The outside reasons after which connecting again can work.
bool connectionBroke(const AccelOutcome &outcome, bool everStreamed)
{
    if (outcome.reason == QLatin1String("connection_lost"))
        return true;
    // A host that answered before and is gone now (rebooting, network down) is retried too.
    return everStreamed &&
           (outcome.reason == QLatin1String("unreachable") || outcome.reason == QLatin1String("timeout"));
}

} // namespace

RemoteRunFollower::RemoteRunFollower(Host *host, QString run, RemoteFollowOptions options, QObject *parent)
    : StreamRunSource(parent), m_host(host), m_run(std::move(run)), m_options(std::move(options))
{
    m_retry.setSingleShot(true);
    connect(&m_retry, &QTimer::timeout, this, &RemoteRunFollower::connectNow);
    connect(this, &RunSource::runInfoChanged, this,
            [this](const QJsonObject &manifest) { m_runState = manifest.value(QLatin1String("state")).toString(); });
}

RemoteRunFollower::~RemoteRunFollower()
{
    stop();
}

void RemoteRunFollower::start()
{
    if (m_running)
        return;
    m_running = true;
    connectNow();
}

void RemoteRunFollower::stop()
{
    m_running = false;
    m_retry.stop();
    if (m_command) {
        disconnect(m_command.get(), nullptr, this, nullptr);
        m_command->cancel();
        m_command.release()->deleteLater(); // done() may still be on its way to it
    }
}

QStringList RemoteRunFollower::tailArguments() const
{
    // After the first header the host has said where the run is: later connections name that
    // directory, not an id prefix that a newer run could make ambiguous.
    const QString run = runDirectory().isEmpty() ? m_run : runDirectory();
    QStringList arguments{QStringLiteral("tail"), run, QStringLiteral("--follow"), QStringLiteral("--json")};
    arguments += m_options.tailArguments;
    const QHash<QString, qint64> reached = positions();
    QStringList files = reached.keys();
    files.sort();
    for (const QString &file : files)
        arguments << QStringLiteral("--from") << file + QLatin1Char('=') + QString::number(reached.value(file));
    return arguments;
}

void RemoteRunFollower::connectNow()
{
    if (!m_running)
        return;
    ++m_connections;
    m_streaming = false;
    m_stderrTail.clear();
    HostCommandOptions options;
    options.keepOutput = false; // the stream can be long: it is decoded as it arrives
    m_command = m_host->start(tailArguments(), options);
    connect(m_command.get(), &HostCommand::outputReceived, this, &RemoteRunFollower::onOutput);
    connect(m_command.get(), &HostCommand::done, this, &RemoteRunFollower::onDone);
}

void RemoteRunFollower::onOutput(const QByteArray &standardOutput, const QByteArray &standardError)
{
    if (!m_running)
        return;
    if (!standardError.isEmpty()) {
        m_stderrTail += standardError;
        if (m_stderrTail.size() > kStderrKept)
            m_stderrTail = m_stderrTail.right(kStderrKept);
    }
    if (standardOutput.isEmpty())
        return;
    if (!m_streaming && standardOutput.contains('\n')) {
        m_streaming = true;
        m_everStreamed = true;
        m_attempts = 0;
        Q_EMIT streamStarted(m_connections);
    }
    feed(standardOutput);
}

void RemoteRunFollower::onDone(const AccelOutcome &outcome)
{
    if (m_command)
        m_command.release()->deleteLater(); // it is emitting this signal
    if (!m_running)
        return;
    discardPartialLine(); // a line cut by a lost connection comes again, whole, from its offset
    if (outcome.succeeded()) {
        // accel tail returns 0 only once the run's state is final and everything was sent.
        m_running = false;
        finish(QStringLiteral("run ended: %1").arg(m_runState.isEmpty() ? QStringLiteral("unknown") : m_runState));
        return;
    }
    QString message = outcome.error;
    if (message.isEmpty()) {
        const QList<QByteArray> lines = m_stderrTail.trimmed().split('\n');
        message = QStringLiteral("%1: accel tail %2 failed (%3)%4")
                      .arg(m_host->name(), m_run, outcome.describe(),
                           lines.last().isEmpty() ? QString() : QStringLiteral(": ") + QString::fromUtf8(lines.last()));
    }
    if (!connectionBroke(outcome, m_everStreamed)) {
        end(outcome.reason.isEmpty() ? QStringLiteral("failed") : outcome.reason, message);
        return;
    }
    if (!positionsKnown()) {
        end(QStringLiteral("cannot_resume"),
            QStringLiteral("%1; the accel on %2 sends no stream offsets (it is older than this one): update it there "
                           "to continue a stream after a lost connection")
                .arg(message, m_host->name()));
        return;
    }
    ++m_attempts;
    if (m_attempts > m_options.maximumAttempts) {
        end(outcome.reason, QStringLiteral("%1 (gave up after %2 attempts to connect again)")
                                .arg(message)
                                .arg(m_options.maximumAttempts));
        return;
    }
    const qint64 backoff = qint64(m_options.firstRetryMs) << std::min(m_attempts - 1, 20);
    const int delay = int(std::min<qint64>(backoff, m_options.maximumRetryMs));
    Q_EMIT connectionLost(outcome.reason, message, m_attempts, delay);
    m_retry.start(delay);
}

void RemoteRunFollower::end(const QString &failure, const QString &reason)
{
    m_running = false;
    m_failure = failure;
    finish(reason);
}

} // namespace accel::app
