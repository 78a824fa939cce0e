// Command-line and JSON options shared by the worker's generate, infer and serve commands.
#pragma once

#include "core/common/result.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace accel::inference {

struct WorkerRequest {
    std::string modelDir;
    LoadOptions load;
    SamplingOptions sampling;
    std::optional<std::string> prompt;
    std::vector<int64_t> inputIds;
    std::string logitsOut;
    bool json = false;
    bool help = false;
};

Result<std::vector<int64_t>> parseIdList(const std::string &text);
// argv[2..]: MODEL_DIR and flags.
Result<WorkerRequest> parseWorkerArguments(int argc, char **argv);
// Sampling fields of a serve "generate" message.
Result<SamplingOptions> samplingFromJson(const nlohmann::json &message);
Result<LoadOptions> loadOptionsFromJson(const nlohmann::json &message);
nlohmann::json statsToJson(const GenerationStats &stats);
std::string workerHelpText();

} // namespace accel::inference
