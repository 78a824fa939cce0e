// The trackers' start-up hook (resources/python/accel_tracker_hook.py, compiled into this library)
// and what it reports (docs/trackers.md): accel launch writes it as
// <run>/python/sitecustomize.py before the ranks start, and the launcher appends <run>/python to
// their PYTHONPATH; each Python process of the run then appends one line to <run>/trackers.jsonl
// per tracker file or folder it writes.
#pragma once

#include "core/common/result.h"

#include <QByteArray>
#include <QString>

#include <optional>

namespace accel::trackers {

// The hook's text.
QByteArray trackerHookSource();
// Writes <runDirectory>/python/sitecustomize.py (folder 0700, file 0600, never through a symlink).
Result<void> writeTrackerHook(const QString &runDirectory);

// One line of trackers.jsonl: {"kind":"tensorboard","path":"/abs/events.out.tfevents...","rank":0,"pid":1234}
// kind: "tensorboard" (an event file), "mlflow" (a run folder of the file store), "sqlite" (a
// database the process opened: trackio's, or not a tracker's at all).
struct TrackerReport {
    QString kind;
    QString path;
    int rank = 0;
    qint64 pid = 0;
};
// Decodes a line; nullopt for anything else (an unknown kind, a relative path).
std::optional<TrackerReport> parseTrackerReport(const QByteArray &line);

} // namespace accel::trackers
