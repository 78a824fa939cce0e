// SshWorker: the thread that owns one libssh session (libssh is blocking and a session belongs to
// one thread). It connects when the first command arrives and keeps the connection for the next
// ones, runs each command on its own channel, polls all channels and reports output in batches,
// sends keepalives while idle, and stops commands on cancel or timeout by sending SIGINT, SIGTERM
// and SIGKILL over the channel before closing it. Callers talk to it through a locked queue and a
// wake-up pipe; it reports through callbacks that run on its own thread. The thread is a plain
// std::thread, not a QThread: it runs no Qt event loop, and its start and join are then pthread
// calls that a ThreadSanitizer build sees (QThread's wait is ordered by Qt's own uninstrumented locks,
// so every object handed over after it was reported as a race).
#pragma once

#include "launcher/hostcommand.h"
#include "launcher/sshsession.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace accel::launcher::ssh {

class SshWorker {
public:
    struct Callbacks {
        std::function<void(quint64 id, const QByteArray &out, const QByteArray &err)> output;
        std::function<void(quint64 id, const AccelOutcome &outcome)> done; // once per submitted id
    };
    struct Timing {
        int stopGraceMs = 2000;  // between SIGINT, SIGTERM, SIGKILL, and closing the channel
        int keepaliveMs = 30000; // a keepalive after this long without traffic
    };

    SshWorker(SessionSettings settings, Timing timing, Callbacks callbacks);
    ~SshWorker(); // stops remote commands and joins the thread
    SshWorker(const SshWorker &) = delete;
    SshWorker &operator=(const SshWorker &) = delete;

    void start(); // starts the thread, once

    // Thread-safe. timeoutMs <= 0: no limit on the command's run time.
    void submit(quint64 id, std::string commandLine, int timeoutMs);
    void cancel(quint64 id);
    void stop();

private:
    void run();

    using Clock = std::chrono::steady_clock;
    struct Request {
        quint64 id = 0;
        std::string commandLine;
        int timeoutMs = 0;
    };
    struct Running;

    void wake();
    void takeRequests();
    void startPending();
    void startOne(const Request &request);
    void pumpRunning();
    void advanceStops();
    void signalRemote(Running &running, int step); // step 0, 1, 2: SIGINT, SIGTERM, SIGKILL
    void keepalive();
    void finish(Running &running, AccelOutcome outcome);
    void loseConnection(const std::string &why);
    void stopAll();
    void waitForActivity(int milliseconds);
    int nextWakeMs() const;

    const SessionSettings m_settings;
    const Timing m_timing;
    const Callbacks m_callbacks;
    int m_wake[2] = {-1, -1};

    std::mutex m_mutex; // guards the two queues
    std::deque<Request> m_requests;
    std::vector<quint64> m_cancels;
    std::atomic<bool> m_stopping{false};
    std::atomic<bool> m_interrupt{false}; // cuts a connection attempt short for a cancel or stop

    // Worker thread only.
    SessionHandle m_session;
    std::deque<Request> m_pending;
    std::vector<std::unique_ptr<Running>> m_running;
    Clock::time_point m_lastTraffic;

    std::thread m_thread; // last: started after every member above exists
};

} // namespace accel::launcher::ssh
