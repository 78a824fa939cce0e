// accel-worker merge-lora BASE ADAPTER OUT [--dtype D] [--max-shard-size S] [--json]: the command
// `accel merge-lora` hands over to (docs/finetune.md). Torch-free header.
#pragma once

namespace accel::worker {

// argv[1] is "merge-lora". Returns the exit code (0, 2 bad input, 1 failure).
int mergeLoraMain(int argc, char **argv);

} // namespace accel::worker
