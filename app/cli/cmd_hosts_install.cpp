// accel hosts install H1,H2,...: this version's Debian packages (packaging/package.sh's dist/) copied to
// every host over SFTP and installed there, without root under --prefix (default ~/.local, its bin put on
// the PATH of non-interactive ssh sessions) or with --sudo through apt-get; then every host is checked
// as `accel hosts check` does, through the accel its PATH finds (docs/packaging.md).
#include "app/cli/cmd_hosts_common.h"
#include "app/cli/command.h"
#include "app/cli/hostsinstallscript.h"

#include "launcher/jsonoutput.h"
#include "launcher/sshsession.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

namespace accel::cli {

using namespace accel::launcher;

namespace {

struct HostInstall {
    QString name;
    QString status; // installed -> the check's status; or why it stopped (see scriptStatus, AccelOutcome reasons)
    QString message;
    QString staging;
    hosts::ScriptReport report;
    hosts::HostCheck check;
    bool checked = false;
};

Result<hosts::PackageSet> choosePackages(const ArgParser &parser)
{
    const QString version = QString::fromLatin1(ACCEL_VERSION);
    if (parser.isSet("packages"))
        return hosts::findPackages(QString::fromStdString(*parser.value("packages")), version);
    QStringList tried;
    for (const QString &folder : hosts::defaultPackageFolders()) {
        auto found = hosts::findPackages(folder, version);
        if (found)
            return found;
        tried << folder;
    }
    return makeError(ErrorCode::InvalidInput,
                     QStringLiteral("no accel_%1_*.deb in %2: run packaging/package.sh, or pass --packages DIR")
                         .arg(version, tried.join(QStringLiteral(", ")))
                         .toStdString(),
                     "--packages");
}

QString failureStatus(const AccelOutcome &outcome)
{
    return outcome.reason.isEmpty() ? QStringLiteral("failed") : outcome.reason;
}

QString failureMessage(const AccelOutcome &outcome)
{
    const QString err = QString::fromUtf8(outcome.standardError).trimmed();
    return err.isEmpty() ? outcome.describe() : outcome.describe() + QStringLiteral(": ") + err.section('\n', -3);
}

QString megabytes(qint64 bytes)
{
    return QString::number(static_cast<double>(bytes) / 1e6, 'f', 1) + QStringLiteral(" MB");
}

void printHuman(const std::vector<HostInstall> &results, const hosts::PackageSet &packages)
{
    for (const HostInstall &host : results) {
        const QString what = packages.names.join(QStringLiteral(", ")) + QLatin1Char(' ') + ACCEL_VERSION;
        if (!host.checked) {
            std::printf("%s: %s: %s\n", qPrintable(host.name), qPrintable(host.status), qPrintable(host.message));
            continue;
        }
        QString path = host.report.pathFiles.isEmpty()
                           ? QStringLiteral("already on PATH")
                           : QStringLiteral("PATH set in ") + host.report.pathFiles.join(QStringLiteral(", "));
        if (!host.report.pathNote.isEmpty())
            path = host.report.pathNote;
        std::printf("%s: installed %s into %s (%s); check: %s%s\n", qPrintable(host.name), qPrintable(what),
                    qPrintable(host.report.prefix), qPrintable(path), qPrintable(host.check.status),
                    host.check.message.isEmpty() ? "" : qPrintable(QStringLiteral(": ") + host.check.message));
    }
}

QJsonObject toJson(const HostInstall &host)
{
    QJsonObject object{{QStringLiteral("host"), host.name},
                       {QStringLiteral("status"), host.status},
                       {QStringLiteral("message"), host.message},
                       {QStringLiteral("prefix"), host.report.prefix},
                       {QStringLiteral("path_files"), QJsonArray::fromStringList(host.report.pathFiles)},
                       {QStringLiteral("path_note"), host.report.pathNote},
                       {QStringLiteral("missing_packages"), QJsonArray::fromStringList(host.report.missing)}};
    object.insert(QStringLiteral("check"),
                  host.checked ? QJsonValue(QJsonObject{{QStringLiteral("status"), host.check.status},
                                                        {QStringLiteral("message"), host.check.message},
                                                        {QStringLiteral("accel_version"), host.check.remoteVersion}})
                               : QJsonValue());
    return object;
}

} // namespace

int runHostsInstall(int argc, char **argv)
{
    ArgParser parser("accel hosts install",
                     "Copy this accel's Debian packages (accel, accel-worker, accel-worker-cuda) to hosts over SSH "
                     "(SFTP) and install "
                     "them: under --prefix without root, or system-wide with --sudo. Then check every host as "
                     "`accel hosts check` does, with the accel its PATH finds.");
    parser.addPositional({"HOSTS", "hosts, comma-separated: ~/.ssh/config aliases or [user@]host[:port]"});
    parser.addValue(
        "packages", "DIR",
        "folder with accel_VERSION_ARCH.deb (and accel-worker_..., accel-worker-cuda_...) of this version, as "
        "packaging/package.sh writes them (default: $ACCEL_PACKAGES_DIR, ./dist, the source tree's "
        "dist)");
    parser.addValue("prefix", "DIR",
                    "install under DIR without root (~, ~/PATH or /PATH); DIR/bin goes on the PATH of ssh commands "
                    "(bash: ~/.bashrc, zsh: ~/.zshenv)",
                    "~/.local");
    parser.addFlag("sudo", "install with `sudo apt-get install` into /usr instead (Debian's libraries come along; "
                           "needs sudo without a password there)");
    parser.addFlag("no_worker",
                   "leave accel-worker and accel-worker-cuda (libtorch, CUDA: several GB) out: hosts that only "
                   "run Python scripts");
    parser.addFlag("json",
                   "machine-readable output (" + schemaAndVersion(HostsInstallSchema, HostsInstallVersion) + ")");
    hosts::addRemoteOptions(parser);
    parser.setEpilog("The hosts need Debian 12 (dpkg-deb). Without --sudo the Debian libraries accel needs must be "
                     "there already; a host that lacks some is named with them (status missing_libraries). Exit "
                     "status: 0 when every host is installed and checks ok, 1 when one is not, 2 for bad arguments.");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel hosts install: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const auto badInput = [](const Error &error) {
        std::fprintf(stderr, "accel hosts install: %s\n", error.toString().c_str());
        return ExitBadInput;
    };
    auto names = hosts::hostList({parser.firstPositional("HOSTS").value_or("")});
    if (!names)
        return badInput(names.error());
    for (const QString &name : *names) {
        if (auto checked = ssh::checkDestination(name.toStdString()); !checked)
            return badInput(checked.error());
    }
    auto settings = hosts::remoteSettings(parser);
    if (!settings)
        return badInput(settings.error());
    if (!settings->accelProgram.isEmpty())
        return badInput(Error{ErrorCode::InvalidInput,
                              "does not apply: the install is checked with the accel that the hosts' PATH finds",
                              "--remote_accel"});
    const bool sudo = parser.isSet("sudo");
    if (sudo && parser.isSet("prefix"))
        return badInput(
            Error{ErrorCode::InvalidInput, "does not apply with --sudo (apt installs into /usr)", "--prefix"});
    const std::string prefix = parser.valueOr("prefix", "~/.local");
    if (auto checked = hosts::checkPrefix(prefix); !checked)
        return badInput(checked.error());
    auto packages = choosePackages(parser);
    if (!packages)
        return badInput(packages.error());
    for (const char *worker : {"accel-worker", "accel-worker-cuda"}) {
        const int at = static_cast<int>(packages->names.indexOf(QLatin1String(worker)));
        if (parser.isSet("no_worker") && at >= 0) {
            packages->bytes -= QFileInfo(packages->files.at(at)).size();
            packages->names.removeAt(at);
            packages->files.removeAt(at);
        }
    }
    const bool json = parser.isSet("json");

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    settings->accelProgram = QStringLiteral("accel"); // the check: what PATH finds there
    const hosts::HostGroup group = hosts::makeHosts(*names, *settings);
    const int scriptTimeoutMs = settings->timeoutMs * 4;
    std::vector<HostInstall> results(group.hosts.size());
    for (size_t i = 0; i < results.size(); ++i)
        results[i].name = names->at(static_cast<int>(i));

    // 1. A staging folder on every host (also where an unreachable or untrusted host is found).
    const auto staged = hosts::runEverywhere(
        group.hosts, std::vector<QStringList>(group.hosts.size(), {QStringLiteral("-c"), hosts::stagingScript()}),
        *settings, scriptTimeoutMs, {}, QStringLiteral("sh"));
    for (size_t i = 0; i < results.size(); ++i) {
        // The last line: start-up files may print before it.
        const QString folder = QString::fromUtf8(staged[i].standardOutput).trimmed().section(QLatin1Char('\n'), -1);
        if (staged[i].succeeded() && folder.startsWith(QLatin1Char('/'))) {
            results[i].staging = folder;
        } else if (staged[i].succeeded()) {
            results[i].status = QStringLiteral("failed");
            results[i].message = QStringLiteral("mktemp -d printed no folder: '%1'").arg(folder);
        } else {
            results[i].status = failureStatus(staged[i]);
            results[i].message = failureMessage(staged[i]);
        }
    }

    // 2. The packages over SFTP, every host at once (libssh blocks: a thread per host).
    if (!json)
        std::fprintf(stderr, "accel hosts install: sending %s (%s) to %lld host(s)\n",
                     qPrintable(packages->names.join(QStringLiteral(", "))), qPrintable(megabytes(packages->bytes)),
                     static_cast<long long>(std::count_if(results.begin(), results.end(),
                                                          [](const HostInstall &h) { return !h.staging.isEmpty(); })));
    std::atomic<bool> cancelled{false};
    std::vector<std::thread> uploads;
    std::vector<Result<void>> uploaded(results.size());
    QElapsedTimer clock;
    clock.start();
    for (size_t i = 0; i < results.size(); ++i) {
        if (results[i].staging.isEmpty())
            continue;
        hosts::UploadSettings upload{results[i].name.toStdString(), settings->timeoutMs, settings->acceptNewHostKey};
        uploads.emplace_back([&, i, upload] {
            uploaded[i] = hosts::uploadFiles(upload, packages->files, results[i].staging, cancelled);
        });
    }
    for (std::thread &thread : uploads)
        thread.join();
    if (!json && !uploads.empty())
        std::fprintf(stderr, "accel hosts install: sent in %.1f s\n", static_cast<double>(clock.elapsed()) / 1000.0);

    // 3. The install script (which removes the staging folder; after a failed upload it only does that).
    std::vector<Host *> stagedHosts;
    std::vector<size_t> stagedIndex;
    std::vector<QStringList> scripts;
    for (size_t i = 0; i < results.size(); ++i) {
        if (results[i].staging.isEmpty())
            continue;
        const bool ready = static_cast<bool>(uploaded[i]);
        if (!ready) {
            results[i].status = QStringLiteral("upload_failed");
            results[i].message = QString::fromStdString(uploaded[i].error().toString());
        }
        stagedHosts.push_back(group.hosts[i]);
        stagedIndex.push_back(i);
        scripts.push_back({QStringLiteral("-c"), hosts::installScript(), QStringLiteral("accel-hosts-install"),
                           results[i].staging, QString::fromStdString(prefix),
                           !ready ? QStringLiteral("cleanup")
                           : sudo ? QStringLiteral("sudo")
                                  : QStringLiteral("prefix")});
    }
    // Unpacking libtorch takes a while on a slow disk: up to half an hour.
    const auto installed =
        hosts::runEverywhere(stagedHosts, scripts, *settings, 30 * 60 * 1000, {}, QStringLiteral("sh"));
    std::vector<Host *> toCheck;
    std::vector<size_t> checkIndex;
    for (size_t k = 0; k < stagedIndex.size(); ++k) {
        const size_t i = stagedIndex[k];
        if (!results[i].status.isEmpty())
            continue;
        const AccelOutcome &outcome = installed[k];
        results[i].report = hosts::parseScriptReport(outcome.standardOutput);
        if (!outcome.succeeded()) {
            results[i].status = outcome.failedToStart || outcome.timedOut || !outcome.reason.isEmpty()
                                    ? failureStatus(outcome)
                                    : hosts::scriptStatus(outcome.exitCode);
            results[i].message = failureMessage(outcome);
            continue;
        }
        toCheck.push_back(group.hosts[i]);
        checkIndex.push_back(i);
    }

    // 4. The check, through a new shell there (which reads the start-up file just written).
    const auto envs =
        hosts::runEverywhere(toCheck,
                             std::vector<QStringList>(toCheck.size(), {QStringLiteral("env"), QStringLiteral("--json"),
                                                                       QStringLiteral("--no_python")}),
                             *settings, scriptTimeoutMs);
    for (size_t k = 0; k < toCheck.size(); ++k) {
        HostInstall &host = results[checkIndex[k]];
        host.check = hosts::judgeHost(host.name, envs[k]);
        host.checked = true;
        host.status = host.check.status;
        if (host.check.status == QLatin1String("accel_not_found"))
            host.check.message =
                QStringLiteral("installed into %1, but ssh commands there do not find accel on "
                               "their PATH%2")
                    .arg(host.report.prefix,
                         host.report.pathNote.isEmpty() ? QString() : QStringLiteral(": ") + host.report.pathNote);
        host.message = host.check.message;
    }

    const bool allOk = std::all_of(results.begin(), results.end(),
                                   [](const HostInstall &h) { return h.status == QLatin1String("ok"); });
    if (json) {
        QJsonArray list;
        for (const HostInstall &host : results)
            list.append(toJson(host));
        QJsonArray files;
        for (const QString &file : packages->files)
            files.append(QFileInfo(file).fileName());
        const QJsonObject body{{QStringLiteral("accel_version"), QString::fromLatin1(ACCEL_VERSION)},
                               {QStringLiteral("packages"), files},
                               {QStringLiteral("mode"), sudo ? QStringLiteral("sudo") : QStringLiteral("prefix")},
                               {QStringLiteral("ok"), allOk},
                               {QStringLiteral("hosts"), list}};
        std::fputs(schemaJson(QLatin1String(HostsInstallSchema), HostsInstallVersion, body).constData(), stdout);
    } else {
        printHuman(results, *packages);
    }
    return allOk ? ExitOk : ExitFailure;
}

} // namespace accel::cli
