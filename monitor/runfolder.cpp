#include "monitor/runfolder.h"

#include "monitor/runpath.h"
#include "monitor/runsmodel.h"
#include "monitor/tarwriter.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"

#include <QDateTime>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>

#include <sys/stat.h>
#include <unistd.h>

namespace accel::monitor {

namespace {

struct Entry {
    QString relative;
    bool directory = false;
    qint64 size = 0;
};

bool isCheckpoint(const QString &relative)
{
    const QString folder = QLatin1String(rundir::file::Checkpoints);
    return relative == folder || relative.startsWith(folder + QLatin1Char('/'));
}

Result<void> checkRunFolder(const QString &runDirectory)
{
    if (auto real = rundir::checkRealDirectory(runDirectoryPath(runDirectory)); !real)
        return real;
    if (!QFileInfo(QDir(runDirectory).filePath(QLatin1String(rundir::file::Manifest))).isFile())
        return makeError(ErrorCode::NotFound, "not a run directory (no run.json)", runDirectory.toStdString());
    return {};
}

// Every entry below the run directory, folders before what they hold, never through a symlink.
QList<Entry> walk(const QString &runDirectory, RunFolderContents &contents)
{
    QList<Entry> entries;
    const QDir root(QFileInfo(runDirectory).absoluteFilePath());
    QDirIterator it(root.path(), QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        it.next();
        const QFileInfo info = it.fileInfo();
        const QString relative = root.relativeFilePath(info.filePath());
        if (info.isSymLink() || (!info.isDir() && !info.isFile())) {
            contents.skipped.append(relative);
            continue;
        }
        Entry entry{relative, info.isDir(), info.isDir() ? 0 : info.size()};
        if (!entry.directory) {
            ++contents.files;
            contents.bytes += entry.size;
            if (isCheckpoint(relative)) {
                ++contents.checkpointFiles;
                contents.checkpointBytes += entry.size;
            }
        }
        entries.append(entry);
    }
    std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) { return a.relative < b.relative; });
    return entries;
}

} // namespace

Result<RunFolderContents> listRunFolder(const QString &runDirectory)
{
    if (auto ok = checkRunFolder(runDirectory); !ok)
        return tl::unexpected(ok.error());
    RunFolderContents contents;
    walk(runDirectory, contents);
    return contents;
}

QString defaultArchiveName(const QString &runDirectory)
{
    return QFileInfo(QDir::cleanPath(runDirectory)).fileName() + QStringLiteral(".tar.gz");
}

Result<ExportSummary> exportRunArchive(const QString &runDirectory, const QString &archivePath,
                                       const ExportOptions &options)
{
    if (auto ok = checkRunFolder(runDirectory); !ok)
        return tl::unexpected(ok.error());
    const QString top = QFileInfo(QDir::cleanPath(runDirectory)).fileName();
    const QString absolute = QFileInfo(runDirectory).absoluteFilePath();
    const QString archive = QFileInfo(archivePath).absoluteFilePath();
    if (archive.startsWith(absolute + QLatin1Char('/')))
        return makeError(ErrorCode::InvalidInput, "the archive cannot be written inside the run it holds",
                         archive.toStdString());
    RunFolderContents contents;
    const QList<Entry> entries = walk(runDirectory, contents);
    ExportSummary summary;
    summary.archive = archive;
    summary.skipped = contents.skipped;
    TarGzWriter writer(archive);
    if (auto opened = writer.open(); !opened)
        return tl::unexpected(opened.error());
    const qint64 now = QDateTime::currentSecsSinceEpoch();
    if (auto folder = writer.addDirectory(top, now); !folder)
        return tl::unexpected(folder.error());
    const std::string base = runDirectoryPath(absolute);
    for (const Entry &entry : entries) {
        if (!options.checkpoints && isCheckpoint(entry.relative) &&
            entry.relative != QLatin1String(rundir::file::Checkpoints)) {
            if (!entry.directory) {
                ++summary.leftOutFiles;
                summary.leftOutBytes += entry.size;
            }
            continue;
        }
        const QString name = top + QLatin1Char('/') + entry.relative;
        if (entry.directory) {
            if (auto folder = writer.addDirectory(name, now); !folder)
                return tl::unexpected(folder.error());
            continue;
        }
        const auto fd =
            rundir::openRunFile(base, QFile::encodeName(entry.relative).toStdString(), rundir::OpenFor::Read);
        if (!fd) {
            summary.skipped.append(entry.relative); // removed or replaced by a symlink meanwhile
            continue;
        }
        struct stat st {};
        const bool statted = ::fstat(*fd, &st) == 0;
        const qint64 size = statted ? qint64(st.st_size) : 0;
        auto added = writer.addFile(name, *fd, size, statted ? qint64(st.st_mtime) : now);
        ::close(*fd);
        if (!added)
            return tl::unexpected(added.error());
        ++summary.files;
        summary.bytes += size;
    }
    if (auto committed = writer.commit(); !committed)
        return tl::unexpected(committed.error());
    summary.archiveBytes = QFileInfo(archive).size();
    return summary;
}

Result<RunFolderContents> deleteRunFolder(const QString &runDirectory)
{
    const QString path = QDir::cleanPath(QFileInfo(runDirectory).absoluteFilePath());
    if (auto ok = checkRunFolder(path); !ok)
        return tl::unexpected(ok.error());
    if (QFileInfo(path).ownerId() != ::getuid())
        return makeError(ErrorCode::InvalidInput, "the run directory belongs to another user", path.toStdString());
    RunInfo info;
    if (!readRunInfo(path, info))
        return makeError(ErrorCode::InvalidInput, "run.json cannot be read", path.toStdString());
    if (rundir::isLiveState(info.state.toStdString()))
        return makeError(
            ErrorCode::InvalidInput,
            QStringLiteral("the run is %1: stop it first (accel stop %2)").arg(info.state, info.id).toStdString(),
            path.toStdString());
    RunFolderContents contents;
    walk(path, contents);
    if (!QDir(path).removeRecursively())
        return makeError(ErrorCode::Io, "some files could not be removed", path.toStdString());
    return contents;
}

} // namespace accel::monitor
