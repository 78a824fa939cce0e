#include "core/hardware/childprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char **environ;

namespace accel::hardware {

namespace {

struct Pipe {
    int fds[2] = {-1, -1};
    ~Pipe() { closeAll(); }
    void closeAll()
    {
        for (int &fd : fds) {
            if (fd >= 0)
                ::close(fd);
            fd = -1;
        }
    }
    void closeEnd(int which)
    {
        if (fds[which] >= 0)
            ::close(fds[which]);
        fds[which] = -1;
    }
};

bool isExecutableFile(const std::string &path)
{
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

} // namespace

std::string findOnPath(const std::string &program)
{
    if (program.find('/') != std::string::npos)
        return isExecutableFile(program) ? program : std::string();
    const char *path = std::getenv("PATH");
    std::string list = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= list.size()) {
        const size_t colon = list.find(':', start);
        std::string folder = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        if (folder.empty())
            folder = ".";
        const std::string candidate = folder + "/" + program;
        if (isExecutableFile(candidate))
            return candidate;
        if (colon == std::string::npos)
            break;
        start = colon + 1;
    }
    return {};
}

Result<ChildOutput> runChild(const std::string &program, const std::vector<std::string> &arguments, int timeoutMs,
                             size_t maxOutputBytes)
{
    const std::string resolved = findOnPath(program);
    if (resolved.empty())
        return makeError(
            ErrorCode::NotFound,
            program.find('/') == std::string::npos ? "program not found on PATH" : "no such executable file", program);

    Pipe out;
    Pipe err;
    if (::pipe2(out.fds, O_CLOEXEC) != 0 || ::pipe2(err.fds, O_CLOEXEC) != 0)
        return makeError(ErrorCode::Io, std::string("pipe: ") + std::strerror(errno), program);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out.fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err.fds[1], 2);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    // Own process group so a timeout kills the helper's children too; default signal handling and
    // an empty mask whatever the calling program (a GUI, a supervisor) ignores or blocks.
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attributes, 0);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int signal : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD, SIGHUP, SIGQUIT})
        sigaddset(&defaults, signal);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    sigset_t emptyMask;
    sigemptyset(&emptyMask);
    posix_spawnattr_setsigmask(&attributes, &emptyMask);

    std::vector<char *> argv;
    argv.push_back(const_cast<char *>(resolved.c_str()));
    for (const std::string &argument : arguments)
        argv.push_back(const_cast<char *>(argument.c_str()));
    argv.push_back(nullptr);

    pid_t pid = 0;
    const int spawnResult = ::posix_spawn(&pid, resolved.c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawnResult != 0)
        return makeError(ErrorCode::NotFound, std::string("cannot start: ") + std::strerror(spawnResult), resolved);
    out.closeEnd(1);
    err.closeEnd(1);

    ChildOutput result;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    bool timedOut = false;
    int openStreams = 2;
    while (openStreams > 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timedOut = true;
            break;
        }
        pollfd fds[2] = {{out.fds[0], POLLIN, 0}, {err.fds[0], POLLIN, 0}};
        const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0)
            break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buffer[8192];
            const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR)
                continue;
            Pipe &pipe = i == 0 ? out : err;
            if (n <= 0) {
                pipe.closeEnd(0);
                --openStreams;
                continue;
            }
            std::string &target = i == 0 ? result.out : result.err;
            if (target.size() < maxOutputBytes)
                target.append(buffer, std::min(static_cast<size_t>(n), maxOutputBytes - target.size()));
        }
        // A closed stream keeps its slot with fd -1, which poll ignores.
    }
    // The streams are closed; the program may still be running (it closed them itself).
    int status = 0;
    bool reaped = false;
    while (!timedOut && !reaped) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid || (done < 0 && errno != EINTR)) {
            reaped = true;
        } else if (std::chrono::steady_clock::now() >= deadline) {
            timedOut = true;
        } else {
            ::usleep(2000);
        }
    }
    if (timedOut) {
        ::kill(-pid, SIGKILL);
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (timedOut)
        return makeError(ErrorCode::Timeout,
                         "did not finish within " + std::to_string(timeoutMs) + " ms and was killed", resolved);
    if (WIFEXITED(status)) {
        result.exitCode = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.signal = WTERMSIG(status);
    }
    return result;
}

} // namespace accel::hardware
