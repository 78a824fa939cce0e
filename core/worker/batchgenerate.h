// Batch generation split between the processes of a launch (Accelerate's split_between_processes):
// `accel launch --num_processes N --no_python accel generate MODEL --prompts_file F --output O`.
// Every process reads and checks every prompt (so a bad line fails all of them before any
// collective), takes its contiguous share (the first len % N processes one more), pads a short
// share with its last prompt as apply_padding does, generates, and process 0 gathers the results
// and writes one JSON line per prompt in the file's order, the padding dropped. One process alone
// does everything.
// Also the entry of pipeline-parallel generate / infer (pipelinegenerate.h), which --device_map
// pipeline (or a map naming processes) selects.
#pragma once

#include "core/common/result.h"
#include "core/inference/generator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace accel::inference {
struct WorkerRequest;
struct ModelConfig;
class TextCodec;
} // namespace accel::inference

namespace accel::worker {

int batchGenerateMain(const inference::WorkerRequest &request);

struct Prompt {
    std::string text;         // a text prompt ("" with ids)
    std::vector<int64_t> ids; // after tokenization
    bool fromIds = false;
};

// Every prompt of a prompts file, tokenized and checked against the model; errors name file:line.
Result<std::vector<Prompt>> readPrompts(const std::string &path, const inference::TextCodec &codec,
                                        const inference::ModelConfig &config,
                                        const inference::SamplingOptions &sampling);

// One line of the results file (with its newline): index, prompt (text prompts), input_ids, tokens,
// text, stop_reason, decode_tokens_per_second or error, process, and padding when it is.
std::string resultLine(size_t index, const Prompt &prompt, const Result<inference::GenerationResult> &result,
                       int process, bool padding = false);

} // namespace accel::worker
