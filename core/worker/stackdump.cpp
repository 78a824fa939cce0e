// How the stack is taken, and why this way: symbolising return addresses (dladdr, demangling),
// building JSON and writing a file allocate memory and take locks, none of which is
// async-signal-safe. So the request (rundir::nativeStackSignal, sent to the process) is taken by a
// dedicated thread with sigwait(), outside any signal handler. That thread cannot walk another
// thread's stack, so it sends the main thread (where training waits in its collectives) a second,
// real-time signal whose handler only copies the return addresses with backtrace() into a static
// array and posts a semaphore: backtrace() is safe there once primed (its first call loads
// libgcc_s, which allocates; installStackDump() makes that first call), and sem_post() is on
// POSIX's async-signal-safe list. The thread then symbolises and writes the file at leisure. The
// collective record is one lock-free atomic word, read the same way.
#include "core/worker/stackdump.h"

#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/rundir/runlayout.h"
#include "core/runtime/collectiverecord.h"
#include "core/runtime/cudaplugin.h"

#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <filesystem>
#include <memory>
#include <pthread.h>
#include <semaphore.h>
#include <thread>
#include <unistd.h>

namespace accel::worker {

namespace {

constexpr int kMaxFrames = 64;
void *g_frames[kMaxFrames];
std::atomic<int> g_frameCount{0};
sem_t g_captured;
pthread_t g_mainThread;

int captureSignal()
{
    return SIGRTMIN + 2; // glibc's threads reserve the first real-time signals below SIGRTMIN
}

void onCapture(int)
{
    const int saved = errno;
    g_frameCount.store(backtrace(g_frames, kMaxFrames), std::memory_order_release);
    sem_post(&g_captured);
    errno = saved;
}

std::string demangled(const char *symbol)
{
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> name(abi::__cxa_demangle(symbol, nullptr, nullptr, &status),
                                                     &std::free);
    return status == 0 && name ? std::string(name.get()) : std::string(symbol);
}

std::string hex(std::uintptr_t value)
{
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

int rankFromEnvironment()
{
    const char *rank = std::getenv("RANK");
    return rank && *rank ? std::atoi(rank) : 0;
}

// The accel.native-stack document for `count` return addresses of the main thread.
std::string nativeStackJson(int rank, void *const *frames, int count);

// Waits for requests, forever (a detached thread; it ends with the process).
void dumpLoop()
{
    sigset_t request;
    sigemptyset(&request);
    sigaddset(&request, rundir::nativeStackSignal);
    const int rank = rankFromEnvironment();
    const char *runDirectory = std::getenv("ACCEL_RUN_DIR");
    for (;;) {
        int received = 0;
        if (sigwait(&request, &received) != 0)
            continue;
        while (sem_trywait(&g_captured) == 0) {
        } // an answer that came too late for an earlier request
        g_frameCount.store(0, std::memory_order_relaxed);
        int count = 0;
        if (pthread_kill(g_mainThread, captureSignal()) == 0) {
            timespec deadline{};
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += 2;
            while (sem_timedwait(&g_captured, &deadline) != 0 && errno == EINTR) {
            }
            count = g_frameCount.load(std::memory_order_acquire);
        }
        const std::string text = nativeStackJson(rank, g_frames, count) + "\n";
        if (!runDirectory || !*runDirectory) {
            std::fputs(text.c_str(), stderr);
            std::fflush(stderr);
            continue;
        }
        namespace fs = std::filesystem;
        const fs::path target = fs::path(runDirectory) / rundir::nativeStackFile(rank);
        std::error_code ignored;
        fs::create_directories(target.parent_path(), ignored);
        (void)fileutil::writeFileAtomic(target.string(), text); // readers never see a half-written file
    }
}

std::string nativeStackJson(int rank, void *const *frames, int count)
{
    nlohmann::json list = nlohmann::json::array();
    // The first two frames are the capture handler (onCapture) and the kernel's signal trampoline
    // (libc's unexported __restore_rt); the interrupted code starts at the third.
    const int first = std::min(count, 2);
    for (int i = first; i < count; ++i) {
        // A return address points after the call; look up the call itself (frame 0 excepted).
        const auto address = reinterpret_cast<std::uintptr_t>(frames[i]);
        const auto lookup = i == first ? address : address - 1;
        nlohmann::json frame{{"address", hex(address)}};
        Dl_info info{};
        if (dladdr(reinterpret_cast<void *>(lookup), &info)) {
            if (info.dli_fname) {
                frame["object"] = std::filesystem::path(info.dli_fname).filename().string();
                frame["path"] = info.dli_fname;
            }
            // From the object's load address, of the call itself: what addr2line takes.
            if (info.dli_fbase)
                frame["object_offset"] = hex(lookup - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
            if (info.dli_sname) {
                frame["function"] = demangled(info.dli_sname);
                frame["offset"] = hex(address - reinterpret_cast<std::uintptr_t>(info.dli_saddr));
            } else if (info.dli_fbase) {
                frame["offset"] = hex(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
            }
        }
        list.push_back(std::move(frame));
    }
    // CUDA runs: NCCL's own record of its collectives (cudaplugin.h), where the plugin is loaded
    // and a GPU is there.
    nlohmann::json flightRecorder;
    const runtime::CudaPlugin *cuda = runtime::cudaPlugin();
    if (cuda && cuda->ncclFlightRecorder && torch::cuda::is_available()) {
        try {
            auto parsed = jsonutil::parseJson(cuda->ncclFlightRecorder(), "NCCL flight recorder");
            flightRecorder = parsed ? *parsed : nlohmann::json{{"error", parsed.error().toString()}};
        } catch (const std::exception &error) {
            flightRecorder = nlohmann::json{{"error", error.what()}};
        }
    }
    const runtime::CollectiveState collective = runtime::currentCollective();
    nlohmann::json record{{"name", runtime::collectiveName(collective.kind)},
                          {"sequence", collective.sequence},
                          {"waiting", collective.waiting}};
    nlohmann::json document{
        {"schema", rundir::NativeStackSchema},
        {"version", rundir::NativeStackVersion},
        {"rank", rank},
        {"pid", static_cast<long long>(getpid())},
        {"collective", collective.kind == runtime::CollectiveKind::None ? nlohmann::json() : record},
        {"frames", list}};
    if (!flightRecorder.is_null())
        document["nccl_flight_recorder"] = std::move(flightRecorder);
    return document.dump();
}

} // namespace

void installStackDump()
{
    void *prime[2];
    (void)backtrace(prime, 2); // loads libgcc_s now, outside any signal handler
    if (sem_init(&g_captured, 0, 0) != 0)
        return;
    g_mainThread = pthread_self();
    struct sigaction action {};
    action.sa_handler = &onCapture;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(captureSignal(), &action, nullptr) != 0)
        return;
    sigset_t request;
    sigemptyset(&request);
    sigaddset(&request, rundir::nativeStackSignal);
    if (pthread_sigmask(SIG_BLOCK, &request, nullptr) != 0)
        return;
    std::thread(&dumpLoop).detach();
}

} // namespace accel::worker
