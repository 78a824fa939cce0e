// The project's own programs, found one way everywhere: accel, the studio, accel env, the
// Playground and the benchmarks start the same accel-worker that accel launch runs.
#pragma once

#include <string>

namespace accel {

// Overrides where accel-worker is (tests, a worker built elsewhere).
inline constexpr const char *workerProgramVariable = "ACCEL_WORKER_PROGRAM";

// The folder of the running program (from /proc/self/exe), "" when unknown.
std::string runningProgramDir();

// $ACCEL_WORKER_PROGRAM when set, else accel-worker beside the running program.
std::string workerProgramPath();

// The Python that runs a script: PYTHON_EXEC when set (as torchrun and accelerate launch read it),
// else the one the user chose, else python3 on the PATH.
inline constexpr const char *pythonProgramVariable = "PYTHON_EXEC";
inline constexpr const char *defaultPython = "python3";
std::string scriptPython(const std::string &chosen, const char *pythonExec);

} // namespace accel
