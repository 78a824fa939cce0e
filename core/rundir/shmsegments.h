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

} // namespace accel::rundir
