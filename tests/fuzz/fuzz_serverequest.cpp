// Fuzz target: the input of an `accel-worker serve` session (docs/worker-protocol.md), read line
// by line and parsed as the worker does (core/inference/serverequest.h). Every line is a request or
// an error; every answer the worker would write serializes, an error says what is wrong, and an
// accepted request written back as JSON reads back the same. A small line limit stands in for the
// worker's 64 MiB so that over-long lines are exercised.
#include "core/inference/serverequest.h"
#include "core/inference/workeroptions.h"

#include <cstdint>
#include <cstdlib>
#include <sstream>

using namespace accel;
using namespace accel::inference;

namespace {

constexpr size_t kLineLimit = 4096;

// The worker writes each answer with json::dump(); one that throws would end the worker.
void mustSerialize(const nlohmann::ordered_json &event)
{
    try {
        (void)event.dump();
    } catch (const nlohmann::json::exception &) {
        std::abort();
    }
}

void checkError(const ServeRequestError &refused)
{
    if (refused.error.message.empty() || refused.error.code != ErrorCode::InvalidInput)
        std::abort();
    mustSerialize({{"event", "error"},
                   {"id", refused.id},
                   {"code", errorCodeName(refused.error.code)},
                   {"message", refused.error.toString()}});
}

// An accepted request written back as the protocol's JSON (what the studio would send).
nlohmann::json toJson(const ServeRequest &r)
{
    static const char *names[] = {"load", "generate", "cancel", "unload", "shutdown"};
    nlohmann::json j{{"op", names[static_cast<int>(r.op)]}, {"id", r.id}};
    if (r.op == ServeOp::Load) {
        j["model"] = r.modelDir;
        j["device_map"] = r.load.deviceMap;
        j["max_memory"] = r.load.maxMemory;
        j["offload_folder"] = r.load.dispatch.offloadFolder;
        j["dtype"] = r.load.dispatch.computeDType;
        j["threads"] = r.load.threads;
    } else if (r.op == ServeOp::Generate) {
        if (r.prompt)
            j["prompt"] = *r.prompt;
        else
            j["input_ids"] = r.inputIds;
        const SamplingOptions &o = r.sampling;
        j["max_new_tokens"] = o.maxNewTokens;
        j["greedy"] = o.greedy;
        j["temperature"] = o.temperature;
        j["top_k"] = o.topK;
        j["top_p"] = o.topP;
        j["repetition_penalty"] = o.repetitionPenalty;
        j["seed"] = o.seed;
        j["stop"] = o.stopStrings;
        j["stop_token_ids"] = o.stopTokenIds;
    }
    return j;
}

void checkRequest(const ServeRequest &request)
{
    mustSerialize({{"event", "unloaded"}, {"id", request.id}});
    if (request.op == ServeOp::Load &&
        (request.modelDir.empty() || request.load.threads < 0 || request.load.threads > kMaxThreads))
        std::abort();
    if (request.op == ServeOp::Generate && request.prompt && !request.inputIds.empty())
        std::abort();
    // Written back and read again, the request is the same.
    const ServeRequestResult again = parseServeRequest(toJson(request).dump());
    if (!again || again->op != request.op || again->id != request.id || again->modelDir != request.modelDir ||
        again->load.threads != request.load.threads || again->load.deviceMap != request.load.deviceMap ||
        again->prompt != request.prompt || again->inputIds != request.inputIds ||
        again->sampling.maxNewTokens != request.sampling.maxNewTokens ||
        again->sampling.temperature != request.sampling.temperature || again->sampling.topK != request.sampling.topK ||
        again->sampling.topP != request.sampling.topP || again->sampling.seed != request.sampling.seed ||
        again->sampling.stopStrings != request.sampling.stopStrings ||
        again->sampling.stopTokenIds != request.sampling.stopTokenIds)
        std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
    std::string line;
    bool tooLong = false;
    while (readServeRequestLine(in, line, tooLong, kLineLimit)) {
        if (line.size() > kLineLimit)
            std::abort();
        if (tooLong) {
            checkError(serveLineTooLong(kLineLimit));
            continue;
        }
        if (isBlankServeLine(line))
            continue;
        const ServeRequestResult request = parseServeRequest(line);
        if (request)
            checkRequest(*request);
        else
            checkError(request.error());
    }
    return 0;
}
