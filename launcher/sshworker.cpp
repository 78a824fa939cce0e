#include "launcher/sshworker.h"

#include <libssh/callbacks.h>
#include <libssh/server.h>  // ssh_send_keepalive (usable on client sessions)
#include <openssl/crypto.h> // OPENSSL_thread_stop

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

namespace accel::launcher::ssh {

struct SshWorker::Running {
    quint64 id = 0;
    ChannelHandle channel;
    ssh_channel_callbacks_struct callbacks{};
    int exitSignal = 0; // from the exit-signal message
    RemotePidReader pidReader;
    bool hasDeadline = false;
    Clock::time_point deadline;
    bool cancelled = false;
    bool timedOut = false;
    int stopStep = -1; // next signal to send while stopping; -1: not stopping
    Clock::time_point nextStep;
    bool finished = false;
};

namespace {

void onExitSignal(ssh_session, ssh_channel, const char *signal, int, const char *, const char *, void *userdata)
{
    static_cast<int *>(userdata)[0] = signalNumber(signal ? signal : "");
}

constexpr const char *kStopSignals[] = {"INT", "TERM", "KILL"};

// AccelOutcome::reason for a session that could not be opened.
QString failureReason(ErrorCode code, const HostKeyCheck &hostKey)
{
    if (code == ErrorCode::Timeout)
        return QStringLiteral("timeout");
    if (hostKey.state == HostKeyCheck::State::Changed)
        return QStringLiteral("host_key_changed");
    if (code == ErrorCode::Failed && hostKey.state == HostKeyCheck::State::Unknown)
        return QStringLiteral("host_key_unknown");
    if (code == ErrorCode::Failed && hostKey.state == HostKeyCheck::State::Known)
        return QStringLiteral("login_refused");
    return QStringLiteral("unreachable");
}

} // namespace

SshWorker::SshWorker(SessionSettings settings, Timing timing, Callbacks callbacks)
    : m_settings(std::move(settings)), m_timing(timing), m_callbacks(std::move(callbacks))
{
    if (::pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0)
        m_wake[0] = m_wake[1] = -1;
}

void SshWorker::start()
{
    if (m_thread.joinable())
        return;
    m_thread = std::thread([this] {
        // "ssh <destination>" in ps, gdb and sanitizer reports (the kernel keeps 15 bytes).
        const std::string name = ("ssh " + m_settings.destination).substr(0, 15);
        ::pthread_setname_np(::pthread_self(), name.c_str());
        run();
    });
}

SshWorker::~SshWorker()
{
    stop();
    if (m_thread.joinable())
        m_thread.join();
    for (int fd : m_wake) {
        if (fd >= 0)
            ::close(fd);
    }
}

void SshWorker::submit(quint64 id, std::string commandLine, int timeoutMs)
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_requests.push_back(Request{id, std::move(commandLine), timeoutMs});
    }
    wake();
}

void SshWorker::cancel(quint64 id)
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_cancels.push_back(id);
    }
    m_interrupt = true;
    wake();
}

void SshWorker::stop()
{
    m_stopping = true;
    m_interrupt = true;
    wake();
}

void SshWorker::wake()
{
    if (m_wake[1] >= 0) {
        const char byte = 1;
        (void)!::write(m_wake[1], &byte, 1);
    }
}

void SshWorker::run()
{
    m_lastTraffic = Clock::now();
    while (!m_stopping) {
        takeRequests();
        if (!m_pending.empty())
            startPending();
        pumpRunning();
        advanceStops();
        keepalive();
        if (!m_stopping)
            waitForActivity(nextWakeMs());
    }
    stopAll();
    // libssh's OpenSSL keeps per-thread random generators that it frees from a thread-exit handler:
    // an owner joining this thread and then leaving the process raced OpenSSL's exit-time cleanup and
    // LeakSanitizer (2 of 3 runs of tst_clusterjob reported this thread's two generators as leaked
    // while the thread was a QThread). Freed here, before the join returns.
    OPENSSL_thread_stop();
}

void SshWorker::takeRequests()
{
    std::vector<quint64> cancels;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        // Cancels taken from here on are applied below; a later one interrupts the next connect.
        m_interrupt = m_stopping.load();
        for (Request &request : m_requests)
            m_pending.push_back(std::move(request));
        m_requests.clear();
        cancels.swap(m_cancels);
    }
    for (quint64 id : cancels) {
        const auto pending =
            std::find_if(m_pending.begin(), m_pending.end(), [id](const Request &request) { return request.id == id; });
        if (pending != m_pending.end()) {
            m_pending.erase(pending);
            AccelOutcome outcome;
            outcome.cancelled = true;
            m_callbacks.done(id, outcome);
            continue;
        }
        for (auto &running : m_running) {
            if (running->id == id && !running->cancelled && !running->timedOut) {
                running->cancelled = true;
                running->stopStep = 0;
                running->nextStep = Clock::now();
            }
        }
    }
}

void SshWorker::startPending()
{
    if (!m_session) {
        HostKeyCheck hostKey;
        Result<SessionHandle> session = openSession(m_settings, m_interrupt, &hostKey);
        if (!session) {
            const ErrorCode code = session.error().code;
            if (code == ErrorCode::Cancelled)
                return; // a cancel or stop cut it short: the loop applies it, then tries again for the rest
            AccelOutcome outcome;
            if (code == ErrorCode::Timeout)
                outcome.timedOut = true;
            else
                outcome.failedToStart = true;
            outcome.error = QString::fromStdString(session.error().toString());
            outcome.reason = code == ErrorCode::InvalidInput && !checkDestination(m_settings.destination)
                                 ? QStringLiteral("invalid_host")
                                 : failureReason(code, hostKey);
            if (hostKey.state == HostKeyCheck::State::Unknown || hostKey.state == HostKeyCheck::State::Changed) {
                outcome.hostKeyFingerprint = QString::fromStdString(hostKey.fingerprint);
                outcome.hostKeyType = QString::fromStdString(hostKey.keyType);
                outcome.knownHostsName = QString::fromStdString(hostKey.knownHostsName);
                outcome.knownHostsFile = QString::fromStdString(hostKey.knownHostsFile);
            }
            for (const Request &request : m_pending)
                m_callbacks.done(request.id, outcome);
            m_pending.clear();
            return;
        }
        m_session = std::move(*session);
        m_lastTraffic = Clock::now();
    }
    while (!m_pending.empty() && m_session) {
        const Request request = std::move(m_pending.front());
        m_pending.pop_front();
        startOne(request);
    }
}

void SshWorker::startOne(const Request &request)
{
    ssh_session session = m_session.get();
    const std::string target = describeTarget(session, m_settings.destination);
    auto running = std::make_unique<Running>();
    running->id = request.id;
    running->channel.reset(ssh_channel_new(session));
    const auto fail = [&](const std::string &step) {
        AccelOutcome outcome;
        outcome.failedToStart = true;
        outcome.error = QString::fromStdString(target + ": " + step + ": " + ssh_get_error(session));
        m_callbacks.done(request.id, outcome);
        if (!ssh_is_connected(session)) {
            (void)running->channel.release(); // freed with the session
            loseConnection("connection closed");
        }
    };
    if (!running->channel || ssh_channel_open_session(running->channel.get()) != SSH_OK)
        return fail("cannot open a channel");
    running->callbacks.userdata = &running->exitSignal;
    running->callbacks.channel_exit_signal_function = onExitSignal;
    ssh_callbacks_init(&running->callbacks);
    ssh_set_channel_callbacks(running->channel.get(), &running->callbacks);
    if (ssh_channel_request_exec(running->channel.get(), request.commandLine.c_str()) != SSH_OK)
        return fail("cannot run the command");
    if (request.timeoutMs > 0) {
        running->hasDeadline = true;
        running->deadline = Clock::now() + std::chrono::milliseconds(request.timeoutMs);
    }
    m_lastTraffic = Clock::now();
    m_running.push_back(std::move(running));
}

void SshWorker::pumpRunning()
{
    char buffer[65536];
    for (auto &running : m_running) {
        if (running->finished)
            continue;
        ssh_channel channel = running->channel.get();
        QByteArray streams[2];
        bool ended[2] = {false, false};
        bool failed = false;
        for (int stream = 0; stream < 2 && !failed; ++stream) {
            for (;;) {
                const int available = ssh_channel_poll(channel, stream);
                if (available == SSH_EOF) {
                    ended[stream] = true;
                    break;
                }
                if (available == SSH_ERROR) {
                    failed = true;
                    break;
                }
                if (available == 0)
                    break;
                const int n = ssh_channel_read_nonblocking(channel, buffer, sizeof(buffer), stream);
                if (n < 0) {
                    failed = true;
                    break;
                }
                if (n == 0)
                    break;
                streams[stream].append(buffer, n);
            }
        }
        if (!streams[1].isEmpty() || ended[1]) {
            std::string passOn;
            running->pidReader.feed(streams[1].toStdString(), passOn);
            if (ended[1])
                running->pidReader.flush(passOn);
            streams[1] = QByteArray::fromStdString(passOn);
        }
        if (!streams[0].isEmpty() || !streams[1].isEmpty()) {
            m_lastTraffic = Clock::now();
            m_callbacks.output(running->id, streams[0], streams[1]);
        }
        if (failed) {
            loseConnection(ssh_get_error(m_session.get()));
            return;
        }
        if ((ended[0] && ended[1]) || ssh_channel_is_closed(channel)) {
            AccelOutcome outcome;
            const int status = ssh_channel_get_exit_status(channel); // waits for it, bounded by the timeout
            if (running->exitSignal)
                outcome.signal = running->exitSignal;
            else if (status >= 0)
                outcome.exitCode = status;
            else
                outcome.error = QStringLiteral("the remote command ended without an exit status");
            finish(*running, outcome);
        }
    }
    m_running.erase(std::remove_if(m_running.begin(), m_running.end(), [](const auto &r) { return r->finished; }),
                    m_running.end());
}

void SshWorker::advanceStops()
{
    const auto now = Clock::now();
    for (auto &running : m_running) {
        if (running->hasDeadline && running->stopStep < 0 && now >= running->deadline) {
            running->timedOut = true;
            running->stopStep = 0;
            running->nextStep = now;
        }
        if (running->stopStep < 0 || now < running->nextStep)
            continue;
        if (running->stopStep < 3) {
            signalRemote(*running, running->stopStep);
            ++running->stopStep;
            running->nextStep = now + std::chrono::milliseconds(m_timing.stopGraceMs);
            continue;
        }
        AccelOutcome outcome; // SIGKILL had its grace too: give up on the command, close its channel
        outcome.error = QStringLiteral("the remote command did not end after SIGINT, SIGTERM and SIGKILL "
                                       "(does the SSH server allow signals?); its channel was closed");
        finish(*running, outcome);
    }
    m_running.erase(std::remove_if(m_running.begin(), m_running.end(), [](const auto &r) { return r->finished; }),
                    m_running.end());
}

void SshWorker::signalRemote(Running &running, int step)
{
    const char *name = kStopSignals[step];
    ssh_channel_request_send_signal(running.channel.get(), name);
    const long pid = running.pidReader.pid();
    if (pid <= 1)
        return;
    // The command's whole process group, from a second channel: sshd signals only the command.
    ChannelHandle killer(ssh_channel_new(m_session.get()));
    const std::string line = "kill -s " + std::string(name) + " -- -" + std::to_string(pid) + " 2>/dev/null";
    if (killer && ssh_channel_open_session(killer.get()) == SSH_OK)
        ssh_channel_request_exec(killer.get(), line.c_str()); // answered once started; closed unread
}

void SshWorker::keepalive()
{
    if (!m_session)
        return;
    if (!ssh_is_connected(m_session.get())) {
        loseConnection("connection closed");
        return;
    }
    if (Clock::now() - m_lastTraffic >= std::chrono::milliseconds(m_timing.keepaliveMs)) {
        ssh_send_keepalive(m_session.get());
        m_lastTraffic = Clock::now();
    }
}

void SshWorker::finish(Running &running, AccelOutcome outcome)
{
    running.finished = true;
    outcome.cancelled = running.cancelled;
    outcome.timedOut = running.timedOut;
    if (running.timedOut && outcome.error.isEmpty())
        outcome.error = QStringLiteral("the remote command was stopped at its time limit");
    running.channel.reset(); // closes the channel
    m_callbacks.done(running.id, outcome);
}

void SshWorker::loseConnection(const std::string &why)
{
    const std::string target =
        m_session ? describeTarget(m_session.get(), m_settings.destination) : m_settings.destination;
    for (auto &running : m_running) {
        if (running->finished)
            continue;
        AccelOutcome outcome;
        outcome.error = QString::fromStdString(target + ": connection lost: " + why);
        outcome.reason = QStringLiteral("connection_lost");
        (void)running->channel.release(); // freed with the session below
        finish(*running, outcome);
    }
    m_running.clear();
    m_session.reset();
}

void SshWorker::stopAll()
{
    for (const Request &request : m_pending) {
        AccelOutcome outcome;
        outcome.cancelled = true;
        m_callbacks.done(request.id, outcome);
    }
    m_pending.clear();
    for (auto &running : m_running) {
        if (running->finished)
            continue;
        // The host is going away: ask the remote command to stop, then close the channel.
        signalRemote(*running, 1);
        running->cancelled = true;
        finish(*running, AccelOutcome{});
    }
    m_running.clear();
    m_session.reset();
}

int SshWorker::nextWakeMs() const
{
    auto next = Clock::now() + std::chrono::milliseconds(m_running.empty() ? m_timing.keepaliveMs : 200);
    for (const auto &running : m_running) {
        if (running->stopStep >= 0)
            next = std::min(next, running->nextStep);
        else if (running->hasDeadline)
            next = std::min(next, running->deadline);
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(ms, 0, 60000));
}

void SshWorker::waitForActivity(int milliseconds)
{
    pollfd fds[2] = {};
    fds[0].fd = m_wake[0];
    fds[0].events = POLLIN;
    nfds_t count = 1;
    if (m_session) {
        fds[1].fd = ssh_get_fd(m_session.get());
        fds[1].events = POLLIN;
        count = fds[1].fd >= 0 ? 2 : 1;
    }
    if (::poll(fds, count, milliseconds) > 0 && (fds[0].revents & POLLIN)) {
        char drain[64];
        while (::read(m_wake[0], drain, sizeof(drain)) > 0) {
        }
    }
}

} // namespace accel::launcher::ssh
