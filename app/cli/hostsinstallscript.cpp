#include "app/cli/hostsinstallscript.h"

#include "launcher/sshsession.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <libssh/sftp.h>

#include <fcntl.h>
#include <memory>

#ifndef ACCEL_HOSTS_INSTALL_SOURCE_ROOT
#define ACCEL_HOSTS_INSTALL_SOURCE_ROOT ""
#endif

namespace accel::cli::hosts {

QStringList defaultPackageFolders()
{
    QStringList folders;
    if (const QString env = qEnvironmentVariable("ACCEL_PACKAGES_DIR"); !env.isEmpty())
        folders << env;
    folders << QDir::current().filePath(QStringLiteral("dist"));
    if (const QString source = QStringLiteral(ACCEL_HOSTS_INSTALL_SOURCE_ROOT); !source.isEmpty())
        folders << source + QStringLiteral("/dist");
    return folders;
}

Result<PackageSet> findPackages(const QString &folder, const QString &version)
{
    const QDir dir(folder);
    if (!dir.exists())
        return makeError(ErrorCode::InvalidInput,
                         "no such folder (packaging/package.sh writes the packages into dist/)", folder.toStdString());
    PackageSet set;
    set.folder = dir.absolutePath();
    // NAME_VERSION_ARCH.deb as dpkg-deb names them.
    for (const QString &name :
         {QStringLiteral("accel"), QStringLiteral("accel-worker"), QStringLiteral("accel-worker-cuda")}) {
        const QStringList found =
            dir.entryList({QStringLiteral("%1_%2_*.deb").arg(name, version)}, QDir::Files, QDir::Name);
        if (found.isEmpty())
            continue;
        set.files << dir.absoluteFilePath(found.first());
        set.names << name;
        set.bytes += QFileInfo(set.files.last()).size();
    }
    if (!set.names.contains(QStringLiteral("accel"))) {
        const QStringList others = dir.entryList({QStringLiteral("accel*.deb")}, QDir::Files, QDir::Name);
        return makeError(
            ErrorCode::InvalidInput,
            QStringLiteral("no accel_%1_*.deb (this accel is %1; found: %2): run packaging/package.sh "
                           "for this version, or pass --packages DIR")
                .arg(version, others.isEmpty() ? QStringLiteral("none") : others.join(QStringLiteral(", ")))
                .toStdString(),
            set.folder.toStdString());
    }
    return set;
}

Result<void> checkPrefix(const std::string &prefix)
{
    static const QRegularExpression allowed(QStringLiteral("^(~|~/[A-Za-z0-9._+/-]*|/[A-Za-z0-9._+/-]*)$"));
    const QString text = QString::fromStdString(prefix);
    if (!allowed.match(text).hasMatch() || text.contains(QStringLiteral("..")))
        return makeError(ErrorCode::InvalidInput,
                         "expected ~, ~/PATH or /PATH of letters, digits and . _ + - / (no ..), got '" + prefix + "'",
                         "--prefix");
    return {};
}

QString stagingScript()
{
    return QStringLiteral("mktemp -d \"${TMPDIR:-/tmp}/accel-install.XXXXXX\"");
}

QString installScript()
{
    // Prefix mode unpacks the packages' usr/ into PREFIX (bin, lib/accel-studio, share): the programs find
    // each other and their libraries relative to themselves. A marked block at the top of the start-up
    // file that the login shell reads for `ssh host command` (bash: ~/.bashrc, read before Debian's
    // "not interactive: return"; zsh: ~/.zshenv) puts PREFIX/bin on PATH; a second install replaces it.
    return QStringLiteral(R"SH(set -u
staging=$1 prefix=$2 mode=$3
trap 'rm -rf "$staging"' EXIT
[ "$mode" = cleanup ] && exit 0
say() { printf '%s\n' "$*" >&2; }
case $prefix in "~") prefix=$HOME ;; "~/"*) prefix=$HOME/${prefix#"~/"} ;; esac
if ! command -v dpkg-deb >/dev/null 2>&1; then
  say "dpkg-deb not found: accel's packages are Debian packages (built on Debian 12)"; exit 3
fi
arch=$(dpkg --print-architecture)
for deb in "$staging"/*.deb; do
  a=$(dpkg-deb -f "$deb" Architecture)
  [ "$a" = "$arch" ] || [ "$a" = all ] || { say "${deb##*/} is for $a, this host is $arch"; exit 4; }
done
if [ "$mode" = sudo ]; then
  as_root=
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { say "sudo is not installed here: install without --sudo"; exit 6; }
    sudo -n true 2>/dev/null || { say "sudo asks for a password here (sudo -n refused): install without --sudo"; exit 6; }
    as_root="sudo -n"
  fi
  DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q "$staging"/*.deb >&2 || exit 1
  echo "prefix=/usr"; exit 0
fi
mkdir -p "$prefix" || exit 1
rm -rf "$prefix/lib/accel-studio" "$prefix/share/accel-studio"
for deb in "$staging"/*.deb; do
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$prefix" --strip-components=2 --no-same-owner ./usr ||
    { say "cannot unpack ${deb##*/} into $prefix"; exit 1; }
done
echo "prefix=$prefix"
case ":$PATH:" in
*":$prefix/bin:"*) ;;
*)
  begin='# >>> accel hosts install: accel on PATH >>>' end='# <<< accel hosts install <<<'
  line="case \":\$PATH:\" in *\":$prefix/bin:\"*) ;; *) PATH=\"$prefix/bin:\$PATH\"; export PATH ;; esac"
  shell=$(getent passwd "$(id -un)" | cut -d: -f7)
  case ${shell##*/} in
  bash) rc=$HOME/.bashrc ;;
  zsh) rc=$HOME/.zshenv ;;
  *) rc= ; echo "pathnote=the login shell ${shell:-?} reads no start-up file for ssh commands: put $prefix/bin on its PATH" ;;
  esac
  if [ -n "$rc" ]; then
    tmp=$rc.accel-install.$$
    { printf '%s\n%s\n%s\n' "$begin" "$line" "$end"; if [ -f "$rc" ]; then sed "/^$begin\$/,/^$end\$/d" "$rc"; fi; } >"$tmp" &&
      cat "$tmp" >"$rc" && rm -f "$tmp" && echo "path=$rc"
  fi
  ;;
esac
missing=
for deb in "$staging"/*.deb; do
  for name in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/:.*//; s/[[:space:]]//g'); do
    case $name in accel | accel-*) continue ;; esac
    dpkg-query -W -f='${Status}\n' "$name" 2>/dev/null | grep -q "install ok installed" ||
      case " $missing " in *" $name "*) ;; *) missing="$missing $name" ;; esac
  done
done
if [ -n "$missing" ]; then
  echo "missing=${missing# }"
  say "installed into $prefix, but this host lacks Debian packages accel needs:$missing (sudo apt-get install$missing)"
  exit 5
fi
exit 0
)SH");
}

ScriptReport parseScriptReport(const QByteArray &standardOutput)
{
    ScriptReport report;
    for (const QString &line : QString::fromUtf8(standardOutput).split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const QString key = line.section(QLatin1Char('='), 0, 0);
        const QString value = line.section(QLatin1Char('='), 1);
        if (key == QLatin1String("prefix"))
            report.prefix = value;
        else if (key == QLatin1String("path"))
            report.pathFiles << value;
        else if (key == QLatin1String("missing"))
            report.missing = value.split(QLatin1Char(' '), Qt::SkipEmptyParts);
        else if (key == QLatin1String("pathnote"))
            report.pathNote = value;
    }
    return report;
}

QString scriptStatus(int exitCode)
{
    switch (exitCode) {
    case 0:
        return QStringLiteral("installed");
    case 3:
        return QStringLiteral("not_debian");
    case 4:
        return QStringLiteral("architecture");
    case 5:
        return QStringLiteral("missing_libraries");
    case 6:
        return QStringLiteral("sudo_refused");
    default:
        return QStringLiteral("failed");
    }
}

namespace {

struct SftpDeleter {
    void operator()(sftp_session sftp) const { sftp_free(sftp); }
};
struct SftpFileDeleter {
    void operator()(sftp_file file) const { sftp_close(file); }
};

} // namespace

Result<void> uploadFiles(const UploadSettings &settings, const QStringList &files, const QString &remoteFolder,
                         const std::atomic<bool> &cancelled, const std::function<void(qint64)> &progress)
{
    launcher::ssh::SessionSettings session;
    session.destination = settings.destination;
    session.timeoutMs = settings.timeoutMs;
    session.acceptNewHostKey = settings.acceptNewHostKey;
    auto opened = launcher::ssh::openSession(session, cancelled);
    if (!opened)
        return tl::unexpected(opened.error());
    const std::string host = settings.destination;
    std::unique_ptr<sftp_session_struct, SftpDeleter> sftp(sftp_new(opened->get()));
    if (!sftp || sftp_init(sftp.get()) != SSH_OK)
        return makeError(ErrorCode::Failed,
                         std::string("SFTP is not available: ") + ssh_get_error(opened->get()) +
                             " (sshd's Subsystem sftp must be enabled)",
                         host);
    qint64 sent = 0;
    // One write in flight at a time; 64 KiB stays under every SFTP server's packet limit.
    std::vector<char> buffer(64 * 1024);
    for (const QString &path : files) {
        const std::string target = (remoteFolder + QLatin1Char('/') + QFileInfo(path).fileName()).toStdString();
        QFile local(path);
        if (!local.open(QIODevice::ReadOnly))
            return makeError(ErrorCode::Io, "cannot read: " + local.errorString().toStdString(), path.toStdString());
        std::unique_ptr<sftp_file_struct, SftpFileDeleter> remote(
            sftp_open(sftp.get(), target.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
        if (!remote)
            return makeError(ErrorCode::Failed, "cannot create " + target + ": " + ssh_get_error(opened->get()), host);
        for (;;) {
            if (cancelled)
                return makeError(ErrorCode::Cancelled, "cancelled", host);
            const qint64 n = local.read(buffer.data(), static_cast<qint64>(buffer.size()));
            if (n < 0)
                return makeError(ErrorCode::Io, "cannot read: " + local.errorString().toStdString(),
                                 path.toStdString());
            if (n == 0)
                break;
            if (sftp_write(remote.get(), buffer.data(), static_cast<size_t>(n)) != n)
                return makeError(ErrorCode::Io, "writing " + target + " failed: " + ssh_get_error(opened->get()), host);
            sent += n;
            if (progress)
                progress(sent);
        }
    }
    return {};
}

} // namespace accel::cli::hosts
