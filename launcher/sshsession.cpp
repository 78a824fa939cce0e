#include "launcher/sshsession.h"

#include "launcher/export/shellquote.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <poll.h>

namespace accel::launcher::ssh {

namespace {

using Clock = std::chrono::steady_clock;

std::string lastError(ssh_session session)
{
    const char *text = ssh_get_error(session);
    return text && *text ? text : "unknown libssh error";
}

// Waits a little for the session's socket (or, before it exists, just a little).
void waitForSocket(ssh_session session, int milliseconds)
{
    pollfd fd{};
    fd.fd = ssh_get_fd(session);
    if (fd.fd < 0) {
        ::poll(nullptr, 0, milliseconds);
        return;
    }
    fd.events = POLLIN;
    if (ssh_get_poll_flags(session) & SSH_WRITE_PENDING)
        fd.events |= POLLOUT;
    ::poll(&fd, 1, milliseconds);
}

// Repeats a non-blocking libssh call while it answers `again`, until the deadline or cancellation.
template <typename Call>
Result<int> repeat(ssh_session session, int again, Clock::time_point deadline, const std::atomic<bool> &cancelled,
                   const std::string &step, const std::string &target, Call call)
{
    for (;;) {
        const int rc = call();
        if (rc != again)
            return rc;
        if (cancelled.load())
            return makeError(ErrorCode::Cancelled, step + " cancelled", target);
        if (Clock::now() >= deadline)
            return makeError(ErrorCode::Timeout, step + " timed out", target);
        waitForSocket(session, 50);
    }
}

std::string optionString(ssh_session session, ssh_options_e option)
{
    char *value = nullptr;
    if (ssh_options_get(session, option, &value) != SSH_OK || !value)
        return {};
    std::string out = value;
    ssh_string_free_char(value);
    return out;
}

// libssh 0.10 runs `ProxyJump J` as the ProxyCommand `ssh [-l user] [-p port] [-J more] -W
// '[%h]:%p' J` (OpenSSH), which reads OpenSSH's own defaults (~/.ssh) and may stop to ask for a
// password or a host key with nobody to answer. The jump gets this SSH folder's config,
// known_hosts and default keys (when the folder is not ~/.ssh), and is never allowed to ask.
std::string jumpProxyCommand(const std::string &generated, const std::string &sshDirectory)
{
    if (generated.rfind("ssh ", 0) != 0 || generated.find(" -W '[%h]:%p' ") == std::string::npos)
        return generated; // not a ProxyJump: a ProxyCommand the user wrote runs as written
    std::vector<std::string> words = {"ssh", "-o", "BatchMode=yes"};
    const char *home = std::getenv("HOME");
    std::error_code error;
    if (!home || sshDirectory != std::string(home) + "/.ssh") {
        if (std::filesystem::is_regular_file(sshDirectory + "/config", error))
            words.insert(words.end(), {"-F", sshDirectory + "/config"});
        words.insert(words.end(), {"-o", "UserKnownHostsFile=" + sshDirectory + "/known_hosts"});
        for (const char *key : {"id_ed25519", "id_ecdsa", "id_rsa"}) {
            if (std::filesystem::is_regular_file(sshDirectory + "/" + key, error))
                words.insert(words.end(), {"-o", "IdentityFile=" + sshDirectory + "/" + key});
        }
    }
    return exporting::shellJoin(words) + generated.substr(3);
}

unsigned int optionPort(ssh_session session)
{
    unsigned int port = 22;
    ssh_options_get_port(session, &port);
    return port;
}

HostKeyCheck checkHostKey(ssh_session session)
{
    HostKeyCheck check;
    const std::string host = optionString(session, SSH_OPTIONS_HOST);
    const unsigned int port = optionPort(session);
    check.knownHostsName = port == 22 ? host : "[" + host + "]:" + std::to_string(port);
    ssh_key key = nullptr;
    if (ssh_get_server_publickey(session, &key) != SSH_OK)
        return check;
    check.keyType = ssh_key_type_to_char(ssh_key_type(key));
    unsigned char *hash = nullptr;
    size_t length = 0;
    if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &length) == SSH_OK) {
        char *text = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, length);
        if (text) {
            check.fingerprint = text;
            ssh_string_free_char(text);
        }
        ssh_clean_pubkey_hash(&hash);
    }
    ssh_key_free(key);
    switch (ssh_session_is_known_server(session)) {
    case SSH_KNOWN_HOSTS_OK:
        check.state = HostKeyCheck::State::Known;
        break;
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
        check.state = HostKeyCheck::State::Unknown;
        break;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
        check.state = HostKeyCheck::State::Changed;
        break;
    case SSH_KNOWN_HOSTS_ERROR:
        check.state = HostKeyCheck::State::Error;
        break;
    }
    return check;
}

Result<void> verifyHostKey(ssh_session session, const SessionSettings &settings, const std::string &target,
                           const std::string &sshDirectory, HostKeyCheck &check)
{
    check = checkHostKey(session);
    std::string knownHosts = optionString(session, SSH_OPTIONS_KNOWNHOSTS);
    if (knownHosts.empty())
        knownHosts = sshDirectory + "/known_hosts";
    check.knownHostsFile = knownHosts;
    const std::string key = check.keyType + " key " + check.fingerprint;
    switch (check.state) {
    case HostKeyCheck::State::Known:
        return {};
    case HostKeyCheck::State::Unknown:
        if (!settings.acceptNewHostKey)
            return makeError(ErrorCode::Failed,
                             "unknown host key: " + check.knownHostsName + " is not in " + knownHosts + "; it offers " +
                                 key +
                                 ". Compare that fingerprint with the host's own (ssh-keygen -lf "
                                 "/etc/ssh/ssh_host_*_key.pub there), then accept it "
                                 "(accel: --accept-new-host-key) to record it",
                             target);
        if (ssh_session_update_known_hosts(session) != SSH_OK)
            return makeError(ErrorCode::Io, "could not record the host key in known_hosts: " + lastError(session),
                             target);
        check.state = HostKeyCheck::State::Known;
        return {};
    case HostKeyCheck::State::Changed:
        return makeError(ErrorCode::Failed,
                         "WARNING: HOST KEY CHANGED: known_hosts holds another key for " + check.knownHostsName +
                             " than the " + key +
                             " it offers now. Someone may be intercepting the connection, or the host was "
                             "reinstalled. Refusing to connect. If the change is expected, remove the old key "
                             "(" +
                             check.removeCommand() + ") and connect again to accept the new one",
                         target);
    case HostKeyCheck::State::Error:
        break;
    }
    return makeError(ErrorCode::Failed, "could not check the host key: " + lastError(session), target);
}

// [user@]host[:port] or an alias; a port only when the rest has no other colon (IPv6).
Result<void> applyDestination(ssh_session session, const std::string &destination)
{
    if (auto checked = checkDestination(destination); !checked)
        return checked;
    std::string host = destination;
    std::string port;
    const size_t colon = host.rfind(':');
    if (colon != std::string::npos && host.find(':') == colon) {
        port = host.substr(colon + 1);
        host.resize(colon);
    }
    if (ssh_options_set(session, SSH_OPTIONS_HOST, host.c_str()) != SSH_OK)
        return makeError(ErrorCode::InvalidInput, "invalid host '" + destination + "': " + lastError(session));
    if (!port.empty())
        ssh_options_set(session, SSH_OPTIONS_PORT_STR, port.c_str());
    return {};
}

} // namespace

Result<void> checkDestination(const std::string &destination)
{
    // Letters, digits and . _ - @ : only: the name may reach a ProxyCommand's shell through %h.
    const bool plain = destination.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                     "._-@:") == std::string::npos;
    if (destination.empty() || destination.front() == '-' || !plain)
        return makeError(ErrorCode::InvalidInput,
                         "invalid host '" + destination +
                             "': expected a ~/.ssh/config alias or [user@]host[:port] (letters, digits, . _ - @ :)");
    const size_t colon = destination.rfind(':');
    if (colon != std::string::npos && destination.find(':') == colon) {
        const std::string port = destination.substr(colon + 1);
        // Digits only and at most five of them before converting: 99999999999999999999999 made
        // std::stoul throw (an abort).
        const bool digits =
            !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
        const long number = digits ? std::strtol(port.c_str(), nullptr, 10) : 0;
        if (number < 1 || number > 65535)
            return makeError(ErrorCode::InvalidInput,
                             "invalid port '" + port + "' in host '" + destination + "': expected 1-65535");
    }
    return {};
}

std::string HostKeyCheck::removeCommand() const
{
    std::vector<std::string> words = {"ssh-keygen", "-R", knownHostsName};
    if (!knownHostsFile.empty()) {
        words.push_back("-f");
        words.push_back(knownHostsFile);
    }
    return exporting::shellJoin(words);
}

void SessionDeleter::operator()(ssh_session session) const
{
    if (ssh_is_connected(session))
        ssh_disconnect(session);
    ssh_free(session);
}

void ChannelDeleter::operator()(ssh_channel channel) const
{
    ssh_channel_free(channel); // closes it first if still open
}

std::string resolveSshDirectory(const std::string &configured)
{
    if (!configured.empty())
        return configured;
    if (const char *env = std::getenv("ACCEL_SSH_DIR"); env && *env)
        return env;
    if (const char *home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.ssh";
    return "~/.ssh"; // libssh expands it from the password database
}

std::string describeTarget(ssh_session session, const std::string &destination)
{
    std::string out = destination + " (" + optionString(session, SSH_OPTIONS_HOST);
    out += " port " + std::to_string(optionPort(session));
    const std::string user = optionString(session, SSH_OPTIONS_USER);
    if (!user.empty())
        out += " as " + user;
    return out + ")";
}

Result<std::string> configuredHostName(const std::string &destination, const std::string &sshDirectory)
{
    SessionHandle session(ssh_new());
    if (!session)
        return makeError(ErrorCode::Internal, "ssh_new failed", destination);
    const std::string directory = resolveSshDirectory(sshDirectory);
    ssh_options_set(session.get(), SSH_OPTIONS_SSH_DIR, directory.c_str());
    if (auto applied = applyDestination(session.get(), destination); !applied)
        return tl::unexpected(applied.error());
    if (ssh_options_parse_config(session.get(), nullptr) != SSH_OK)
        return makeError(ErrorCode::InvalidInput, "cannot read " + directory + "/config: " + lastError(session.get()),
                         destination);
    return optionString(session.get(), SSH_OPTIONS_HOST);
}

Result<SessionHandle> openSession(const SessionSettings &settings, const std::atomic<bool> &cancelled,
                                  HostKeyCheck *hostKey)
{
    HostKeyCheck ignored;
    HostKeyCheck &check = hostKey ? *hostKey : ignored;
    SessionHandle session(ssh_new());
    if (!session)
        return makeError(ErrorCode::Internal, "ssh_new failed", settings.destination);
    ssh_session s = session.get();
    const std::string sshDirectory = resolveSshDirectory(settings.sshDirectory);
    ssh_options_set(s, SSH_OPTIONS_SSH_DIR, sshDirectory.c_str());
    if (auto applied = applyDestination(s, settings.destination); !applied)
        return tl::unexpected(applied.error());
    // %d/config (the folder above), then the system-wide ssh_config.
    if (ssh_options_parse_config(s, nullptr) != SSH_OK)
        return makeError(ErrorCode::InvalidInput, "cannot read " + sshDirectory + "/config: " + lastError(s),
                         settings.destination);
    if (const std::string proxy = optionString(s, SSH_OPTIONS_PROXYCOMMAND); !proxy.empty()) {
        const std::string jump = jumpProxyCommand(proxy, sshDirectory);
        if (jump != proxy)
            ssh_options_set(s, SSH_OPTIONS_PROXYCOMMAND, jump.c_str());
    }
    const long timeoutSeconds = std::max(1, (settings.timeoutMs + 999) / 1000);
    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeoutSeconds);
    const std::string target = describeTarget(s, settings.destination);

    ssh_set_blocking(s, 0);
    const auto deadline = Clock::now() + std::chrono::milliseconds(settings.timeoutMs);
    auto connected = repeat(s, SSH_AGAIN, deadline, cancelled, "connecting", target, [s] { return ssh_connect(s); });
    if (!connected)
        return tl::unexpected(connected.error());
    if (*connected != SSH_OK) {
        const std::string why = lastError(s);
        const bool unresolved = why.find("resolve") != std::string::npos;
        return makeError(unresolved ? ErrorCode::NotFound : ErrorCode::Io, "cannot connect: " + why, target);
    }
    if (auto verified = verifyHostKey(s, settings, target, sshDirectory, check); !verified)
        return tl::unexpected(verified.error());

    const auto loginDeadline = Clock::now() + std::chrono::milliseconds(settings.timeoutMs);
    auto auth = repeat(s, SSH_AUTH_AGAIN, loginDeadline, cancelled, "logging in", target,
                       [s] { return ssh_userauth_publickey_auto(s, nullptr, nullptr); });
    if (!auth)
        return tl::unexpected(auth.error());
    if (*auth != SSH_AUTH_SUCCESS)
        return makeError(ErrorCode::Failed,
                         "login refused: no key was accepted (tried ssh-agent, the IdentityFile entries of " +
                             sshDirectory + "/config and " + sshDirectory +
                             "/id_*). Add your public key to the host's ~/.ssh/authorized_keys, or load a "
                             "passphrase-protected key into ssh-agent (ssh-add); accel never asks for or stores "
                             "passwords" +
                             (*auth == SSH_AUTH_ERROR ? " (" + lastError(s) + ")" : std::string()),
                         target);
    ssh_set_blocking(s, 1); // channel requests below block, bounded by SSH_OPTIONS_TIMEOUT
    return session;
}

int signalNumber(const std::string &name)
{
    static const struct {
        const char *name;
        int number;
    } table[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},   {"ABRT", SIGABRT},
                 {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"SEGV", SIGSEGV}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
                 {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"BUS", SIGBUS}};
    for (const auto &entry : table) {
        if (name == entry.name)
            return entry.number;
    }
    return 0;
}

std::string remoteCommandLine(const std::vector<std::string> &environment, const std::vector<std::string> &argv)
{
    std::vector<std::string> words = {"exec"};
    if (!environment.empty()) {
        // "--": an entry is never an option of env(1) (-S would make it run a command of its own).
        words.push_back("env");
        words.push_back("--");
        words.insert(words.end(), environment.begin(), environment.end());
    }
    words.insert(words.end(), argv.begin(), argv.end());
    return std::string("printf '") + kRemotePidTag + " %s\\n' \"$$\" >&2; " + exporting::shellJoin(words);
}

bool RemotePidReader::feed(const std::string &batch, std::string &passOn)
{
    if (m_done) {
        passOn += batch;
        return true;
    }
    m_head += batch;
    // Login scripts may print before the line; the command itself only after it.
    const std::string tag = std::string(kRemotePidTag) + " ";
    size_t at = m_head.find(tag);
    while (at != std::string::npos && at != 0 && m_head[at - 1] != '\n')
        at = m_head.find(tag, at + 1);
    const size_t end = at == std::string::npos ? std::string::npos : m_head.find('\n', at);
    if (end != std::string::npos) {
        m_pid = std::strtol(m_head.c_str() + at + tag.size(), nullptr, 10);
        passOn += m_head.substr(0, at) + m_head.substr(end + 1);
        m_done = true;
    } else if (m_head.size() > 8192) {
        passOn += m_head; // no tag: pass everything on, signal the command alone
        m_done = true;
    }
    if (m_done)
        m_head.clear();
    return m_done;
}

void RemotePidReader::flush(std::string &passOn)
{
    passOn += m_head;
    m_head.clear();
    m_done = true;
}

} // namespace accel::launcher::ssh
