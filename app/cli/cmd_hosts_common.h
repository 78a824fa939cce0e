// What the `accel hosts` actions share: the SSH options (--timeout, --accept-new-host-key,
// --remote_accel, --remote_env), the host list, and running one accel command on every host at
// the same time.
#pragma once

#include "core/common/distributeddefaults.h"

#include "app/cli/argparser.h"

#include "core/common/result.h"
#include "launcher/sshhost.h"

#include <QJsonObject>
#include <QStringList>

#include <memory>
#include <vector>

namespace accel::cli::hosts {

struct RemoteSettings {
    int timeoutMs = 15000;
    bool acceptNewHostKey = false;
    QString accelProgram;    // empty: $ACCEL_REMOTE_BIN, else accel on the host's PATH
    QStringList environment; // KEY=VALUE for every remote accel command
};

void addRemoteOptions(ArgParser &parser);
Result<RemoteSettings> remoteSettings(const ArgParser &parser);

// --main_process_ip and --main_process_port, as `accel hosts launch` and `doctor` take them.
void addMainAddressOptions(ArgParser &parser);
struct MainAddress {
    QString ip; // --main_process_ip, else the first host's HostName in ~/.ssh/config
    int port = kDefaultMainProcessPort;
};
Result<MainAddress> mainAddress(const ArgParser &parser, const QString &firstHost);

// "a,b" -> a, b (order kept, duplicates dropped). Empty: an InvalidInput error.
Result<QStringList> hostList(const std::vector<std::string> &words);

// One Host per destination, in order (hosts[i] is owned[i]; launcher/hostfactory: "local" is this
// machine, anything else an SSH destination).
struct HostGroup {
    std::vector<std::unique_ptr<launcher::Host>> owned;
    std::vector<launcher::Host *> hosts;
};
HostGroup makeHosts(const QStringList &destinations, const RemoteSettings &settings);

// Runs `accel arguments[i]` on hosts[i], all at once, and returns the outcomes in the same order.
// Needs a QCoreApplication; runs an event loop until every command reported done().
// `environment`, when given, adds KEY=VALUE entries per host to the settings' own; `program`, when
// given, runs instead of accel (`sh` for a script).
std::vector<launcher::AccelOutcome> runEverywhere(const std::vector<launcher::Host *> &hosts,
                                                  const std::vector<QStringList> &arguments,
                                                  const RemoteSettings &settings, int runTimeoutMs,
                                                  const std::vector<QStringList> &environment = {},
                                                  const QString &program = {});

// Runs `accel arguments...` on `destination` (launcher/hostfactory) and passes its standard output,
// standard error and exit code through, for a command about a run supervised on that host. A host
// that cannot be reached, or where accel did not run, is a failure (1) whose message starts with
// `command` ("accel stop") and names the host and why. Makes the QCoreApplication when there is none.
int forwardToHost(const char *command, const QString &destination, const QStringList &arguments);

// A host as `accel hosts check` judges it from its `accel env --json`.
struct HostCheck {
    QString name;
    QString status; // ok, version_mismatch, an AccelOutcome reason, or "failed"
    QString message;
    QString remoteVersion;
    QJsonObject env;
    QJsonObject hostKey; // with host_key_unknown and host_key_changed
};
// What `accel env --json` said, or why it says nothing usable; ok when it is this accel's version.
HostCheck judgeHost(const QString &name, const launcher::AccelOutcome &outcome);

// The interface of an accel.env report (docs/env-json.md) that has an IPv4 address on the same
// subnet as `address` (an IPv4 literal): the one its ranks should bind to for traffic with that
// address. Empty when none has, or `address` is not an IPv4 literal.
QString interfaceOnSubnet(const QJsonObject &env, const QString &address);

} // namespace accel::cli::hosts
