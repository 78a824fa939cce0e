// RunDirectoryFollower: follows a local run directory (run.json, events.jsonl, metrics/*.jsonl,
// logs/*.log) as it grows. QFileSystemWatcher gives low latency; a polling timer backs it up
// (network file systems, files and folders that appear later, missed notifications).
#pragma once

#include "monitor/runsource.h"

#include <QDateTime>
#include <QFileSystemWatcher>
#include <QHash>
#include <QTimer>

#include <functional>

namespace accel::monitor {

class FileTail;

class RunDirectoryFollower : public RunSource {
    Q_OBJECT
public:
    explicit RunDirectoryFollower(const QString &runDirectory, QObject *parent = nullptr);
    ~RunDirectoryFollower() override;

    void setPollInterval(int milliseconds); // default 500
    void setWatcherEnabled(bool enabled);   // default true; false polls only
    // Only files (relative paths, e.g. "logs/rank0.log") the filter accepts are read; run.json
    // always is. Set before start().
    void setFileFilter(std::function<bool(const QString &)> filter) { m_filter = std::move(filter); }
    // Files (relative paths) that start at a byte offset instead of 0: where an earlier reader of
    // the accel.tail stream stopped (its "offset"), so a resumed stream repeats and loses nothing.
    // Set before start().
    void setStartOffsets(QHash<QString, qint64> offsets) { m_startOffsets = std::move(offsets); }
    QString runDirectory() const { return m_directory; }

    void start() override; // reads what exists, then follows
    void stop() override;
    void pollNow(); // reads everything new right away

private:
    void rescan();
    void pollFile(const QString &relativePath);
    void readManifest();
    void watch(const QString &path, bool directory);

    QString m_directory;
    QFileSystemWatcher m_watcher;
    QTimer m_timer;
    std::map<QString, std::unique_ptr<FileTail>> m_tails;
    QDateTime m_manifestModified;
    qint64 m_manifestSize = -1;
    std::function<bool(const QString &)> m_filter;
    QHash<QString, qint64> m_startOffsets;
    bool m_watcherEnabled = true;
    bool m_running = false;
};

} // namespace accel::monitor
