// A run directory as core/rundir's file functions take it: the path cleaned, in the file system's
// encoding.
#pragma once

#include <QDir>
#include <QFile>
#include <QString>

#include <string>

namespace accel::monitor {

inline std::string runDirectoryPath(const QString &runDirectory)
{
    return QFile::encodeName(QDir::cleanPath(runDirectory)).toStdString();
}

} // namespace accel::monitor
