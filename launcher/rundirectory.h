// A run directory: the single source of truth about one run, read by `accel runs/tail/stop`,
// the studio and remote monitors (docs/run-directory.md). The supervisor owns the writes:
// run.json is replaced atomically at every state change, events.jsonl only grows. The contract
// itself (names, states, the lost rule, private files that never follow symlinks) is core/rundir;
// this class is its Qt face for the launcher and the CLI.
#pragma once

#include "core/common/result.h"
#include "core/rundir/runevents.h"
#include "core/rundir/runlayout.h"

#include <QJsonObject>
#include <QString>

namespace accel::launcher {

// The states of core/rundir, for Qt callers.
namespace runstate {
using namespace accel::rundir::state;
bool isFinal(const QString &state);
} // namespace runstate

class RunDirectory {
public:
    RunDirectory() = default;

    // ${XDG_DATA_HOME:-~/.local/share}/accel-studio/runs
    static QString defaultRunsRoot();
    // "20261122-013045-train-3fa2": UTC time, a readable name, 4 random hex digits.
    static QString makeRunId(const QString &name);
    // Creates the folder 0700 with logs/, metrics/, checkpoints/ (it may exist, as a real folder
    // of the caller's, but must not hold a run.json).
    static Result<RunDirectory> create(const QString &path);
    // Opens an existing run: a path, or a run id (or unique id prefix) under the runs root. A run
    // directory that is a symlink is refused.
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
    Result<void> setState(rundir::RunState state, const QString &detail = {});
    // Appends one line to events.jsonl in the format of core/rundir/runevents.h
    // ({"v":1,"time":..,"event":..,"rank":..,...}; a "rank" in `fields` is the line's rank).
    Result<void> appendEvent(const QString &event, QJsonObject fields = {});
    Result<void> appendEvent(rundir::EventKind kind, QJsonObject fields = {});
    // Writes a file directly in the run directory (cluster.yaml, job.yaml), private and atomically.
    Result<void> writeFile(const QString &name, const QByteArray &content);

    // The user's stop request (rundir::file::StopRequest): recorded by `accel stop` before any signal,
    // {"time": .., "by": ..}; an existing request is kept (its time is the first request's).
    Result<void> requestStop(const QString &by);
    // Whether the stop was requested; false when it cannot be told (the folder is gone).
    bool stopRequested() const;

    // The manifest's supervisor record.
    rundir::SupervisorRecord supervisor() const;
    static QJsonObject supervisorJson(const rundir::SupervisorRecord &record);
    // The manifest's state, or "lost" by the lost rule of core/rundir; `markLost` then records
    // that in run.json and events.jsonl (only in a run directory of the caller's own).
    QString effectiveState(bool markLost = false);

private:
    explicit RunDirectory(QString path) : m_path(std::move(path)) {}

    QString m_path;
    QJsonObject m_manifest;
};

double unixTimeNow();

} // namespace accel::launcher
