// The network pre-flight of a cluster, from every node over SSH, shared by `accel hosts doctor`
// and `accel hosts launch` / `accel launch --hosts` (docs/remote.md):
//   accel      accel answers there, in this accel's version (`accel env --no_worker ...`)
//   interface  the interface its ranks bind to: the one with an address on the main address's
//              subnet (given as GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME), or the one the user named
//   listen     machine 0 can listen on the main port (nothing else holds it)
//   reach      every other node opens a TCP connection to the main address and port
//   allreduce  (optional) the runtime's self-test with one rank per node, when accel-worker is on
//              every node: rendezvous, all-reduce, broadcast, gather, one DDP step
#pragma once

#include "core/common/distributeddefaults.h"

#include "app/cli/cmd_hosts_common.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <vector>

namespace accel::cli::hosts {

struct Verdict {
    QString check;   // accel, interface, listen, reach, allreduce
    QString host;    // as the user named it
    QString status;  // ok, warn, fail, skipped
    QString message; // what was found, naming the host, interface, address or port
    QString fix;     // what to do, when not ok
    QJsonObject details;

    QJsonObject toJson() const;
};

struct PreflightOptions {
    QString mainIp;
    int port = kDefaultMainProcessPort;
    int connectTimeoutMs = 5000; // for each node's connection to the main address
    bool allreduce = false;
    int allreduceTimeoutS = 60; // the self-test's rendezvous and collective limit
};

struct Preflight {
    std::vector<Verdict> verdicts;
    std::vector<QString> socketInterface; // per host: chosen for GLOO_/NCCL_SOCKET_IFNAME, or empty
    std::vector<QStringList> environment; // per host: KEY=VALUE for its ranks

    bool ok() const; // no verdict failed
    // The first failed verdict of a host (message; fix), else its first warning, else empty.
    QString summaryFor(const QString &host) const;
};

// Runs every check on every host (hosts[i] is names[i]; the first is machine 0). Checks that need
// an earlier one to pass are "skipped" with the reason. Needs a QCoreApplication.
Preflight runPreflight(const HostGroup &group, const QStringList &names, const RemoteSettings &settings,
                       const PreflightOptions &options);

} // namespace accel::cli::hosts
