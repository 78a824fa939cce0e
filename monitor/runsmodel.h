// RunsModel: the runs under a runs root (each real subfolder holding a run.json, docs/run-directory.md):
// id, name (the display name of annotations.json when one was given, editable), state, where it
// runs, start, duration, a one-line configuration summary, tags and notes (editable), then one
// column per hyperparameter any run has (monitor/runhyperparameters.h, inserted and removed as runs
// bring or take keys). Refreshes
// incrementally (rows inserted, changed or removed, never reset) on folder changes and on a timer,
// which also keeps the duration of live runs ticking. Runs of other hosts (a run catalogue read
// there, monitor/runcatalogue.h) are rows too, replaced per host by setRemoteRuns().
#pragma once

#include "monitor/runannotations.h"
#include "monitor/runhyperparameters.h"

#include <QAbstractTableModel>
#include <QDateTime>
#include <QFileSystemWatcher>
#include <QJsonObject>
#include <QTimer>

namespace accel::monitor {

struct RunInfo {
    QString id; // folder name
    QString path;
    QString name;
    QString state;         // starting, running, restarting, stopping, succeeded, failed, stopped, lost
    QString host;          // the machine's name in run.json
    QString location;      // empty: this machine; else the SSH destination the run was listed from
    double created = 0;    // Unix seconds
    double ended = 0;      // 0 while live
    QString configSummary; // e.g. "MULTI_CPU, 2 processes, bf16"
    QJsonObject manifest;
    RunAnnotations annotations;      // display name, notes, tags (annotations.json)
    Hyperparameters hyperparameters; // config/, job/, cluster/ keys (empty for runs of other hosts)

    bool isFinal() const;
    // The annotations' display name, else run.json's name, else the id.
    QString displayName() const;
    // What the studio opens it by: the run directory here, remoteRunAddress() on a host.
    QString address() const;
    double durationSeconds(double now) const;
};

// Reads <runDirectory>/run.json (never through a symlink; core/rundir); false when missing or not
// a JSON object. The state follows core/rundir's lost rule (the same as `accel runs`). The
// annotations and hyperparameters are read too (an unreadable one is left empty).
bool readRunInfo(const QString &runDirectory, RunInfo &info);
QString formatDuration(double seconds); // "45s", "3m 07s", "2h 05m"
// "MULTI_CPU, 2 processes, bf16" from run.json's settings (the keys present).
QString summarizeSettings(const QJsonObject &settings);

class RunsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        IdColumn,
        NameColumn,
        StateColumn,
        HostColumn, // "this machine", or the SSH destination
        StartedColumn,
        DurationColumn,
        ConfigColumn,
        TagsColumn,  // "a, b"
        NotesColumn, // the first line
        ColumnCount  // the fixed columns; hyperparameter columns follow
    };
    // PathRole: the run's address (RunInfo::address()); LocationRole: RunInfo::location. SortRole:
    // numbers where a column holds them (times, durations, numeric hyperparameters), else the text.
    // HyperparameterKeyRole (header data): the key of a hyperparameter column.
    enum Role { PathRole = Qt::UserRole + 1, SortRole, StateRole, LocationRole, HyperparameterKeyRole };

    explicit RunsModel(QObject *parent = nullptr);

    void setRunsRoot(const QString &root); // refreshes right away
    QString runsRoot() const { return m_root; }
    void setRefreshInterval(int milliseconds); // default 2000; 0 disables the timer
    void refresh();

    // The runs `destination` listed (parseRunsListing), replacing the ones listed there before.
    void setRemoteRuns(const QString &destination, const QList<RunInfo> &runs);
    QStringList remoteLocations() const;

    const RunInfo &run(int row) const { return m_runs.at(row); }
    int rowOf(const QString &id) const;             // a local run by its folder name
    int rowOfAddress(const QString &address) const; // any run by its address

    // Hyperparameter columns: their keys in column order (from ColumnCount on).
    QStringList hyperparameterKeys() const { return m_hyperparameterKeys; }
    int hyperparameterColumn(const QString &key) const; // -1 when no run has it

    // Name, tags and notes of a run of this machine are written to its annotations.json: an
    // empty name goes back to run.json's, tags are "a, b". Other hosts' runs are not editable here.
    bool setAnnotations(int row, const RunAnnotations &annotations, QString *error = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role = Qt::EditRole) override;

Q_SIGNALS:
    // An edit that could not be saved (a bad tag, a read-only folder), as a sentence naming the run.
    void editFailed(const QString &message);

private:
    void syncHyperparameterColumns();
    void changed(int row);

    QString m_root;
    QList<RunInfo> m_runs;
    QStringList m_hyperparameterKeys;
    QHash<QString, QDateTime> m_manifestTimes;
    QFileSystemWatcher m_watcher;
    QTimer m_timer;
};

} // namespace accel::monitor
