// The parts of `accel hosts install` that need no event loop: the packages it ships, the POSIX shell
// script that installs them on a host, what that script reports, and the SFTP upload (libssh, one
// blocking session per host, run on a thread of its own).
#pragma once

#include "core/common/result.h"

#include <QString>
#include <QStringList>

#include <atomic>
#include <functional>
#include <string>

namespace accel::cli::hosts {

// The packages of one version in a folder that package.sh wrote: accel (required), the worker and its
// CUDA package. The studio is left out: hosts run ranks, not the desktop application.
struct PackageSet {
    QString folder;
    QStringList files; // absolute paths, accel first
    QStringList names; // "accel", "accel-worker", "accel-worker-cuda"
    qint64 bytes = 0;
};
// `version` is this accel's; InvalidInput naming the folder when it has no accel_<version>_*.deb.
Result<PackageSet> findPackages(const QString &folder, const QString &version);
// Where packages are looked for without --packages: $ACCEL_PACKAGES_DIR, ./dist, the source tree's dist.
QStringList defaultPackageFolders();

// --prefix: "~", "~/..." or an absolute path of letters, digits and . _ + - / (it is written into
// shell start-up files). InvalidInput naming --prefix otherwise.
Result<void> checkPrefix(const std::string &prefix);

// `sh -c SCRIPT accel-hosts-install STAGING PREFIX MODE` (MODE "prefix" or "sudo"): installs the
// .deb files in STAGING, then removes STAGING (MODE "cleanup": only that). Exit 0 installed, 3 not a Debian host, 4
// another architecture, 5 Debian libraries missing (files installed), 6 sudo refused, else failed. Prints key=value
// lines on stdout (see ScriptReport).
QString installScript();
// `sh -c SCRIPT`: makes the staging folder and prints its path.
QString stagingScript();

struct ScriptReport {
    QString prefix;        // where the files went ("/usr" with sudo)
    QStringList pathFiles; // start-up files that now put PREFIX/bin on PATH
    QStringList missing;   // Debian packages the host lacks
    QString pathNote;      // set when no start-up file could be changed for this shell
};
ScriptReport parseScriptReport(const QByteArray &standardOutput);
// The status word for a script exit code: installed, not_debian, architecture, missing_libraries,
// sudo_refused, failed.
QString scriptStatus(int exitCode);

// Uploads `files` into `remoteFolder` (which exists) on `destination` over SFTP. `progress` gets the
// bytes sent so far. Errors name the host and the file.
struct UploadSettings {
    std::string destination;
    int timeoutMs = 15000;
    bool acceptNewHostKey = false;
};
Result<void> uploadFiles(const UploadSettings &settings, const QStringList &files, const QString &remoteFolder,
                         const std::atomic<bool> &cancelled, const std::function<void(qint64)> &progress = {});

} // namespace accel::cli::hosts
