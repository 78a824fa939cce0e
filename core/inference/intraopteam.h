// Work split over libtorch's intra-op threads from code built without -fopenmp. libtorch's CPU
// build runs its intra-op threads as libgomp's OpenMP team (at::set_num_threads sets its size), but
// at::parallel_for is inline: compiled here without -fopenmp it runs the whole range on the calling
// thread. This starts the same team through libgomp's own entry point (GOMP_parallel, looked up in
// the runtime libtorch loaded), so a team of at::get_num_threads() threads reuses libtorch's
// threads, pinned ones included (decodebound.h's pinIntraOpThreads). Includes no libtorch header.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace accel::inference {

// body(begin, end) over [0, n) in contiguous pieces of whole multiples of `align` (the last piece
// takes the rest), at least `minimum` items a piece, up to 4 a thread, on the team of
// at::get_num_threads() threads: thread t starts with piece t, then each takes the next piece left,
// so a thread held back by other processes on the same CPUs does not hold up the rest. Runs on the
// calling thread alone when one piece is enough, inside a parallel region, or without libgomp.
// body must not throw. While a OneThreadedOps scope lives, runs as sharedPieces.
void parallelPieces(int64_t n, int64_t align, int64_t minimum, const std::function<void(int64_t, int64_t)> &body);

// The same pieces without a team barrier: the calling thread and sharedThreads() - 1 helpers take
// the next piece left until none is, and the call returns when every piece is done, whether or not
// each helper has started. Inside a OneThreadedOps scope the helpers are threads of their own that
// spin on a posted product for up to 200 us after the last one they took, then sleep until the
// next (outside the scope they sleep at once), so a product's pieces are taken without a wake-up;
// otherwise they are tasks on libtorch's inter-op pool. An OpenMP team's region ends only when
// every team thread has arrived, so on a machine whose other processes hold a team thread off its
// CPU each product waits for it (measured: decode of a Llama at 2 threads ran 2.5-3x slower than at
// one thread under a load average of 6-9 on 2 cores); here the caller does that thread's share
// instead. body must not throw and is never called after this returns.
void sharedPieces(int64_t n, int64_t align, int64_t minimum, const std::function<void(int64_t, int64_t)> &body);

// The split of a decode kernel's product (floatgemv.h, bf16gemv.h) with `rows` rows of x: one row (a
// decode step) sharedPieces, without a team barrier; more (a prompt) parallelPieces, libtorch's OpenMP
// team (inside a OneThreadedOps scope that runs as sharedPieces too). Outside that scope sharedPieces'
// helper is a task of the inter-op pool, which waits for a wake-up and then for the core the team's
// thread spins on after each of the prompt's libtorch operations: the 1.1B Llama's 16-token prompt
// took 1043-1184 ms to the first token so, 696-798 ms on the team (docs/quantization.md, "Prompts
// through the decode kernel").
using Pieces = void (*)(int64_t n, int64_t align, int64_t minimum, const std::function<void(int64_t, int64_t)> &body);
Pieces piecesForRows(int64_t rows);

// The threads sharedPieces shares among: at::get_num_threads(), or the count it had when the live
// OneThreadedOps scope began.
int sharedThreads();

// sharedPieces' helper h (1 .. sharedThreads() - 1) moves the thread that runs it to
// cpus[h % cpus.size()] before it takes a piece: the CPU the intra-op team's thread h is pinned to
// (decodebound.h's pinIntraOpThreads, which calls this with the CPUs it pinned the team to, so the
// kernel has accepted each), and the caller, the team's thread 0, stays on its own. A thread moves
// only when its helper's CPU changes; otherwise a task costs one atomic load.
void pinSharedHelpers(const std::vector<int> &cpus);
// Starts the threads the helpers run on, libtorch's inter-op pool and the decode scope's
// at::get_num_threads() - 1 threads, if they are not running yet: a new thread inherits the CPUs
// of the thread that starts it, so pinIntraOpThreads calls this before it confines the caller
// (threads started later by a pinned caller would sit on the caller's CPU).
void startSharedHelpers();
// Every thread a helper moved back on `allowed` (the process's CPUs), at once; helpers
// then run wherever the pool's threads are scheduled.
void unpinSharedHelpers(const std::vector<int> &allowed);

// One decode step of one sequence reads every weight once (sharedPieces' products) and otherwise
// runs small operations. While this scope lives libtorch's intra-op threads are set to 1, so that
// those small operations (attention's products, softmax) open no OpenMP region whose end waits for
// a team thread a loaded machine holds off its CPU, and whose idle thread spins beside the products'
// helpers; the products keep the count set before (sharedThreads). Restored when it ends. Not
// nested; on the thread that runs the model.
class OneThreadedOps {
public:
    OneThreadedOps();
    ~OneThreadedOps();
    OneThreadedOps(const OneThreadedOps &) = delete;
    OneThreadedOps &operator=(const OneThreadedOps &) = delete;

private:
    int m_threads;
};

// Whether parallelPieces can start libtorch's team (libgomp is loaded in this process).
bool intraOpTeamAvailable();

// body(thread) once on each of the at::get_num_threads() threads of the team (thread 0 the caller),
// e.g. to pin them; false, running nothing, when the team cannot be started (intraOpTeamAvailable).
bool onEveryTeamThread(const std::function<void(int)> &body);

} // namespace accel::inference
