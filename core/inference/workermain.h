// accel-worker's inference commands (argv[1] is the command):
//   accel-worker generate MODEL_DIR (--prompt TEXT | --input-ids 1,2,3) [options]  streams text
//   accel-worker infer MODEL_DIR --input-ids 1,2,3 --logits-out F.safetensors [options]
//   accel-worker serve   the playground's JSON-lines pipe protocol (docs/worker-protocol.md)
// Exit codes: 0 success, 2 bad input, 1 failure. Torch-light header.
#pragma once

#include <string>

namespace accel::inference {

bool isWorkerCommand(const std::string &command); // generate, infer, serve
int workerMain(int argc, char **argv);

} // namespace accel::inference
