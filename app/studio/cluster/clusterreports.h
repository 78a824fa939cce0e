// What the studio reads from `accel hosts check|doctor|launch|stop|install --json` (schemas
// accel.hosts-check, accel.doctor, accel.hosts-launch, accel.hosts-stop, accel.hosts-install,
// version 1; docs/remote.md, docs/packaging.md),
// and what to do for each host status. Pure: no widgets, no processes.
#pragma once

#include "core/common/result.h"
#include "core/hardware/hardwarereport.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

namespace accel::app {

// The key an unknown or changed host offers and where accel looked it up.
struct HostKeyInfo {
    QString type;           // "ssh-ed25519"
    QString fingerprint;    // "SHA256:..."
    QString knownHostsName; // "host" or "[host]:port"
    QString knownHostsFile;
    // The command that removes the recorded key, for a key that changed on purpose.
    QString removeCommand() const;
};

struct HostCheck {
    QString host;
    QString status; // ok, version_mismatch, an AccelOutcome reason word, or failed
    QString message;
    QString accelVersion;
    std::optional<hardware::HardwareReport> report; // the host's accel.env, when it answered
    std::optional<HostKeyInfo> hostKey;             // with host_key_unknown and host_key_changed
    bool ok() const { return status == QLatin1String("ok"); }
};

struct HostsCheckReport {
    QString accelVersion; // the accel that checked (this studio's)
    bool ok = false;
    std::vector<HostCheck> hosts;
};

// What the person should do for a host's status, in a sentence ("" for ok).
QString whatToDo(const HostCheck &check, const QString &localVersion);
// Whether the host's card offers to install this version there (`accel hosts install`): it has no
// accel on its PATH, or another version.
bool offersInstall(const HostCheck &check);

// One host of `accel hosts install --json`: installed and checked ("ok"), or why not.
struct HostInstallResult {
    QString host;
    QString status;
    QString message;
    QString prefix;
};
struct HostsInstallReport {
    bool ok = false;
    QStringList packages; // the .deb files it sent
    std::vector<HostInstallResult> hosts;
};

struct DoctorCheck {
    QString check; // accel, interface, listen, reach, allreduce
    QString host;
    QString status; // ok, warn, fail, skipped
    QString message;
    QString fix;
};

struct DoctorReport {
    bool ok = false;
    QString mainIp;
    int mainPort = 0;
    std::vector<DoctorCheck> checks;
};

// One node of a cluster launch or stop.
struct ClusterNode {
    QString host;
    int machineRank = 0;
    bool started = false;
    QString runId;
    QString runDir;
    QString socketInterface;
    QString message;
    bool stopped = false;
    QString state; // what `accel stop` reported, after a stop
};

struct ClusterLaunchReport {
    bool ok = false;
    QString record; // empty when nothing was started
    QString mainIp;
    int mainPort = 0;
    std::vector<ClusterNode> nodes;
};

struct ClusterStopReport {
    bool ok = false;
    std::vector<ClusterNode> nodes;
};

// Each parser takes the command's standard output; another schema, a newer version or no JSON is
// an error naming the command and what it printed.
Result<HostsCheckReport> parseHostsCheck(const QByteArray &output);
Result<DoctorReport> parseDoctor(const QByteArray &output);
Result<ClusterLaunchReport> parseHostsLaunch(const QByteArray &output);
Result<ClusterStopReport> parseHostsStop(const QByteArray &output);
Result<HostsInstallReport> parseHostsInstall(const QByteArray &output);

} // namespace accel::app
