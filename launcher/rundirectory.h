// A run directory: the single source of truth about one run, read by `accel runs/tail/stop`,
// the studio and remote monitors (docs/run-directory.md). The supervisor owns the writes:
// run.json is replaced atomically at every state change, events.jsonl only grows.
#pragma once

#include "core/common/result.h"

#include <QJsonObject>
#include <QString>

namespace accel::launcher {

// States a run goes through; "lost" is set by readers that find the supervisor dead.
namespace runstate {
inline constexpr const char *Starting = "starting";
inline constexpr const char *Running = "running";
inline constexpr const char *Restarting = "restarting";
inline constexpr const char *Stopping = "stopping";
inline constexpr const char *Succeeded = "succeeded";
inline constexpr const char *Failed = "failed";
inline constexpr const char *Stopped = "stopped";
inline constexpr const char *Lost = "lost";
bool isFinal(const QString &state);
} // namespace runstate

class RunDirectory {
public:
    RunDirectory() = default;

    // ${XDG_DATA_HOME:-~/.local/share}/accel-studio/runs
    static QString defaultRunsRoot();
    // "20261122-013045-train-3fa2": UTC time, a readable name, 4 random hex digits.
    static QString makeRunId(const QString &name);
    // Creates the folder with logs/, metrics/, checkpoints/ (it may exist but must not hold a run.json).
    static Result<RunDirectory> create(const QString &path);
    // Opens an existing run: a path, or a run id (or unique id prefix) under the runs root.
    static Result<RunDirectory> open(const QString &pathOrId, const QString &runsRoot = defaultRunsRoot());

    QString path() const { return m_path; }
    QString id() const;
    QString filePath(const QString &relative) const;
    QString logPath(int rank) const;
    QString metricsPath(int rank) const;

    // run.json as last written or read.
    const QJsonObject &manifest() const { return m_manifest; }
    Result<void> writeManifest(const QJsonObject &manifest);
    Result<void> reloadManifest();
    // Sets "state" and appends {state, time, detail} to "states", then writes run.json.
    Result<void> setState(const QString &state, const QString &detail = {});
    // Appends one line {"time":..,"event":..,...} to events.jsonl.
    Result<void> appendEvent(const QString &event, QJsonObject fields = {});

    // The manifest's state, or "lost" when it says running but its supervisor is gone
    // (pid + start time no longer match); `markLost` then records that in run.json.
    QString effectiveState(bool markLost = false);

private:
    explicit RunDirectory(QString path) : m_path(std::move(path)) {}

    QString m_path;
    QJsonObject m_manifest;
};

// Process start time (clock ticks since boot, /proc/<pid>/stat field 22); 0 if not running.
quint64 processStartTime(qint64 pid);
bool processMatches(qint64 pid, quint64 startTime);
double unixTimeNow();

} // namespace accel::launcher
