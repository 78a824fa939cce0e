// The programs' sources line by line, for the checks that read them (tst_inputguards: no parser
// around the guards; tst_common: no fact spelled again outside its table).
#pragma once

#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QString>

namespace accel::test {

// Calls visit(relativePath, lineNumber, line) for every line of every *.cpp and *.h under app,
// core, launcher and monitor (relativePath from the repository root, line as read, with its end of
// line). Returns the number of files read, -1 when one could not be opened.
template <typename Visit>
int forEachSourceLine(Visit &&visit)
{
    const QDir root(sourceDir());
    int files = 0;
    for (const char *folder : {"app", "core", "launcher", "monitor"}) {
        QDirIterator it(root.filePath(QLatin1String(folder)), {QStringLiteral("*.cpp"), QStringLiteral("*.h")},
                        QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = it.next();
            QFile file(path);
            if (!file.open(QIODevice::ReadOnly))
                return -1;
            ++files;
            const QString relative = root.relativeFilePath(path);
            int line = 0;
            while (!file.atEnd())
                visit(relative, ++line, QString::fromUtf8(file.readLine()));
        }
    }
    return files;
}

} // namespace accel::test
