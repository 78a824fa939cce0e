// RemoteRunFollower: follows a run on a Host (SshHost, or LocalHost) through `accel tail RUN
// --follow --json` run there, as a monitor RunSource: the same metric batches, events, log lines
// and run.json manifests a RunDirectoryFollower gives for a local run (the accel.tail stream is
// decoded by StreamRunSource, docs/monitor.md). When the connection is lost it connects again with
// backoff and continues every file just after the last line received (`accel tail --from
// FILE=OFFSET`): no line lost, none delivered twice. It ends (ended()) when the run has reached a
// final state there, when the host cannot be reached, or when reconnecting keeps failing.
#pragma once

#include "launcher/host.h"
#include "monitor/tailstream.h"

#include <QTimer>

#include <memory>

namespace accel::app {

struct RemoteFollowOptions {
    int firstRetryMs = 250;    // wait before the first reconnection; doubles with every failed one
    int maximumRetryMs = 8000; // longest wait between two attempts
    int maximumAttempts = 8;   // reconnections in a row that bring no stream; then it gives up
    QStringList tailArguments; // narrows the stream: e.g. {"--metrics"} or {"--rank", "0"}
};

class RemoteRunFollower : public accel::monitor::StreamRunSource {
    Q_OBJECT
public:
    // `host` must outlive the follower. `run`: a run id, a unique part of one, or a run directory
    // on that host.
    RemoteRunFollower(launcher::Host *host, QString run, RemoteFollowOptions options = {}, QObject *parent = nullptr);
    ~RemoteRunFollower() override;

    void start() override;
    void stop() override; // cancels the remote command; nothing more is delivered, ended() is not emitted

    bool isRunning() const { return m_running; }
    int connections() const { return m_connections; } // commands started so far (1 + reconnections)
    // Why it ended without the run ending: an AccelOutcome reason ("unreachable", "host_key_unknown",
    // "login_refused", "accel_not_found", "connection_lost" once the attempts ran out, ...),
    // "cannot_resume" or "failed" (accel tail failed there); empty otherwise.
    QString failure() const { return m_failure; }
    QString runState() const { return m_runState; } // the newest run.json state received

Q_SIGNALS:
    // The stream stopped for an outside reason (`reason` as in failure()); attempt `attempt` follows
    // in `retryInMs`.
    void connectionLost(const QString &reason, const QString &message, int attempt, int retryInMs);
    // The stream of connection `connection` (1 = the first) is arriving.
    void streamStarted(int connection);

private:
    void connectNow();
    void onOutput(const QByteArray &standardOutput, const QByteArray &standardError);
    void onDone(const launcher::AccelOutcome &outcome);
    void end(const QString &failure, const QString &reason);
    QStringList tailArguments() const;

    launcher::Host *m_host = nullptr;
    QString m_run;
    RemoteFollowOptions m_options;
    std::unique_ptr<launcher::HostCommand> m_command;
    QTimer m_retry;
    QByteArray m_stderrTail; // the end of the command's stderr, for the error message
    QString m_failure;
    QString m_runState;
    int m_connections = 0;
    int m_attempts = 0; // failed reconnections in a row
    bool m_streaming = false;
    bool m_everStreamed = false;
    bool m_running = false;
};

} // namespace accel::app
