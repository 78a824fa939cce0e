// One `accel` command running on a host (this machine or one reached over SSH), seen the same way
// by every caller: output arrives in batches, and the end is reported exactly once through done().
#pragma once

#include <QByteArray>
#include <QMetaType>
#include <QObject>
#include <QString>

namespace accel::launcher {

// How a command ended. Exactly one of: it ran and exited (exitCode), it was killed by a signal
// (signal), it could not be started or reached (failedToStart, with the reason in error), it was
// cancelled, or it ran out of time (timedOut).
struct AccelOutcome {
    int exitCode = -1; // when it exited normally
    int signal = 0;    // terminating signal number, 0 if it exited normally
    bool failedToStart = false;
    bool cancelled = false;
    bool timedOut = false;
    QString error; // why it failed to start, timed out or was lost; empty otherwise
    // Why it did not run or was lost, for programs: "invalid_host" (a name that cannot be a host),
    // "unreachable", "timeout", "host_key_unknown", "host_key_changed", "login_refused",
    // "connection_lost", "accel_not_found"; empty otherwise.
    QString reason;
    QString hostKeyFingerprint; // "SHA256:...", with host_key_unknown and host_key_changed
    // Also with host_key_unknown and host_key_changed: the key's type ("ssh-ed25519"), the name the
    // host has in known_hosts ("host" or "[host]:port", as ssh-keygen -R takes it) and that file.
    QString hostKeyType;
    QString knownHostsName;
    QString knownHostsFile;
    QByteArray standardOutput;
    QByteArray standardError;

    bool succeeded() const { return !failedToStart && !cancelled && !timedOut && signal == 0 && exitCode == 0; }
    // Shell convention: the exit code, or 128 + signal; 127 when it could not start, 124 on timeout.
    int shellCode() const;
    // "exit 3", "signal 15 (SIGTERM)", "failed to start: ...", "cancelled", "timed out: ..."
    QString describe() const;
};

class HostCommand : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    ~HostCommand() override = default;

    virtual bool isRunning() const = 0;

public Q_SLOTS:
    // Stops the command (and whatever it started); done() follows with cancelled set, unless
    // it had already ended. Cancelling twice, or after the end, does nothing.
    virtual void cancel() = 0;

Q_SIGNALS:
    // A batch of output as it arrives (either part may be empty).
    void outputReceived(const QByteArray &standardOutput, const QByteArray &standardError);
    // Emitted once per start, after the last outputReceived.
    void done(const accel::launcher::AccelOutcome &outcome);
};

} // namespace accel::launcher

Q_DECLARE_METATYPE(accel::launcher::AccelOutcome)
