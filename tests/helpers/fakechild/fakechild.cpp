// fakechild: a tiny rank program for the launcher tests. Actions run in the order given:
//   --marker TEXT         nothing; a tag tests look for in /proc/*/cmdline
//   --print TEXT          a line on stdout          --stderr TEXT   a line on stderr
//   --lines N             N numbered lines on stdout
//   --env-json FILE       the environment as a JSON object into FILE ({rank} = $RANK)
//   --touch FILE          create FILE ({rank} = $RANK)
//   --metrics N           N metrics lines (docs/metrics.md) into $ACCEL_METRICS_FILE
//   --sleep MS            sleep               --hang      sleep forever
//   --ignore-term         ignore SIGTERM      --grandchild  fork a child that sleeps forever
//   --setsid-grandchild   fork a child that leaves the rank's session (setsid) and sleeps forever
//   --exit CODE           exit now            --abort       crash with SIGABRT
//   --shm-segment         create (and never unlink) a shared-memory segment named as the
//                         runtime's all-reduce names its segments after this pid
// Guards apply to the next action only:
//   --if-rank R           only when $RANK (or 0) is R
//   --if-attempt-below K  only when $TORCHELASTIC_RESTART_COUNT (or 0) is below K
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

#include "core/rundir/shmsegments.h"

extern char **environ;

namespace {

int envInt(const char *name)
{
    const char *value = std::getenv(name);
    return value ? std::atoi(value) : 0;
}

std::string withRank(std::string path)
{
    const size_t at = path.find("{rank}");
    if (at != std::string::npos)
        path.replace(at, 6, std::to_string(envInt("RANK")));
    return path;
}

std::string jsonString(const std::string &text)
{
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
            out += buffer;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

[[noreturn]] void sleepForever()
{
    for (;;)
        ::pause();
}

} // namespace

int main(int argc, char **argv)
{
    bool skipNext = false;
    for (int i = 1; i < argc; ++i) {
        const std::string action = argv[i];
        const bool hasValue = i + 1 < argc;
        const char *value = hasValue ? argv[i + 1] : "";
        if (action == "--if-rank" || action == "--if-attempt-below") {
            const int wanted = std::atoi(value);
            ++i;
            skipNext =
                action == "--if-rank" ? envInt("RANK") != wanted : envInt("TORCHELASTIC_RESTART_COUNT") >= wanted;
            continue;
        }
        const bool takesValue = action == "--marker" || action == "--print" || action == "--stderr" ||
                                action == "--lines" || action == "--env-json" || action == "--touch" ||
                                action == "--metrics" || action == "--sleep" || action == "--exit";
        if (takesValue)
            ++i;
        if (skipNext) {
            skipNext = false;
            continue;
        }
        if (action == "--marker") {
        } else if (action == "--print") {
            std::printf("%s\n", value);
            std::fflush(stdout);
        } else if (action == "--stderr") {
            std::fprintf(stderr, "%s\n", value);
        } else if (action == "--lines") {
            for (int n = 0; n < std::atoi(value); ++n)
                std::printf("line %d\n", n);
            std::fflush(stdout);
        } else if (action == "--env-json") {
            std::ofstream out(withRank(value));
            out << "{";
            bool first = true;
            for (char **entry = environ; *entry; ++entry) {
                const char *eq = std::strchr(*entry, '=');
                if (!eq)
                    continue;
                out << (first ? "" : ",") << jsonString(std::string(*entry, static_cast<size_t>(eq - *entry))) << ":"
                    << jsonString(eq + 1);
                first = false;
            }
            out << "}\n";
        } else if (action == "--touch") {
            std::ofstream(withRank(value)) << ::getpid() << "\n";
        } else if (action == "--metrics") {
            const char *path = std::getenv("ACCEL_METRICS_FILE");
            std::ofstream out(path ? path : "/dev/null", std::ios::app);
            for (int step = 1; step <= std::atoi(value); ++step) {
                out << "{\"v\":1,\"time\":" << std::time(nullptr) << ",\"rank\":" << envInt("RANK")
                    << ",\"step\":" << step << ",\"loss\":" << 4.0 / step << ",\"tokens_per_s\":1000.0}\n";
            }
        } else if (action == "--sleep") {
            std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(value)));
        } else if (action == "--hang") {
            sleepForever();
        } else if (action == "--ignore-term") {
            std::signal(SIGTERM, SIG_IGN);
        } else if (action == "--grandchild") {
            if (::fork() == 0)
                sleepForever();
        } else if (action == "--setsid-grandchild") {
            if (::fork() == 0) {
                ::setsid();
                sleepForever();
            }
        } else if (action == "--exit") {
            std::fflush(stdout);
            return std::atoi(value);
        } else if (action == "--shm-segment") {
            const std::string name = accel::rundir::allReduceSegmentName(::getpid(), 1);
            const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd < 0 || ::ftruncate(fd, 4096) != 0) {
                std::fprintf(stderr, "fakechild: shm_open %s: %s\n", name.c_str(), std::strerror(errno));
                return 65;
            }
            ::close(fd);
        } else if (action == "--abort") {
            std::abort();
        } else {
            std::fprintf(stderr, "fakechild: unknown action %s\n", action.c_str());
            return 64;
        }
    }
    return 0;
}
