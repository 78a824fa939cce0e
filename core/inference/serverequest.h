// Requests of `accel-worker serve` (docs/worker-protocol.md): one line of JSON read, checked and
// turned into a ServeRequest without libtorch, so the session that runs requests and the fuzz
// target (tests/fuzz/fuzz_serverequest.cpp) go through the same code.
#pragma once

#include "core/common/result.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace accel::inference {

// A prompt of several megabytes is plausible; a request line beyond this is not.
constexpr size_t kMaxServeRequestBytes = size_t(64) << 20;

enum class ServeOp { Load, Generate, Cancel, Unload, Shutdown };

struct ServeRequest {
    ServeOp op = ServeOp::Shutdown;
    nlohmann::json id; // any JSON value, echoed in the events the request causes; null when absent
    // load
    std::string modelDir;
    LoadOptions load;        // "dtype" may be "auto" (chooseModelDecodeDType decides at load)
    bool pinThreads = false; // "pin_threads": each intra-op thread on its own allowed CPU
    // generate: the prompt as text (needs the model's tokenizer) or as token ids
    std::optional<std::string> prompt;
    std::vector<int64_t> inputIds;
    SamplingOptions sampling;
};

// A line that is not a request: what is wrong with it, and its id when one could be read.
struct ServeRequestError {
    nlohmann::json id;
    Error error;
};

using ServeRequestResult = tl::expected<ServeRequest, ServeRequestError>;

// Reads one line of at most maxBytes (without its newline) into `line`; a longer one is skipped
// to its newline and `tooLong` set. False at the end of the input.
bool readServeRequestLine(std::istream &in, std::string &line, bool &tooLong, size_t maxBytes = kMaxServeRequestBytes);
// The error a line over maxBytes is answered with.
ServeRequestError serveLineTooLong(size_t maxBytes = kMaxServeRequestBytes);
// Spaces, tabs and carriage returns only: no request, no answer.
bool isBlankServeLine(std::string_view line);

ServeRequestResult parseServeRequest(std::string_view line);

} // namespace accel::inference
