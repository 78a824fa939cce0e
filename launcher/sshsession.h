// The libssh side of SshHost, Qt-free: RAII owners of ssh_session / ssh_channel, and opening a
// session to a host the way `ssh HOST` would: ~/.ssh/config (Host, HostName, User, Port,
// IdentityFile, ProxyJump, Include, ...), the known_hosts check, then public keys through
// ssh-agent and the identity files. Every step has a deadline and watches a cancellation flag.
// A session and its channels are used by one thread at a time (libssh's rule).
#pragma once

#include "core/common/result.h"

#include <libssh/libssh.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace accel::launcher::ssh {

struct SessionDeleter {
    void operator()(ssh_session session) const;
};
struct ChannelDeleter {
    void operator()(ssh_channel channel) const;
};
using SessionHandle = std::unique_ptr<ssh_session_struct, SessionDeleter>;
using ChannelHandle = std::unique_ptr<ssh_channel_struct, ChannelDeleter>;

struct SessionSettings {
    // A ~/.ssh/config alias or [user@]host[:port].
    std::string destination;
    // Folder with config, known_hosts and the default keys; empty: $ACCEL_SSH_DIR, else $HOME/.ssh.
    std::string sshDirectory;
    // For each step: connecting (TCP and handshake), logging in, opening a channel.
    int timeoutMs = 15000;
    // An unknown host key is recorded in known_hosts instead of refused (never a changed one).
    bool acceptNewHostKey = false;
};

// The folder SessionSettings::sshDirectory resolves to.
std::string resolveSshDirectory(const std::string &configured);

// How the host's key compares with known_hosts; the fingerprint is "SHA256:<base64>".
struct HostKeyCheck {
    enum class State { Known, Unknown, Changed, Error };
    State state = State::Error;
    std::string keyType; // "ssh-ed25519"
    std::string fingerprint;
    std::string knownHostsName; // "host" or "[host]:port", as known_hosts and ssh-keygen -R spell it
    std::string knownHostsFile; // the user's known_hosts file it was checked against
    // The command that removes the recorded key (for a key that changed on purpose), quoted for a
    // POSIX shell: ssh-keygen -R NAME [-f FILE].
    std::string removeCommand() const;
};

// Opens, verifies and authenticates a session. Errors name the host and say what to do:
// InvalidInput (bad destination or config), NotFound (the host name does not resolve), Failed
// (refused host key, login refused), Timeout, Cancelled, Io (connection refused or lost).
// `hostKey`, when given, receives the host key check once it ran.
Result<SessionHandle> openSession(const SessionSettings &settings, const std::atomic<bool> &cancelled,
                                  HostKeyCheck *hostKey = nullptr);

// Whether `destination` can name a host at all, without reading ~/.ssh/config or connecting: an
// alias or [user@]host[:port] of letters, digits and . _ - @ : not starting with '-', a port from 1
// to 65535. InvalidInput naming the destination otherwise ("invalid host 'h;cmd': ...").
Result<void> checkDestination(const std::string &destination);

// The address ~/.ssh/config gives a destination (its HostName, else the name itself), without
// connecting. InvalidInput for a destination that is not a plain name.
Result<std::string> configuredHostName(const std::string &destination, const std::string &sshDirectory);

// "gpu1 (10.0.0.7 port 2222 as alice)" for messages.
std::string describeTarget(ssh_session session, const std::string &destination);

// The signal number for an SSH signal name ("TERM" -> 15), 0 if unknown.
int signalNumber(const std::string &name);

// The remote command line: every word single-quoted for a POSIX shell, environment assignments
// through env(1), and exec so that the command (not a shell) receives signals. It first writes
// "<kRemotePidTag> <pid>" as a line on stderr: sshd makes each command a session and process group
// leader, so that pid names the group that stopping the command signals (what it forked too).
std::string remoteCommandLine(const std::vector<std::string> &environment, const std::vector<std::string> &argv);
constexpr const char *kRemotePidTag = "accel-remote-pid";

// Takes the pid line out of the first stderr bytes. Feed stderr batches until it returns true
// (found, or given up after a few KiB); `passOn` receives the stderr to show, in order.
class RemotePidReader {
public:
    bool feed(const std::string &batch, std::string &passOn);
    // At the end: whatever is still held back.
    void flush(std::string &passOn);
    bool done() const { return m_done; }
    long pid() const { return m_pid; }

private:
    std::string m_head;
    bool m_done = false;
    long m_pid = 0;
};

} // namespace accel::launcher::ssh
