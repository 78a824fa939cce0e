// Command-line options of the worker's generate and infer commands (serve requests: serverequest.h).
#pragma once

#include "core/common/result.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace accel::inference {

// Intra-op threads a command line or a serve request may ask for (libtorch starts that many).
constexpr int kMaxThreads = 4096;

struct WorkerRequest {
    std::string modelDir;
    LoadOptions load;
    SamplingOptions sampling;
    std::optional<std::string> prompt;
    std::vector<int64_t> inputIds;
    std::string logitsOut;
    std::string draftDir; // --draft: speculative decoding with this model (generator.h)
    // --prompts-file / --output: batch generation, split between the processes of a launch
    // (core/worker/batchgenerate.h).
    std::string promptsFile;
    std::string outputFile;
    int draftTokens = DraftModel().tokens;
    bool pinThreads = false; // --pin-threads: each intra-op thread on its own CPU (generate)
    bool json = false;
    bool help = false;
};

// --dtype auto (generate): bfloat16 where the CPU runs it measurably faster, else the checkpoint's
// (decodebound.h's chooseDecodeDType, autoComputeDTypeMeaning).
inline constexpr const char *kAutoComputeDType = "auto";

Result<std::vector<int64_t>> parseIdList(const std::string &text);
// argv[2..]: MODEL_DIR and flags.
Result<WorkerRequest> parseWorkerArguments(int argc, char **argv);
nlohmann::json statsToJson(const GenerationStats &stats);
std::string workerHelpText();

} // namespace accel::inference
