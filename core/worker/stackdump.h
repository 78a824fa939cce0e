// A native rank's answer to the hang autopsy (docs/hang-autopsy.md): `accel stack`
// sends rundir::nativeStackSignal to accel-worker, which writes its main thread's stack
// (symbolised) and the collective it waits in with that collective's sequence number
// (core/runtime/collectiverecord.h) to <run>/stacks/rank<N>.native.json (schema
// accel.native-stack), or to stderr (the rank's log) when it runs outside a run directory.
#pragma once

#include <string>

namespace accel::worker {

// Installs the handler. Call from main() before any thread starts: the request signal is blocked
// in the calling thread, so every thread created afterwards inherits the block and only the
// dumping thread receives it.
void installStackDump();

} // namespace accel::worker
