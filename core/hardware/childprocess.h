// Runs a short-lived helper program (python3, accel-worker, nvidia-smi) to completion with a
// timeout, capturing stdout and stderr. Qt-free (posix_spawn + poll), for the core libraries.
#pragma once

#include "core/common/result.h"

#include <string>
#include <vector>

namespace accel::hardware {

struct ChildOutput {
    int exitCode = -1; // -1 when killed by a signal
    int signal = 0;    // the terminating signal, 0 when it exited
    std::string out;
    std::string err;
};

// `program` is looked up on PATH when it has no '/'. Fails with NotFound when it cannot be
// started and Timeout when it runs longer than timeoutMs (it is then killed with SIGKILL).
// Output beyond maxOutputBytes per stream is dropped.
Result<ChildOutput> runChild(const std::string &program, const std::vector<std::string> &arguments, int timeoutMs,
                             size_t maxOutputBytes = 4 << 20);

// The full path of `program` on PATH, or "" when it is not there.
std::string findOnPath(const std::string &program);

} // namespace accel::hardware
