// What the `accel slurm` actions share: the options (--host, the SSH options of `accel hosts`),
// one Host, and running a SLURM script there with its failures turned into messages a person
// can act on (a SLURM tool missing on the host names the tool and what to do).
#pragma once

#include "app/cli/argparser.h"
#include "app/cli/cmd_hosts_common.h"

#include "launcher/slurm.h"

#include <memory>

namespace accel::cli::slurmcli {

// --host, --json and the SSH options.
void addCommonOptions(ArgParser &parser, const std::string &jsonHelp);

// The host and its settings; made after parsing, before the QCoreApplication's event loops run.
struct Remote {
    QString name;
    hosts::RemoteSettings settings;
    std::unique_ptr<launcher::Host> host;
};
Result<Remote> connectRemote(const ArgParser &parser);

// Runs the script on the host and waits for its end. Success: its standard output. Failure: an
// error whose message says what went wrong there (unreachable, host key, tool missing, the tool's
// own error lines).
Result<QByteArray> runScript(Remote &remote, const launcher::slurm::RemoteScript &script, int timeoutMs = 0);

// The jobs the queue script reports for `jobIds` (all of the user's when empty).
Result<launcher::slurm::QueueReport> queryQueue(Remote &remote, const QStringList &jobIds = {});
// The one job `jobId`, if SLURM still knows it.
Result<std::optional<launcher::slurm::SlurmJob>> queryJob(Remote &remote, const QString &jobId);

// Prints "accel slurm ACTION: message" on stderr and returns the exit code for the error.
int reportError(const char *action, const Error &error);
// Parses the arguments; on --help prints it and returns 0, on a bad argument returns 2 (after
// printing); -1 to go on.
int parseOrExit(ArgParser &parser, int argc, char **argv, const char *action);

} // namespace accel::cli::slurmcli
