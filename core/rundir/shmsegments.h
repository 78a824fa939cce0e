// The shared-memory segments a rank creates (the gradient all-reduce of ranks on one host) are
// named after the creating process, so that whoever outlives it can remove what it left: a rank
// killed between creating a segment and unlinking it would otherwise leak it in /dev/shm until
// the machine reboots. The runtime names segments with allReduceSegmentName(); the supervisor
// calls removeSegmentsOf() for every rank once the rank has exited.
#pragma once

#include <cstdint>
#include <string>

namespace accel::rundir {

// "/accel-allreduce-<pid>-<nonce>": the name for shm_open.
std::string allReduceSegmentName(std::int64_t pid, std::uint64_t nonce);
// Unlinks every segment allReduceSegmentName() gives for this pid (any nonce). Only call it for a
// process that has exited. Returns how many were removed.
int removeSegmentsOf(std::int64_t pid);

// The sweep for what the supervisor and its reaper could not remove (every process of a run killed
// at once): unlinks each allReduceSegmentName() segment that belongs to this process's effective
// uid and whose creating pid is provably gone: no live process has that pid (none, or a zombie), or
// the process that has it started more than 2 s after the segment was made (the pid was reused). Never another user's,
// never one whose creator may live. `accel launch` and `accel runs` call it. Returns how many were removed.
int removeSegmentsOfDeadProcesses();

} // namespace accel::rundir
