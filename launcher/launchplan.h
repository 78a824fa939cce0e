// The launch plan as data: per rank the exact command and the environment variables the launcher
// sets (the difference from the inherited environment). `accel launch --dry-run` prints it and
// run.json records it; the summary table is formatted here too.
#pragma once

#include "launcher/launchsettings.h"
#include "launcher/runsupervisor.h"

#include <QJsonObject>
#include <QString>

namespace accel::launcher {

class RunDirectory;

// {"launcher","distributed_type","num_processes",...,"blocks":{...}}: the merged settings.
QJsonObject settingsJson(const LaunchSettings &settings);
// {"schema":"accel.launch-plan","version":1,"settings":..,"notes":[..],"ranks":[{"rank","local_rank","command","env"}]}
QJsonObject launchPlanJson(const LaunchSettings &settings, const EnvMap &base);
QString launchPlanText(const LaunchSettings &settings, const EnvMap &base);
// run.json's `settings` and `plan` once a c10d meeting has given this machine its rank and the
// store's address and port (written before the meeting with machine rank 0): rank numbers and every
// recorded variable take the values this machine's ranks now get; redacted values stay redacted.
QJsonObject manifestAfterRendezvous(QJsonObject manifest, const LaunchSettings &settings, const EnvMap &base);
// How many rank processes the launch starts: "2 processes on this machine" or "4 processes on this
// machine, 8 in total on 2 machines". The one wording (and count) of `accel launch --dry-run`, the
// studio's Configure page and its Launch page.
QString processCountText(const LaunchSettings &settings);

// Table of rank, result, runtime and the last lines of each rank's log.
QString formatRunSummary(const RunOutcome &outcome, const RunDirectory *run, int logLines = 3);
// The last `count` lines of a text file (empty when unreadable).
QStringList lastLines(const QString &path, int count);

} // namespace accel::launcher
