#include "core/inference/intraopteam.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <vector>

namespace accel::inference {

namespace {

constexpr int64_t kPiecesPerThread = 4;

using GompParallel = void (*)(void (*)(void *), void *, unsigned, unsigned);

struct Entry {
    GompParallel parallel = nullptr;
    int (*threadNum)() = nullptr;
};

const Entry &entry()
{
    static const Entry e = [] {
        Entry found;
        found.parallel = reinterpret_cast<GompParallel>(dlsym(RTLD_DEFAULT, "GOMP_parallel"));
        found.threadNum = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_thread_num"));
        if (!found.threadNum)
            found.parallel = nullptr;
        return found;
    }();
    return e;
}

// Pieces [0, count): thread t starts with piece t, then every thread takes the next piece not yet
// taken, so that a thread the system holds back (other processes on the same CPUs) leaves its
// share to the others instead of holding up the whole product.
struct Work {
    const std::function<void(int64_t, int64_t)> *body = nullptr;
    int64_t n = 0, piece = 0, count = 0;
    std::atomic<int64_t> next{0};
    int (*threadNum)() = nullptr;
};

void runPieces(void *data)
{
    auto *work = static_cast<Work *>(data);
    for (int64_t p = work->threadNum(); p < work->count; p = work->next.fetch_add(1))
        (*work->body)(p * work->piece, std::min(work->n, (p + 1) * work->piece));
}

struct TeamWork {
    const std::function<void(int)> *body = nullptr;
    int (*threadNum)() = nullptr;
};

void runTeamMember(void *data)
{
    auto *work = static_cast<TeamWork *>(data);
    (*work->body)(work->threadNum());
}

} // namespace

bool onEveryTeamThread(const std::function<void(int)> &body)
{
    if (!entry().parallel)
        return false;
    TeamWork work{&body, entry().threadNum};
    entry().parallel(&runTeamMember, &work, unsigned(at::get_num_threads()), 0);
    return true;
}

bool intraOpTeamAvailable()
{
    return entry().parallel != nullptr;
}

namespace {

// Items per piece for `team` threads, or 0 when one piece is enough.
int64_t pieceSize(int64_t n, int64_t align, int64_t minimum, int team)
{
    align = std::max<int64_t>(align, 1);
    const int64_t units = (n + align - 1) / align;
    const int64_t minUnits = std::max<int64_t>(1, (minimum + align - 1) / align);
    const int64_t most = std::min<int64_t>(int64_t(team) * kPiecesPerThread, units / minUnits);
    if (most <= 1 || team <= 1 || at::in_parallel_region())
        return 0;
    return ((units + most - 1) / most) * align;
}

// sharedPieces' state, kept alive by every helper task (a helper that starts after the call
// returned finds no piece left and touches nothing else).
struct SharedWork {
    const std::function<void(int64_t, int64_t)> *body = nullptr;
    int64_t n = 0, piece = 0, count = 0;
    std::atomic<int64_t> next{0}, done{0};

    void take()
    {
        for (int64_t p = next.fetch_add(1); p < count; p = next.fetch_add(1)) {
            (*body)(p * piece, std::min(n, (p + 1) * piece));
            done.fetch_add(1, std::memory_order_release);
        }
    }
};

} // namespace

namespace {
std::atomic<int> g_sharedThreads{0}; // set while a OneThreadedOps scope lives
} // namespace

int sharedThreads()
{
    const int set = g_sharedThreads.load();
    return set > 0 ? set : at::get_num_threads();
}

OneThreadedOps::OneThreadedOps() : m_threads(at::get_num_threads())
{
    g_sharedThreads = m_threads;
    if (m_threads > 1)
        at::set_num_threads(1);
}

OneThreadedOps::~OneThreadedOps()
{
    if (m_threads > 1)
        at::set_num_threads(m_threads);
    g_sharedThreads = 0;
}

namespace {

// Where sharedPieces' helpers run (pinSharedHelpers): the CPUs, and the inter-op threads a helper
// moved, so that unpinning moves them back at once. Never destroyed: inter-op threads may end after
// static destructors ran.
struct HelperPins {
    std::mutex mutex;
    std::vector<int> cpus;               // empty: not pinned
    std::atomic<uint64_t> generation{0}; // bumped by every pin and unpin
    std::vector<pthread_t> moved;
};

HelperPins &helperPins()
{
    static auto *pins = new HelperPins;
    return *pins;
}

cpu_set_t cpuSet(const std::vector<int> &cpus)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus)
        if (cpu >= 0 && cpu < CPU_SETSIZE)
            CPU_SET(cpu, &set);
    return set;
}

// This inter-op thread's place: the generation it last looked at, the CPU it moved to (-1: none).
struct HelperThread {
    uint64_t generation = 0;
    int helper = 0, cpu = -1;
    ~HelperThread()
    {
        if (cpu < 0)
            return;
        HelperPins &pins = helperPins();
        std::lock_guard<std::mutex> lock(pins.mutex);
        pins.moved.erase(std::remove_if(pins.moved.begin(), pins.moved.end(),
                                        [](pthread_t t) { return pthread_equal(t, pthread_self()) != 0; }),
                         pins.moved.end());
    }
};
thread_local HelperThread t_helperThread;

// Before helper `helper` takes a piece on this thread.
void placeHelper(int helper)
{
    HelperPins &pins = helperPins();
    HelperThread &mine = t_helperThread;
    const uint64_t generation = pins.generation.load(std::memory_order_acquire);
    if (generation == mine.generation && (mine.cpu < 0 || mine.helper == helper))
        return; // unchanged since this thread last looked (unpinned: any helper runs anywhere)
    std::lock_guard<std::mutex> lock(pins.mutex);
    mine.generation = pins.generation.load();
    mine.helper = helper;
    const bool listed = std::any_of(pins.moved.begin(), pins.moved.end(),
                                    [](pthread_t t) { return pthread_equal(t, pthread_self()) != 0; });
    if (!listed)
        mine.cpu = -1; // never moved, or unpinSharedHelpers moved it back since
    if (pins.cpus.empty())
        return;
    const int cpu = pins.cpus[size_t(helper) % pins.cpus.size()];
    if (cpu == mine.cpu)
        return;
    const cpu_set_t one = cpuSet({cpu});
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
        return; // the team's thread `helper` was accepted on this CPU; left where it is if not
    if (mine.cpu < 0)
        pins.moved.push_back(pthread_self());
    mine.cpu = cpu;
}

} // namespace

void pinSharedHelpers(const std::vector<int> &cpus)
{
    HelperPins &pins = helperPins();
    std::lock_guard<std::mutex> lock(pins.mutex);
    pins.cpus = cpus;
    pins.generation.fetch_add(1, std::memory_order_release);
}

void startSharedHelpers()
{
    at::launch([] {}); // the first task starts the pool
}

void unpinSharedHelpers(const std::vector<int> &allowed)
{
    HelperPins &pins = helperPins();
    std::lock_guard<std::mutex> lock(pins.mutex);
    const cpu_set_t mask = cpuSet(allowed);
    for (pthread_t thread : pins.moved)
        pthread_setaffinity_np(thread, sizeof mask, &mask);
    pins.moved.clear();
    pins.cpus.clear();
    pins.generation.fetch_add(1, std::memory_order_release);
}

void sharedPieces(int64_t n, int64_t align, int64_t minimum, const std::function<void(int64_t, int64_t)> &body)
{
    if (n <= 0)
        return;
    const int team = sharedThreads();
    const int64_t piece = pieceSize(n, align, minimum, team);
    if (piece == 0) {
        body(0, n);
        return;
    }
    auto work = std::make_shared<SharedWork>();
    work->body = &body;
    work->n = n;
    work->piece = piece;
    work->count = (n + piece - 1) / piece;
    for (int helper = 1; helper < team; ++helper)
        at::launch([work, helper] {
            placeHelper(helper);
            work->take();
        });
    work->take();
    while (work->done.load(std::memory_order_acquire) < work->count) // pieces a helper holds
        std::this_thread::yield();
}

void parallelPieces(int64_t n, int64_t align, int64_t minimum, const std::function<void(int64_t, int64_t)> &body)
{
    if (n <= 0)
        return;
    if (g_sharedThreads.load() > 0) // one-sequence decode: libtorch's team is down to 1 thread
        return sharedPieces(n, align, minimum, body);
    const int team = at::get_num_threads();
    const int64_t piece = pieceSize(n, align, minimum, team);
    if (piece == 0 || !entry().parallel) {
        body(0, n);
        return;
    }
    Work work;
    work.body = &body;
    work.n = n;
    work.piece = piece;
    work.count = (n + work.piece - 1) / work.piece;
    work.next = team;
    work.threadNum = entry().threadNum;
    // The whole team, as libtorch starts it (a team of another size would make libgomp rebuild its
    // pool).
    entry().parallel(&runPieces, &work, unsigned(team), 0);
}

} // namespace accel::inference
