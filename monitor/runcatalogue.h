// Run catalogues of other hosts, pure: what `accel runs --json` (schema accel.runs, version 1)
// printed there, read into the same RunInfo rows the local RunsModel shows, and the address that
// names a run on a host ("ssh://DESTINATION/abs/run/dir"). No processes, no SSH: the studio runs
// the command through a launcher Host and hands the output here.
#pragma once

#include "core/common/result.h"
#include "monitor/runsmodel.h"

#include <QByteArray>
#include <QList>
#include <QString>

namespace accel::monitor {

// `accel runs --json`'s "schema" and "version" (app/cli/cmd_runs.cpp writes it).
inline constexpr const char *RunsListingSchema = "accel.runs";
inline constexpr int RunsListingVersion = 1;

// "ssh://gpu1/home/alice/.local/share/accel-studio/runs/20260101-..."; the destination is the one
// the user wrote (alias or [user@]host[:port]; never holds '/'), the path absolute on that host.
QString remoteRunAddress(const QString &destination, const QString &path);
// False for a local run directory (anything not of the form above).
bool parseRemoteRunAddress(const QString &address, QString *destination = nullptr, QString *path = nullptr);

// The runs of `destination` from `accel runs --json`'s standard output. The states are the host's
// own (its accel applied the lost rule there, where the supervisors run). Another schema, a newer
// version or no JSON is an error naming the host and what was printed.
Result<QList<RunInfo>> parseRunsListing(const QString &destination, const QByteArray &output);

} // namespace accel::monitor
