#include "launcher/groupreaper.h"

#include "core/rundir/shmsegments.h"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace accel::launcher {

namespace {

constexpr std::int32_t kGoodbye = -1;
constexpr int kMaxGroups = 8192;

// "\0ACCEL_RUN_TOKEN=<32 hex digits>\0": one whole entry of an environment block, which is a
// sequence of NUL-terminated strings; the stream searched is the block with a NUL put in front.
constexpr size_t kTokenDigits = 32;
char g_entry[64];
size_t g_entrySize = 0;

// Writes "/proc/<pid><tail>" into path; async-signal-safe.
void procPath(char *path, std::int32_t pid, const char *tail)
{
    int at = 0;
    for (const char *head = "/proc/"; *head;)
        path[at++] = *head++;
    char digits[12];
    int n = 0;
    for (std::int32_t rest = pid; rest > 0 && n < 11; rest /= 10)
        digits[n++] = static_cast<char>('0' + rest % 10);
    while (n > 0)
        path[at++] = digits[--n];
    while (*tail)
        path[at++] = *tail++;
    path[at] = '\0';
}

// Whether the initial environment of pid holds the run's token entry; async-signal-safe (read in
// chunks, the last g_entrySize - 1 bytes of a chunk carried over to the next).
bool carriesToken(std::int32_t pid)
{
    char path[40];
    procPath(path, pid, "/environ");
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    static char buffer[64 * 1024];
    size_t held = 1;
    buffer[0] = '\0';
    bool found = false;
    for (;;) {
        const ssize_t n = ::read(fd, buffer + held, sizeof(buffer) - held);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        held += static_cast<size_t>(n);
        for (size_t i = 0; !found && i + g_entrySize <= held; ++i)
            found = std::memcmp(buffer + i, g_entry, g_entrySize) == 0;
        if (found)
            break;
        const size_t keep = held < g_entrySize ? held : g_entrySize - 1;
        std::memmove(buffer, buffer + held - keep, keep);
        held = keep;
    }
    ::close(fd);
    return found;
}

// Kills every other process of this user whose environment carries the run's token, round after
// round (a process may fork while it is looked at) until a round finds none; at most 5 s.
void killTokenCarriers()
{
    if (g_entrySize == 0)
        return;
    const uid_t user = ::getuid();
    const std::int32_t self = ::getpid();
    const timespec tick{0, 10 * 1000 * 1000};
    for (int round = 0; round < 500; ++round) {
        DIR *proc = ::opendir("/proc");
        if (!proc)
            return;
        int killed = 0;
        while (const dirent *entry = ::readdir(proc)) {
            std::int32_t pid = 0;
            const char *c = entry->d_name;
            for (; *c >= '0' && *c <= '9' && pid < 100000000; ++c)
                pid = pid * 10 + (*c - '0');
            if (*c != '\0' || pid <= 1 || pid == self)
                continue;
            char path[40];
            procPath(path, pid, "");
            struct stat info {};
            if (::stat(path, &info) != 0 || info.st_uid != user || !carriesToken(pid))
                continue;
            if (::kill(pid, SIGKILL) == 0)
                ++killed;
        }
        ::closedir(proc);
        if (killed == 0)
            return;
        ::nanosleep(&tick, nullptr);
    }
}

// Whether the process has not ended yet (a zombie has); async-signal-safe.
bool stillRuns(std::int32_t pid)
{
    char path[40];
    procPath(path, pid, "/stat");
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
    killTokenCarriers();
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

std::string newRunToken()
{
    unsigned char bits[kTokenDigits / 2] = {};
    size_t have = 0;
    while (have < sizeof(bits)) {
        const ssize_t n = ::getrandom(bits + have, sizeof(bits) - have, 0);
        if (n > 0)
            have += static_cast<size_t>(n);
        else if (errno != EINTR)
            break;
    }
    static const char hex[] = "0123456789abcdef";
    std::string token;
    for (const unsigned char byte : bits) {
        token += hex[byte >> 4];
        token += hex[byte & 15];
    }
    return token;
}

GroupReaper::GroupReaper(const std::string &token)
{
    // Laid out before the fork: the helper only compares bytes.
    g_entrySize = 0;
    const size_t name = std::strlen(kRunTokenVariable);
    if (token.size() == kTokenDigits) {
        g_entry[0] = '\0';
        std::memcpy(g_entry + 1, kRunTokenVariable, name);
        g_entry[1 + name] = '=';
        std::memcpy(g_entry + 2 + name, token.data(), kTokenDigits);
        g_entry[2 + name + kTokenDigits] = '\0';
        g_entrySize = 3 + name + kTokenDigits;
    }
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
