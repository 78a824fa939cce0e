#include "core/inference/intraopteam.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <dlfcn.h>

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

void parallelPieces(int64_t n, int64_t align, int64_t minimum, const std::function<void(int64_t, int64_t)> &body)
{
    if (n <= 0)
        return;
    align = std::max<int64_t>(align, 1);
    const int64_t units = (n + align - 1) / align;
    const int64_t minUnits = std::max<int64_t>(1, (minimum + align - 1) / align);
    const int team = at::get_num_threads();
    const int64_t most = std::min<int64_t>(int64_t(team) * kPiecesPerThread, units / minUnits);
    if (most <= 1 || team <= 1 || at::in_parallel_region() || !entry().parallel) {
        body(0, n);
        return;
    }
    Work work;
    work.body = &body;
    work.n = n;
    work.piece = ((units + most - 1) / most) * align;
    work.count = (n + work.piece - 1) / work.piece;
    work.next = team;
    work.threadNum = entry().threadNum;
    // The whole team, as libtorch starts it (a team of another size would make libgomp rebuild its
    // pool).
    entry().parallel(&runPieces, &work, unsigned(team), 0);
}

} // namespace accel::inference
