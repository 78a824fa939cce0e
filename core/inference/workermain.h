// accel-worker's inference commands (argv[1] is the command):
//   accel-worker generate MODEL_DIR (--prompt TEXT | --input-ids 1,2,3) [options]  streams text
//   accel-worker infer MODEL_DIR --input-ids 1,2,3 --logits-out F.safetensors [options]
//   accel-worker serve   the playground's JSON-lines pipe protocol (docs/worker-protocol.md)
// Exit codes: 0 success, 2 bad input, 1 failure. Torch-light header.
#pragma once

#include <functional>
#include <string>

namespace accel::inference {

struct WorkerRequest;

bool isWorkerCommand(const std::string &command); // generate, infer, serve
// `batch` runs generate --prompts-file, and generate / infer with a pipeline --device-map
// (pipelinemap.h; infer's request has --logits-out): they need the runtime's collectives, which
// accel-worker links and this library does not.
using BatchGenerate = std::function<int(const WorkerRequest &)>;
int workerMain(int argc, char **argv, const BatchGenerate &batch = {});

} // namespace accel::inference
