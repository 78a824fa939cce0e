#include "monitor/rundirectoryfollower.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"

#include "monitor/filetail.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>

namespace accel::monitor {

RunDirectoryFollower::RunDirectoryFollower(const QString &runDirectory, QObject *parent)
    : RunSource(parent), m_directory(QDir::cleanPath(runDirectory))
{
    m_timer.setInterval(500);
    connect(&m_timer, &QTimer::timeout, this, &RunDirectoryFollower::pollNow);
    connect(&m_watcher, &QFileSystemWatcher::fileChanged, this, [this](const QString &path) {
        if (!m_running)
            return;
        const QString relative = QDir(m_directory).relativeFilePath(path);
        if (relative == QLatin1String(rundir::file::Manifest))
            readManifest();
        else
            pollFile(relative);
        // A replaced file drops out of the watcher: watch the new one.
        if (QFileInfo::exists(path))
            watch(path, false);
    });
    connect(&m_watcher, &QFileSystemWatcher::directoryChanged, this, [this](const QString &) {
        if (!m_running)
            return;
        rescan();
        readManifest();
    });
}

RunDirectoryFollower::~RunDirectoryFollower() = default;

void RunDirectoryFollower::setPollInterval(int milliseconds)
{
    m_timer.setInterval(milliseconds);
}

void RunDirectoryFollower::setWatcherEnabled(bool enabled)
{
    m_watcherEnabled = enabled;
}

void RunDirectoryFollower::start()
{
    m_running = true;
    pollNow();
    m_timer.start();
}

void RunDirectoryFollower::stop()
{
    m_running = false;
    m_timer.stop();
    if (!m_watcher.files().isEmpty())
        m_watcher.removePaths(m_watcher.files());
    if (!m_watcher.directories().isEmpty())
        m_watcher.removePaths(m_watcher.directories());
}

void RunDirectoryFollower::pollNow()
{
    readManifest(); // first, so readers know the run (e.g. who detects hangs) before its data
    rescan();
    for (const auto &entry : m_tails)
        pollFile(entry.first);
}

void RunDirectoryFollower::watch(const QString &path, bool directory)
{
    if (!m_watcherEnabled)
        return;
    const QStringList &watched = directory ? m_watcher.directories() : m_watcher.files();
    if (!watched.contains(path))
        m_watcher.addPath(path);
}

void RunDirectoryFollower::rescan()
{
    const QDir root(m_directory);
    if (!root.exists())
        return;
    watch(m_directory, true);
    QStringList found;
    if (QFileInfo::exists(root.filePath(QLatin1String(rundir::file::Events))))
        found.append(QLatin1String(rundir::file::Events));
    const std::pair<const char *, const char *> folders[] = {{rundir::file::Metrics, "*.jsonl"},
                                                             {rundir::file::Logs, "*.log"}};
    for (const auto &[folder, pattern] : folders) {
        const QDir sub(root.filePath(QLatin1String(folder)));
        if (!sub.exists() || QFileInfo(sub.path()).isSymLink())
            continue; // never follow a symlink planted in the run directory
        watch(sub.path(), true);
        for (const QString &name : sub.entryList({QLatin1String(pattern)}, QDir::Files | QDir::NoSymLinks, QDir::Name))
            found.append(QLatin1String(folder) + QLatin1Char('/') + name);
    }
    for (const QString &relative : found) {
        if (m_filter && !m_filter(relative))
            continue;
        if (m_tails.count(relative) == 0) {
            auto tail = std::make_unique<FileTail>(root.filePath(relative));
            if (const auto start = m_startOffsets.constFind(relative); start != m_startOffsets.constEnd())
                tail->resumeAt(*start);
            m_tails.emplace(relative, std::move(tail));
            pollFile(relative);
        }
        watch(root.filePath(relative), false);
    }
    if (QFileInfo::exists(root.filePath(QLatin1String(rundir::file::Manifest))))
        watch(root.filePath(QLatin1String(rundir::file::Manifest)), false);
}

void RunDirectoryFollower::pollFile(const QString &relativePath)
{
    const auto found = m_tails.find(relativePath);
    if (found == m_tails.end()) {
        rescan();
        return;
    }
    FileTail &tail = *found->second;
    for (;;) {
        constexpr qint64 chunkSize = 4 << 20;
        FileTail::Chunk chunk = tail.readNew(chunkSize);
        if (!chunk.restartReason.isEmpty())
            deliverRestart(relativePath, chunk.restartReason);
        if (chunk.bytes.isEmpty())
            break;
        deliverBytes(relativePath, chunk.bytes);
        if (chunk.bytes.size() < chunkSize)
            break;
    }
}

void RunDirectoryFollower::readManifest()
{
    const QFileInfo info(QDir(m_directory).filePath(QLatin1String(rundir::file::Manifest)));
    if (!info.exists())
        return;
    if (info.lastModified() == m_manifestModified && info.size() == m_manifestSize)
        return;
    // Never through a symlink, never a FIFO or a huge file (core/rundir).
    const auto text =
        rundir::readRunFile(QFile::encodeName(m_directory).toStdString(), rundir::file::Manifest, 16u << 20);
    if (!text)
        return;
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(*text));
    if (!document.isObject())
        return; // being rewritten: the next change notification or poll reads it again
    m_manifestModified = info.lastModified();
    m_manifestSize = info.size();
    deliverManifest(document.object());
}

} // namespace accel::monitor
