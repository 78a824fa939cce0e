// Host: where an `accel` command runs. LocalHost starts it here as a child process (AccelCommand);
// SshHost (sshhost.h) runs it on another machine over SSH. Both take an argv (never a shell
// string), report output in batches and the end exactly once through HostCommand::done().
#pragma once

#include "launcher/hostcommand.h"

#include <QStringList>

#include <memory>

namespace accel::launcher {

struct HostCommandOptions {
    QString program;         // empty: the host's accel
    QStringList environment; // KEY=VALUE added to the command's environment
    int timeoutMs = 0;       // <= 0: no limit on the run time
    bool keepOutput = true;  // keep output in the outcome, not only in outputReceived batches
};

class Host {
public:
    virtual ~Host() = default;
    // "local", or the destination as the user wrote it ("gpu1", "alice@node7:2222").
    virtual QString name() const = 0;
    // The accel program that start() runs there (a path or a name looked up on the PATH).
    virtual QString accelProgram() const = 0;
    // Starts `accel arguments...` (or options.program) there. done() follows exactly once, also
    // when it cannot start; it is never emitted before the caller has had a chance to connect.
    virtual std::unique_ptr<HostCommand> start(const QStringList &arguments,
                                               const HostCommandOptions &options = {}) = 0;
};

class LocalHost : public Host {
public:
    explicit LocalHost(QString accelProgram = {}); // empty: AccelCommand::defaultProgram()
    QString name() const override { return QStringLiteral("local"); }
    QString accelProgram() const override;
    std::unique_ptr<HostCommand> start(const QStringList &arguments, const HostCommandOptions &options = {}) override;

private:
    QString m_accelProgram;
};

} // namespace accel::launcher
