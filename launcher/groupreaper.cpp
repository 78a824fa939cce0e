#include "launcher/groupreaper.h"

#include "core/rundir/shmsegments.h"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace accel::launcher {

namespace {

constexpr std::int32_t kGoodbye = -1;
constexpr int kMaxGroups = 8192;

// Whether the process has not ended yet (a zombie has); async-signal-safe.
bool stillRuns(std::int32_t pid)
{
    char path[40] = "/proc/";
    int at = 6;
    char digits[12];
    int n = 0;
    for (std::int32_t rest = pid; rest > 0 && n < 11; rest /= 10)
        digits[n++] = static_cast<char>('0' + rest % 10);
    while (n > 0)
        path[at++] = digits[--n];
    for (const char *tail = "/stat"; *tail;)
        path[at++] = *tail++;
    path[at] = '\0';
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char text[512];
    const ssize_t size = ::read(fd, text, sizeof(text) - 1);
    ::close(fd);
    // The state follows the last ')' (the command name may hold any character).
    for (ssize_t i = size - 1; i > 0; --i) {
        if (text[i] == ')')
            return i + 2 < size && text[i + 2] != 'Z' && text[i + 2] != 'X';
    }
    return size > 0;
}

// Runs in the forked helper: only async-signal-safe calls from here on, except removeSegmentsOf()
// at the very end (opendir and std::string allocate; glibc's fork leaves malloc usable in the child).
[[noreturn]] void helperMain(int readEnd)
{
    // Its own process group (set by both sides of the fork, so it holds before the supervisor starts
    // any rank): a SIGKILL to the supervisor's group (`kill -9 %1` in a shell) must not reach the
    // helper, or the ranks' children would survive.
    ::setpgid(0, 0);
    // Survive the terminal's Ctrl-C and `accel stop`: only the pipe decides.
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE})
        ::signal(signal, SIG_IGN);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
    }
    static std::int32_t groups[kMaxGroups];
    int count = 0;
    for (;;) {
        std::int32_t value = 0;
        const ssize_t n = ::read(readEnd, &value, sizeof(value));
        if (n == static_cast<ssize_t>(sizeof(value))) {
            if (value == kGoodbye)
                ::_exit(0);
            if (value > 1 && count < kMaxGroups) // never killpg(0 or 1): that is kill(0 or -1)
                groups[count++] = value;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break; // EOF: the supervisor is gone
    }
    for (int i = 0; i < count; ++i)
        ::killpg(groups[i], SIGKILL);
    // A rank killed while holding a shared-memory segment leaves it in /dev/shm: remove what each
    // group's leader (the rank) named after itself, as the supervisor would have, once it is dead
    // (at most 2 s: a kill to a process in uninterruptible sleep waits until it wakes).
    const timespec tick{0, 10 * 1000 * 1000};
    for (int i = 0; i < count; ++i) {
        for (int wait = 0; wait < 200 && stillRuns(groups[i]); ++wait)
            ::nanosleep(&tick, nullptr);
        rundir::removeSegmentsOf(groups[i]);
    }
    ::_exit(0);
}

} // namespace

GroupReaper::GroupReaper()
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        return;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[1]);
        helperMain(fds[0]);
    }
    ::close(fds[0]);
    if (pid > 0)
        ::setpgid(pid, pid); // the child does the same; whichever runs first, it holds from here on
    if (pid < 0) {
        ::close(fds[1]);
        return;
    }
    m_pipe = fds[1];
    m_helper = pid;
}

GroupReaper::~GroupReaper()
{
    if (m_pipe >= 0) {
        const std::int32_t goodbye = kGoodbye;
        [[maybe_unused]] const ssize_t written = ::write(m_pipe, &goodbye, sizeof(goodbye));
        ::close(m_pipe);
    }
    if (m_helper > 0)
        ::waitpid(static_cast<pid_t>(m_helper), nullptr, 0);
}

void GroupReaper::watch(qint64 processGroup)
{
    if (m_pipe < 0 || processGroup <= 1 || processGroup > INT32_MAX)
        return;
    const std::int32_t value = static_cast<std::int32_t>(processGroup);
    [[maybe_unused]] const ssize_t written = ::write(m_pipe, &value, sizeof(value));
}

} // namespace accel::launcher
