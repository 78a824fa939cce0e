// SshHost: runs `accel` commands on another machine over SSH (libssh), on a session that lives on
// its own thread (SshWorker) and is opened when the first command starts, then reused. Hosts come
// from ~/.ssh/config; keys from ssh-agent and the identity files; known_hosts decides whether the
// host is trusted (an unknown key is refused with its SHA256 fingerprint unless acceptNewHostKey,
// a changed key always). Every argv word is single-quoted for the remote POSIX shell.
#pragma once

#include "launcher/host.h"

#include <QHash>
#include <QObject>
#include <QPointer>

class QSocketNotifier;

#include <deque>
#include <functional>

#include <memory>
#include <mutex>

namespace accel::launcher {

namespace ssh {
class SshWorker;
}
class SshCommand;

struct SshHostOptions {
    QString destination;   // a ~/.ssh/config alias or [user@]host[:port]
    QString sshDirectory;  // config, known_hosts, keys; empty: $ACCEL_SSH_DIR, else $HOME/.ssh
    QString accelProgram;  // accel on the host; empty: $ACCEL_REMOTE_BIN, else "accel" on its PATH
    int timeoutMs = 15000; // connecting, logging in, opening a channel: each step
    bool acceptNewHostKey = false;
    int keepaliveMs = 30000;
    int stopGraceMs = 2000; // between the signals that stop a cancelled command
};

class SshHost : public QObject, public Host {
    Q_OBJECT
public:
    explicit SshHost(SshHostOptions options, QObject *parent = nullptr);
    ~SshHost() override; // stops the remote commands still running; they report done() (cancelled)

    QString name() const override { return m_options.destination; }
    QString accelProgram() const override { return m_accelProgram; }
    std::unique_ptr<HostCommand> start(const QStringList &arguments, const HostCommandOptions &options = {}) override;

private:
    friend class SshCommand;
    void cancelCommand(quint64 id);
    void forget(quint64 id);
    void deliverOutput(quint64 id, const QByteArray &out, const QByteArray &err);
    void deliverDone(quint64 id, AccelOutcome outcome);
    // From the worker's thread: queue a call for this object's thread (see sshhost.cpp).
    void post(std::function<void()> call);
    void watchInbox();
    void drainInbox();

    SshHostOptions m_options;
    QString m_accelProgram;
    quint64 m_nextId = 1;
    QHash<quint64, QPointer<SshCommand>> m_commands;
    std::mutex m_inboxMutex;
    std::deque<std::function<void()>> m_inbox;        // guarded by m_inboxMutex
    bool m_inboxWatched = false;                      // guarded by m_inboxMutex: m_inboxNotifier exists
    int m_inboxWake = -1;                             // eventfd the worker's thread writes to after a post
    std::unique_ptr<QSocketNotifier> m_inboxNotifier; // on this object's thread: drains the inbox
    std::unique_ptr<ssh::SshWorker> m_worker;
};

} // namespace accel::launcher
