// Work split over libtorch's intra-op threads from code built without -fopenmp. libtorch's CPU
// build runs its intra-op threads as libgomp's OpenMP team (at::set_num_threads sets its size), but
// at::parallel_for is inline: compiled here without -fopenmp it runs the whole range on the calling
// thread. This starts the same team through libgomp's own entry point (GOMP_parallel, looked up in
// the runtime libtorch loaded), so a team of at::get_num_threads() threads reuses libtorch's
// threads, pinned ones included (decodebound.h's pinIntraOpThreads). Includes no libtorch header.
#pragma once

#include <cstdint>
#include <functional>

namespace accel::inference {

// body(begin, end) over [0, n) in contiguous pieces of whole multiples of `align` (the last piece
// takes the rest), at least `minimum` items a piece, up to 4 a thread, on the team of
// at::get_num_threads() threads: thread t starts with piece t, then each takes the next piece left,
// so a thread held back by other processes on the same CPUs does not hold up the rest. Runs on the
// calling thread alone when one piece is enough, inside a parallel region, or without libgomp.
// body must not throw.
void parallelPieces(int64_t n, int64_t align, int64_t minimum, const std::function<void(int64_t, int64_t)> &body);

// Whether parallelPieces can start libtorch's team (libgomp is loaded in this process).
bool intraOpTeamAvailable();

// body(thread) once on each of the at::get_num_threads() threads of the team (thread 0 the caller),
// e.g. to pin them; false, running nothing, when the team cannot be started (intraOpTeamAvailable).
bool onEveryTeamThread(const std::function<void(int)> &body);

} // namespace accel::inference
