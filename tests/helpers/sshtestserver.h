// SshTestServer: a real OpenSSH server for tests, started on a free loopback port with its own
// host key, and a client folder (what ~/.ssh is for a user) holding a key it authorises, a config
// with the alias "accel-test" and a known_hosts that trusts the server. Point SshHostOptions::
// sshDirectory (or ACCEL_SSH_DIR for the accel CLI) at clientDirectory(). sshd runs as the current
// user (StrictModes off), so remote commands run as the test itself, on this machine.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

namespace accel::test {

class SshTestServer {
public:
    SshTestServer();
    ~SshTestServer(); // stops sshd

    // A loopback TCP port nobody listens on right now (connecting to it is refused).
    static int freeLoopbackPort();
    // Why the server cannot run here (no sshd or ssh-keygen), or empty. Tests QSKIP with it.
    static QString unavailableReason();

    // Before start(): run sshd inside a network namespace (`ip netns exec`), listening on address
    // port 22 there, instead of 127.0.0.1 and a free port here.
    void setNetworkNamespace(const QString &netns, const QString &address);
    QString address() const { return m_address; }
    // Before start(): KEY=VALUE for every session (sshd's SetEnv, set after sshd's own HOME, PATH,
    // ...), e.g. HOME=<folder> so that what a test installs "in the home folder" stays in its folder.
    void setSessionEnvironment(const QStringList &entries) { m_sessionEnvironment = entries; }

    // Makes the keys and files, starts sshd and waits until it answers. Returns an error or empty.
    QString start();
    void stop();

    QString clientDirectory() const;
    QString alias() const { return QStringLiteral("accel-test"); }
    int port() const { return m_port; }
    QString user() const;
    // "SHA256:..." of the server's host key, as ssh-keygen -l prints it.
    QString hostKeyFingerprint() const { return m_fingerprint; }
    // The known_hosts line that trusts the server.
    QString knownHostsLine() const;

    // Another alias for the same server: "Host <alias>" with HostName, Port, User and
    // IdentityFile set, plus the extra lines (e.g. "UserKnownHostsFile /path").
    void addAlias(const QString &alias, const QStringList &extraLines = {});
    // Writes a file into the client folder and returns its path.
    QString writeClientFile(const QString &name, const QByteArray &content);
    // A new ed25519 key pair in the client folder; returns the public key line.
    QString makeKey(const QString &name);
    // Kills (SIGKILL) the sshd processes serving open connections, as a network failure would end
    // them; the listener stays. Commands they ran are left alone. Returns how many were killed.
    int dropConnections();

private:
    QString runKeygen(const QStringList &arguments, QString *output = nullptr);

    QTemporaryDir m_dir;
    QProcess m_sshd;
    int m_port = 0;
    QString m_fingerprint;
    QString m_netns;
    QStringList m_sessionEnvironment;
    QString m_address = QStringLiteral("127.0.0.1");
};

} // namespace accel::test
