#include "core/inference/intraopteam.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
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

Pieces piecesForRows(int64_t rows)
{
    return rows > 1 ? &parallelPieces : &sharedPieces;
}

int sharedThreads()
{
    const int set = g_sharedThreads.load();
    return set > 0 ? set : at::get_num_threads();
}

namespace {
void wakeSpinTeam(int helpers);
void sleepSpinTeam();
bool spinTeamPieces(int team, int64_t n, int64_t piece, const std::function<void(int64_t, int64_t)> &body);
void startSpinTeam(int helpers);
} // namespace

OneThreadedOps::OneThreadedOps() : m_threads(at::get_num_threads())
{
    g_sharedThreads = m_threads;
    if (m_threads > 1) {
        at::set_num_threads(1);
        wakeSpinTeam(m_threads - 1);
    }
}

OneThreadedOps::~OneThreadedOps()
{
    if (m_threads > 1) {
        sleepSpinTeam();
        at::set_num_threads(m_threads);
    }
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

namespace {

// One-sequence decode's helpers (OneThreadedOps): threads of their own, helper h on the CPU
// pinSharedHelpers names for it, that spin on a posted product for kSpinFor after the last one
// they saw, then sleep until the next; a product posted inside the scope is taken at once instead
// of after a wake-up (a condition variable or the inter-op pool's queue costs tens of
// microseconds a product, and the caller took most pieces before a helper woke). Outside the scope
// they sleep. Never destroyed: its threads outlive static destructors.
constexpr auto kSpinFor = std::chrono::microseconds(200);

// The posted product's word: generation (32 bits), pieces (16 bits), next piece (16 bits). A piece
// is taken by moving "next" on in the generation that posted it, so a helper late for a product
// can take nothing of the next one, and a taken piece keeps its product's fields unchanged until
// it is done (the caller waits for it).
constexpr uint64_t generationOf(uint64_t word)
{
    return word >> 32;
}
constexpr int64_t countOf(uint64_t word)
{
    return int64_t((word >> 16) & 0xffff);
}
constexpr int64_t nextOf(uint64_t word)
{
    return int64_t(word & 0xffff);
}
constexpr int64_t kMostPieces = 0xffff;

struct SpinTeam {
    std::atomic<uint64_t> word{0};
    const std::function<void(int64_t, int64_t)> *body = nullptr;
    int64_t n = 0, piece = 0;
    std::atomic<int64_t> done{0};
    std::atomic<int> awake{0};     // helpers that spin: those of the live scope, 0 outside it
    std::atomic<int> sleepers{0};  // helpers about to sleep or sleeping
    std::atomic<bool> busy{false}; // a product is posted (one caller at a time)
    std::mutex mutex;              // the threads below, and sleeping
    std::condition_variable wake;
    int started = 0;

    // Takes and runs pieces of the product `word` posted, while any is left; whether it ran one.
    bool take(uint64_t word, int helper)
    {
        bool ran = false;
        const uint64_t generation = generationOf(word);
        while (generationOf(word) == generation && nextOf(word) < countOf(word)) {
            if (!this->word.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
                continue; // word reloaded: another piece taken, or the next product posted
            if (!ran && helper > 0)
                placeHelper(helper);
            ran = true;
            const int64_t p = nextOf(word);
            (*body)(p * piece, std::min(n, (p + 1) * piece));
            done.fetch_add(1, std::memory_order_release);
            ++word;
        }
        return ran;
    }

    void run(int helper, uint64_t seen);
};

SpinTeam &spinTeam()
{
    static auto *team = new SpinTeam;
    return *team;
}

inline void relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
}

// `seen`: the last product posted before the helper was started. (Read when the thread first runs
// instead, a product posted in between would count as seen: the caller, posting right after
// starting its helpers, would be left to run it alone.)
void SpinTeam::run(int helper, uint64_t seen)
{
    for (;;) {
        auto until = std::chrono::steady_clock::now() + kSpinFor;
        for (int spins = 0;; ++spins) {
            uint64_t w = word.load(std::memory_order_acquire);
            if (generationOf(w) != seen) {
                seen = generationOf(w);
                if (helper <= awake.load(std::memory_order_relaxed))
                    take(w, helper);
                until = std::chrono::steady_clock::now() + kSpinFor;
                continue;
            }
            if (helper > awake.load(std::memory_order_relaxed))
                break; // the scope ended (or wants fewer helpers): sleep now
            if ((spins & 63) == 63 && std::chrono::steady_clock::now() > until)
                break;
            relax();
        }
        sleepers.fetch_add(1);
        {
            std::unique_lock<std::mutex> lock(mutex);
            wake.wait(lock, [&] { return generationOf(word.load()) != seen && helper <= awake.load(); });
        }
        sleepers.fetch_sub(1);
    }
}

void startSpinTeam(int helpers)
{
    SpinTeam &team = spinTeam();
    std::lock_guard<std::mutex> lock(team.mutex);
    for (; team.started < helpers; ++team.started) {
        std::thread thread(
            [helper = team.started + 1, seen = generationOf(team.word.load())] { spinTeam().run(helper, seen); });
        pthread_setname_np(thread.native_handle(), "accel-helper");
        thread.detach();
    }
}

void wakeSpinTeam(int helpers)
{
    startSpinTeam(helpers);
    spinTeam().awake.store(helpers);
}

void sleepSpinTeam()
{
    spinTeam().awake.store(0); // spinning helpers see it at their next turn and sleep
}

// sharedPieces on the spinning helpers, while a scope lives and has them (false otherwise).
bool spinTeamPieces(int team, int64_t n, int64_t piece, const std::function<void(int64_t, int64_t)> &body)
{
    SpinTeam &spin = spinTeam();
    const int64_t count = (n + piece - 1) / piece;
    if (count > kMostPieces || spin.awake.load(std::memory_order_relaxed) < team - 1 || team <= 1)
        return false;
    if (spin.busy.exchange(true, std::memory_order_acquire))
        return false; // another thread's product holds the helpers
    spin.body = &body;
    spin.n = n;
    spin.piece = piece;
    spin.done.store(0, std::memory_order_relaxed);
    const uint64_t generation = generationOf(spin.word.load(std::memory_order_relaxed)) + 1;
    const uint64_t posted = (generation << 32) | (uint64_t(count) << 16);
    spin.word.store(posted); // sequentially consistent with `sleepers` below: no lost wake-up
    if (spin.sleepers.load() > 0) {
        std::lock_guard<std::mutex> lock(spin.mutex);
        spin.wake.notify_all();
    }
    spin.take(posted, 0);
    while (spin.done.load(std::memory_order_acquire) < count) // pieces a helper holds
        relax();
    spin.busy.store(false, std::memory_order_release);
    return true;
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
    startSpinTeam(at::get_num_threads() - 1);
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
    if (spinTeamPieces(team, n, piece, body))
        return;
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
