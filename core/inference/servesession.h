// `accel-worker serve`: the playground's JSON-lines pipe protocol (docs/worker-protocol.md).
// Requests on `in` (load, generate, cancel, unload, shutdown), events on `out`. A reader thread
// takes cancel requests while a generation runs on the calling thread.
#pragma once

#include <iosfwd>

namespace accel::inference {

// Returns the process exit code (0 after shutdown or end of input). Once per process: the session
// and its reader thread live until the process exits.
int runServe(std::istream &in, std::ostream &out);

} // namespace accel::inference
