// A run directory as a whole: what it holds, exported as one self-contained archive (.tar.gz of
// the folder, unpacked by `tar xzf` into a run directory any accel or studio opens), and deleted
// with its files. Never follows a symlink inside the run directory (they are listed as skipped).
#pragma once

#include "core/common/result.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace accel::monitor {

struct RunFolderContents {
    int files = 0;
    qint64 bytes = 0;
    int checkpointFiles = 0; // under checkpoints/ (included in files and bytes)
    qint64 checkpointBytes = 0;
    QStringList skipped; // relative paths that are symlinks or not regular files
};
Result<RunFolderContents> listRunFolder(const QString &runDirectory);

struct ExportOptions {
    bool checkpoints = false; // checkpoints/ can be many gigabytes: left out unless asked for
};
struct ExportSummary {
    QString archive;
    int files = 0;
    qint64 bytes = 0; // of the files, before compression
    qint64 archiveBytes = 0;
    int leftOutFiles = 0; // checkpoints not included
    qint64 leftOutBytes = 0;
    QStringList skipped;
};
// "<run id>.tar.gz": the folder <run id>/ with every file of the run (checkpoints by option).
QString defaultArchiveName(const QString &runDirectory);
// Files of a live run are taken as they are at that moment.
Result<ExportSummary> exportRunArchive(const QString &runDirectory, const QString &archivePath,
                                       const ExportOptions &options = {});

// Deletes the run directory and everything in it. Refused (nothing deleted) unless it is a real
// folder of the caller's that holds a run.json, and while the run is live by core/rundir's lost
// rule ("stop it first"). Returns what was deleted.
Result<RunFolderContents> deleteRunFolder(const QString &runDirectory);

} // namespace accel::monitor
