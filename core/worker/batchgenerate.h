// Batch generation split between the processes of a launch (Accelerate's split_between_processes):
// `accel launch --num_processes N --no_python accel generate MODEL --prompts_file F --output O`.
// Every process reads and checks every prompt (so a bad line fails all of them before any
// collective), takes its contiguous share (the first len % N processes one more), pads a short
// share with its last prompt as apply_padding does, generates, and process 0 gathers the results
// and writes one JSON line per prompt in the file's order, the padding dropped. One process alone
// does everything.
#pragma once

namespace accel::inference {
struct WorkerRequest;
}

namespace accel::worker {

int batchGenerateMain(const inference::WorkerRequest &request);

} // namespace accel::worker
