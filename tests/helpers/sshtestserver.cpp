#include "tests/helpers/sshtestserver.h"

#include "tests/helpers/testsupport.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <QHash>
#include <QSet>

#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace accel::test {

namespace {

const char *const kSshd = "/usr/sbin/sshd";
const char *const kKeygen = "/usr/bin/ssh-keygen";

} // namespace

int SshTestServer::freeLoopbackPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0)
        port = ntohs(address.sin_port);
    ::close(fd);
    return port;
}

namespace {

// True once something on the address and port sends an SSH banner.
bool answersSsh(const QString &host, int port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    ::inet_pton(AF_INET, host.toLatin1().constData(), &address.sin_addr);
    address.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0) {
        pollfd p{fd, POLLIN, 0};
        char banner[8] = {};
        ok = ::poll(&p, 1, 2000) > 0 && ::read(fd, banner, 4) == 4 && QByteArray(banner, 4) == "SSH-";
        // Say hello back, so that sshd logs no error about a peer that vanished mid-greeting.
        const char hello[] = "SSH-2.0-accel-test-probe\r\n";
        (void)!::write(fd, hello, sizeof(hello) - 1);
    }
    ::close(fd);
    return ok;
}

bool writeFile(const QString &path, const QByteArray &content)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    return file.write(content) == content.size();
}

} // namespace

SshTestServer::SshTestServer() = default;

SshTestServer::~SshTestServer()
{
    stop();
}

QString SshTestServer::unavailableReason()
{
    for (const char *program : {kSshd, kKeygen}) {
        if (!QFileInfo(QString::fromLatin1(program)).isExecutable())
            return QStringLiteral("%1 is not installed (Debian: openssh-server, openssh-client)")
                .arg(QString::fromLatin1(program));
    }
    return {};
}

QString SshTestServer::clientDirectory() const
{
    return m_dir.filePath(QStringLiteral("client"));
}

QString SshTestServer::user() const
{
    const passwd *entry = ::getpwuid(::getuid());
    return entry ? QString::fromLocal8Bit(entry->pw_name) : qEnvironmentVariable("USER");
}

QString SshTestServer::runKeygen(const QStringList &arguments, QString *output)
{
    QProcess keygen;
    keygen.start(QString::fromLatin1(kKeygen), arguments);
    if (!keygen.waitForFinished(30000) || keygen.exitCode() != 0)
        return QStringLiteral("ssh-keygen %1 failed: %2")
            .arg(arguments.join(QLatin1Char(' ')), QString::fromLocal8Bit(keygen.readAllStandardError()));
    if (output)
        *output = QString::fromLocal8Bit(keygen.readAllStandardOutput());
    return {};
}

QString SshTestServer::makeKey(const QString &name)
{
    const QString path = QDir(clientDirectory()).filePath(name);
    QFile::remove(path);
    QFile::remove(path + QStringLiteral(".pub"));
    if (!runKeygen({"-q", "-t", "ed25519", "-N", "", "-C", "accel-test", "-f", path}).isEmpty())
        return {};
    QFile pub(path + QStringLiteral(".pub"));
    return pub.open(QIODevice::ReadOnly) ? QString::fromLatin1(pub.readAll()).trimmed() : QString();
}

QString SshTestServer::knownHostsLine() const
{
    QFile pub(m_dir.filePath(QStringLiteral("server/host_key.pub")));
    if (!pub.open(QIODevice::ReadOnly))
        return {};
    const QStringList parts = QString::fromLatin1(pub.readAll()).split(QLatin1Char(' '));
    const QString name = m_port == 22 ? m_address : QStringLiteral("[%1]:%2").arg(m_address).arg(m_port);
    return name + QLatin1Char(' ') + parts.value(0) + QLatin1Char(' ') + parts.value(1).trimmed();
}

void SshTestServer::addAlias(const QString &alias, const QStringList &extraLines)
{
    QFile config(QDir(clientDirectory()).filePath(QStringLiteral("config")));
    if (!config.open(QIODevice::WriteOnly | QIODevice::Append))
        return;
    QString text = QStringLiteral("Host %1\n  HostName %5\n  Port %2\n  User %3\n  IdentityFile %4\n")
                       .arg(alias)
                       .arg(m_port)
                       .arg(user(), QDir(clientDirectory()).filePath(QStringLiteral("id_ed25519")))
                       .arg(m_address);
    for (const QString &line : extraLines)
        text += QStringLiteral("  ") + line + QLatin1Char('\n');
    config.write(text.toUtf8());
}

QString SshTestServer::writeClientFile(const QString &name, const QByteArray &content)
{
    const QString path = QDir(clientDirectory()).filePath(name);
    return writeFile(path, content) ? path : QString();
}

QString SshTestServer::start()
{
    if (const QString reason = unavailableReason(); !reason.isEmpty())
        return reason;
    if (!m_dir.isValid())
        return QStringLiteral("cannot create a temporary folder");
    const QDir root(m_dir.path());
    root.mkpath(QStringLiteral("server"));
    root.mkpath(QStringLiteral("client"));
    ::chmod(QFile::encodeName(clientDirectory()).constData(), 0700);
    const QString hostKey = root.filePath(QStringLiteral("server/host_key"));
    if (QString error = runKeygen({"-q", "-t", "ed25519", "-N", "", "-C", "accel-test-host", "-f", hostKey});
        !error.isEmpty())
        return error;
    QString listing;
    if (QString error = runKeygen({"-l", "-E", "sha256", "-f", hostKey + QStringLiteral(".pub")}, &listing);
        !error.isEmpty())
        return error;
    m_fingerprint = listing.section(QLatin1Char(' '), 1, 1);
    const QString userKey = makeKey(QStringLiteral("id_ed25519"));
    if (userKey.isEmpty())
        return QStringLiteral("cannot make the client key");
    const QString authorized = root.filePath(QStringLiteral("server/authorized_keys"));
    writeFile(authorized, userKey.toUtf8() + '\n');

    // sshd started as root wants its privilege separation folder (normally made at boot).
    if (::geteuid() == 0 && !QFileInfo::exists(QStringLiteral("/run/sshd")))
        ::mkdir("/run/sshd", 0755);

    for (int attempt = 0; attempt < 5; ++attempt) {
        m_port = m_netns.isEmpty() ? freeLoopbackPort() : 22;
        const QString config = root.filePath(QStringLiteral("server/sshd_config"));
        writeFile(config, QStringLiteral("Port %1\nListenAddress %4\nHostKey %2\nAuthorizedKeysFile %3\n"
                                         "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                                         "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
                                         "PermitRootLogin prohibit-password\nPidFile none\nLogLevel ERROR\n"
                                         "MaxStartups 100\nMaxSessions 100\nSubsystem sftp internal-sftp\n")
                                  .arg(m_port)
                                  .arg(hostKey, authorized, m_address)
                                  .toUtf8() +
                              (m_sessionEnvironment.isEmpty()
                                   ? QByteArray()
                                   : "SetEnv " + m_sessionEnvironment.join(QLatin1Char(' ')).toUtf8() + '\n'));
        m_sshd.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        killWithTest(m_sshd); // it holds the test's standard error
        const QStringList sshd = {QString::fromLatin1(kSshd), "-D", "-e", "-f", config};
        if (m_netns.isEmpty())
            m_sshd.start(sshd.first(), sshd.mid(1));
        else // ip execs sshd in the namespace: the process is sshd itself
            m_sshd.start(QStringLiteral("ip"), QStringList{"netns", "exec", m_netns} + sshd);
        if (!m_sshd.waitForStarted(10000))
            return QStringLiteral("cannot start sshd: ") + m_sshd.errorString();
        QDeadlineTimer deadline(10000);
        while (!deadline.hasExpired() && m_sshd.state() == QProcess::Running && !answersSsh(m_address, m_port))
            m_sshd.waitForFinished(50); // returns early only if sshd exits (port taken meanwhile)
        if (m_sshd.state() == QProcess::Running && answersSsh(m_address, m_port))
            break;
        stop();
        if (attempt == 4 || !m_netns.isEmpty())
            return QStringLiteral("sshd did not start on %1 (see its messages above)").arg(m_address);
    }
    writeFile(QDir(clientDirectory()).filePath(QStringLiteral("known_hosts")), knownHostsLine().toUtf8() + '\n');
    writeFile(QDir(clientDirectory()).filePath(QStringLiteral("config")), QByteArray());
    addAlias(alias());
    return {};
}

void SshTestServer::setNetworkNamespace(const QString &netns, const QString &address)
{
    m_netns = netns;
    m_address = address;
}

int SshTestServer::dropConnections()
{
    const qint64 listener = m_sshd.processId();
    if (listener <= 0)
        return 0;
    // pid -> (parent, command name) of every process, then the sshd processes below the listener.
    QHash<qint64, QPair<qint64, QByteArray>> table;
    for (const QString &entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool ok = false;
        const qint64 pid = entry.toLongLong(&ok);
        QFile stat(QStringLiteral("/proc/%1/stat").arg(entry));
        if (!ok || !stat.open(QIODevice::ReadOnly))
            continue;
        const QByteArray text = stat.readAll();
        const qsizetype open = text.indexOf('('), close = text.lastIndexOf(')');
        if (open < 0 || close < 0)
            continue;
        const QList<QByteArray> fields = text.mid(close + 2).split(' ');
        table.insert(pid, {fields.value(1).toLongLong(), text.mid(open + 1, close - open - 1)});
    }
    QSet<qint64> below = {listener};
    for (bool grew = true; grew;) {
        grew = false;
        for (auto it = table.cbegin(); it != table.cend(); ++it) {
            if (!below.contains(it.key()) && below.contains(it.value().first)) {
                below.insert(it.key());
                grew = true;
            }
        }
    }
    int killed = 0;
    for (qint64 pid : below) {
        if (pid != listener && table.value(pid).second == "sshd" && ::kill(static_cast<pid_t>(pid), SIGKILL) == 0)
            ++killed;
    }
    return killed;
}

void SshTestServer::stop()
{
    if (m_sshd.state() != QProcess::NotRunning) {
        m_sshd.terminate();
        if (!m_sshd.waitForFinished(5000)) {
            m_sshd.kill();
            m_sshd.waitForFinished(5000);
        }
    }
}

} // namespace accel::test
