// This build's Debian packages for the tests of what installs them (accel hosts install, the studio's
// offer to install): the real packaging/package.sh, without building, into a folder of the test's.
#pragma once

#include "tests/helpers/testsupport.h"

#include <QDir>

namespace accel::test {

// Writes the packages named in `only` ("accel", "accel,accel-worker") into `folder`; returns why it
// could not, or empty. About 7 s for accel alone (help2man, dpkg-shlibdeps, xz).
inline QString makeAccelPackages(const QString &folder, const QString &only = QStringLiteral("accel"))
{
    const ProcessResult made =
        runProgram(QStringLiteral("bash"),
                   {QDir(sourceDir()).filePath(QStringLiteral("packaging/package.sh")), QStringLiteral("--no-build"),
                    QStringLiteral("--build"), QDir(binDir()).absoluteFilePath(QStringLiteral("..")),
                    QStringLiteral("--only"), only, QStringLiteral("--out"), folder},
                   600000);
    return made.exitCode == 0 ? QString() : QStringLiteral("package.sh failed: ") + made.out + made.err;
}

} // namespace accel::test
