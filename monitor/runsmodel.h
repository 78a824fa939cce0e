// RunsModel: the runs under a runs root (each real subfolder holding a run.json, docs/run-directory.md):
// id, name, state, start, duration and a one-line configuration summary. Refreshes incrementally
// (rows inserted, changed or removed, never reset) on folder changes and on a timer, which also
// keeps the duration of live runs ticking.
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
    QString state; // starting, running, restarting, stopping, succeeded, failed, stopped, lost
    QString host;
    double created = 0;    // Unix seconds
    double ended = 0;      // 0 while live
    QString configSummary; // e.g. "MULTI_CPU, 2 processes, bf16"
    QJsonObject manifest;

    bool isFinal() const;
    double durationSeconds(double now) const;
};

// Reads <runDirectory>/run.json (never through a symlink; core/rundir); false when missing or not
// a JSON object. The state follows core/rundir's lost rule (the same as `accel runs`).
bool readRunInfo(const QString &runDirectory, RunInfo &info);
QString formatDuration(double seconds); // "45s", "3m 07s", "2h 05m"

class RunsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { IdColumn, NameColumn, StateColumn, StartedColumn, DurationColumn, ConfigColumn, ColumnCount };
    enum Role { PathRole = Qt::UserRole + 1, SortRole, StateRole };

    explicit RunsModel(QObject *parent = nullptr);

    void setRunsRoot(const QString &root); // refreshes right away
    QString runsRoot() const { return m_root; }
    void setRefreshInterval(int milliseconds); // default 2000; 0 disables the timer
    void refresh();

    const RunInfo &run(int row) const { return m_runs.at(row); }
    int rowOf(const QString &id) const;

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
