// RunsModel: the runs under a runs root (each real subfolder holding a run.json, docs/run-directory.md):
// id, name, state, where it runs, start, duration and a one-line configuration summary. Refreshes
// incrementally (rows inserted, changed or removed, never reset) on folder changes and on a timer,
// which also keeps the duration of live runs ticking. Runs of other hosts (a run catalogue read
// there, monitor/runcatalogue.h) are rows too, replaced per host by setRemoteRuns().
#pragma once

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

    bool isFinal() const;
    // What the studio opens it by: the run directory here, remoteRunAddress() on a host.
    QString address() const;
    double durationSeconds(double now) const;
};

// Reads <runDirectory>/run.json (never through a symlink; core/rundir); false when missing or not
// a JSON object. The state follows core/rundir's lost rule (the same as `accel runs`).
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
        ColumnCount
    };
    // PathRole: the run's address (RunInfo::address()); LocationRole: RunInfo::location.
    enum Role { PathRole = Qt::UserRole + 1, SortRole, StateRole, LocationRole };

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

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QString m_root;
    QList<RunInfo> m_runs;
    QHash<QString, QDateTime> m_manifestTimes;
    QFileSystemWatcher m_watcher;
    QTimer m_timer;
};

} // namespace accel::monitor
