#include "core/inference/workeroptions.h"

#include "core/inference/decodebound.h"

#include <climits>
#include <cstdint>
#include <sstream>

namespace accel::inference {

namespace {

Result<double> toNumber(const std::string &flag, const std::string &value)
{
    try {
        size_t used = 0;
        const double v = std::stod(value, &used);
        if (used == value.size())
            return v;
    } catch (const std::exception &) {
    }
    return makeError(ErrorCode::InvalidInput, flag + ": expected a number; got '" + value + "'");
}

Result<int64_t> toInteger(const std::string &flag, const std::string &value, int64_t low = INT64_MIN,
                          int64_t high = INT64_MAX)
{
    try {
        size_t used = 0;
        const long long v = std::stoll(value, &used);
        if (used == value.size() && v >= low && v <= high)
            return static_cast<int64_t>(v);
    } catch (const std::exception &) {
    }
    if (low == INT64_MIN && high == INT64_MAX)
        return makeError(ErrorCode::InvalidInput, flag + ": expected an integer; got '" + value + "'");
    return makeError(ErrorCode::InvalidInput, flag + ": expected an integer from " + std::to_string(low) + " to " +
                                                  std::to_string(high) + "; got '" + value + "'");
}

// A seed: 0 .. 2^64-1, as the serve protocol's "seed" (no sign, no wrap-around).
Result<uint64_t> toSeed(const std::string &flag, const std::string &value)
{
    try {
        size_t used = 0;
        const unsigned long long v = std::stoull(value, &used);
        if (used == value.size() && !value.empty() && value.find('-') == std::string::npos)
            return static_cast<uint64_t>(v);
    } catch (const std::exception &) {
    }
    return makeError(ErrorCode::InvalidInput,
                     flag + ": expected an integer from 0 to " + std::to_string(UINT64_MAX) + "; got '" + value + "'");
}

// `text` as the help's continuation lines: words filled up to column 100, each line indented to the
// options' descriptions (column 31).
std::string helpContinuation(const std::string &text)
{
    constexpr size_t kIndent = 31, kWidth = 100;
    std::istringstream words(text);
    std::string out, line, word;
    while (words >> word) {
        if (!line.empty() && kIndent + line.size() + 1 + word.size() > kWidth) {
            out += std::string(kIndent, ' ') + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    return line.empty() ? out : out + std::string(kIndent, ' ') + line + "\n";
}

} // namespace

std::string workerHelpText()
{
    return "usage: accel-worker generate MODEL_DIR (--prompt TEXT | --input-ids 1,2,3) [options]\n"
           "       accel-worker infer MODEL_DIR --input-ids 1,2,3 --logits-out FILE.safetensors [options]\n"
           "       accel-worker serve\n"
           "options:\n"
           "  --device-map MAP             cpu, auto, balanced, balanced_low_0, sequential, a JSON object of\n"
           "                               module -> cpu | disk | GPU index, or a file holding one (accel\n"
           "                               device-map --json writes one); \"disk\" offloads through mapped weights\n"
           "  --max-memory SPEC            budgets for a strategy, e.g. cpu=8GiB,disk=100GiB\n"
           "  --gpus-on-cpu                run what the map puts on GPU indices on the CPU (a map planned for\n"
           "                               another machine; cpu entries stay offloaded as beside a GPU)\n"
           "  --offload-folder DIR         Accelerate offload folder for disk weights\n"
           "  --adapter DIR                a LoRA adapter in peft's layout (adapter_config.json + "
           "adapter_model.safetensors)\n"
           "  --dtype float32|bfloat16|float16|auto  compute dtype (default: the checkpoint's)\n" +
           helpContinuation("auto, generate only: " + autoComputeDTypeMeaning() + "; said in the output") +
           "  --threads N                  intra-op threads\n"
           "  --pin-threads                generate: each intra-op thread on its own CPU (reported)\n"
           "  --quantization int8|nf4|fp4  quantize the Linear layers on load (bitsandbytes' formats)\n"
           "  --skip-modules A,B           modules left unquantized (default: lm_head and tied embeddings)\n"
           "  --keep-in-fp32-modules A,B   modules kept in float32, unquantized\n"
           "  --prompts-file FILE          generate for every prompt of FILE (.txt: one per line; .jsonl:\n"
           "                               {\"prompt\": ..} or {\"input_ids\": [..]} per line), split between\n"
           "                               the processes of accel launch; needs --output\n"
           "  --output FILE.jsonl          one result per prompt, in the prompts' order\n"
           "  --prefill-chunk N            prefill the prompt N tokens at a time (default: all at once)\n"
           "  --draft DIR                  speculative decoding: a small model of the same tokenizer proposes\n"
           "                               tokens, the model checks them (greedy only; same tokens as without)\n"
           "  --draft-tokens N (4)         tokens the draft proposes per step\n"
           "  --max-new-tokens N (32)  --greedy  --temperature T (1.0)  --top-k K  --top-p P\n"
           "  --repetition-penalty R  --seed S  --stop STRING (repeatable)  --stop-token-id ID (repeatable)\n"
           "  --json                       print one accel.generate / accel.infer object at the end\n";
}

Result<std::vector<int64_t>> parseIdList(const std::string &text)
{
    std::vector<int64_t> ids;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        auto value = toInteger("--input-ids", item);
        if (!value)
            return tl::unexpected(value.error());
        ids.push_back(*value);
    }
    if (ids.empty())
        return makeError(ErrorCode::InvalidInput, "--input-ids: expected comma-separated token ids such as 1,2,3");
    return ids;
}

Result<WorkerRequest> parseWorkerArguments(int argc, char **argv)
{
    WorkerRequest r;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> Result<std::string> {
            if (i + 1 >= argc)
                return makeError(ErrorCode::InvalidInput, arg + ": missing value");
            return std::string(argv[++i]);
        };
#define ACCEL_VALUE(var)                                                                                               \
    auto var = value();                                                                                                \
    if (!var)                                                                                                          \
        return tl::unexpected(var.error());
        if (arg == "--help" || arg == "-h") {
            r.help = true;
        } else if (arg == "--json") {
            r.json = true;
        } else if (arg == "--greedy") {
            r.sampling.greedy = true;
        } else if (arg == "--gpus-on-cpu") {
            r.load.dispatch.gpusOnCpu = true;
        } else if (arg == "--pin-threads") {
            r.pinThreads = true;
        } else if (arg == "--prompt") {
            ACCEL_VALUE(v) r.prompt = *v;
        } else if (arg == "--input-ids") {
            ACCEL_VALUE(v) auto ids = parseIdList(*v);
            if (!ids)
                return tl::unexpected(ids.error());
            r.inputIds = *ids;
        } else if (arg == "--logits-out") {
            ACCEL_VALUE(v) r.logitsOut = *v;
        } else if (arg == "--device-map") {
            ACCEL_VALUE(v) r.load.deviceMap = *v;
        } else if (arg == "--max-memory") {
            ACCEL_VALUE(v) r.load.maxMemory = *v;
        } else if (arg == "--adapter") {
            ACCEL_VALUE(v) r.load.adapterDir = *v;
        } else if (arg == "--prompts-file") {
            ACCEL_VALUE(v) r.promptsFile = *v;
        } else if (arg == "--output") {
            ACCEL_VALUE(v) r.outputFile = *v;
        } else if (arg == "--prefill-chunk") {
            ACCEL_VALUE(v) auto n = toInteger(arg, *v, 0, INT_MAX);
            if (!n)
                return tl::unexpected(n.error());
            r.sampling.prefillChunk = static_cast<int>(*n);
        } else if (arg == "--draft") {
            ACCEL_VALUE(v) r.draftDir = *v;
        } else if (arg == "--draft-tokens") {
            ACCEL_VALUE(v) auto n = toInteger(arg, *v, 1, kMaxDraftTokens);
            if (!n)
                return tl::unexpected(n.error());
            r.draftTokens = static_cast<int>(*n);
        } else if (arg == "--offload-folder") {
            ACCEL_VALUE(v) r.load.dispatch.offloadFolder = *v;
        } else if (arg == "--quantization") {
            ACCEL_VALUE(v) auto method = parseQuantizationMethod(*v);
            if (!method)
                return tl::unexpected(method.error());
            r.load.quantization.method = *method;
        } else if (arg == "--skip-modules" || arg == "--keep-in-fp32-modules") {
            ACCEL_VALUE(v) std::vector<std::string> names;
            std::stringstream in(*v);
            for (std::string name; std::getline(in, name, ',');)
                if (!name.empty())
                    names.push_back(name);
            if (arg == "--skip-modules")
                r.load.quantization.skipModules = names;
            else
                r.load.quantization.keepInFp32Modules = names;
        } else if (arg == "--dtype") {
            ACCEL_VALUE(v) r.load.dispatch.computeDType = *v;
        } else if (arg == "--stop") {
            ACCEL_VALUE(v) r.sampling.stopStrings.push_back(*v);
        } else if (arg == "--seed") {
            ACCEL_VALUE(v) auto n = toSeed(arg, *v);
            if (!n)
                return tl::unexpected(n.error());
            r.sampling.seed = *n;
        } else if (arg == "--threads" || arg == "--max-new-tokens" || arg == "--top-k" || arg == "--stop-token-id") {
            // Each within its option's type: a narrowing cast would run with another number.
            const bool isInt = arg != "--stop-token-id";
            ACCEL_VALUE(v)
            auto n = toInteger(arg, *v,
                               arg == "--threads" ? 0
                               : isInt            ? INT_MIN
                                                  : INT64_MIN,
                               arg == "--threads" ? kMaxThreads
                               : isInt            ? INT_MAX
                                                  : INT64_MAX);
            if (!n)
                return tl::unexpected(n.error());
            if (arg == "--threads")
                r.load.threads = static_cast<int>(*n);
            else if (arg == "--max-new-tokens")
                r.sampling.maxNewTokens = static_cast<int>(*n);
            else if (arg == "--top-k")
                r.sampling.topK = static_cast<int>(*n);
            else
                r.sampling.stopTokenIds.push_back(*n);
        } else if (arg == "--temperature" || arg == "--top-p" || arg == "--repetition-penalty") {
            ACCEL_VALUE(v) auto n = toNumber(arg, *v);
            if (!n)
                return tl::unexpected(n.error());
            (arg == "--temperature" ? r.sampling.temperature
             : arg == "--top-p"     ? r.sampling.topP
                                    : r.sampling.repetitionPenalty) = *n;
        } else if (!arg.empty() && arg[0] == '-') {
            return makeError(ErrorCode::InvalidInput, "unknown option " + arg + " (see --help)");
        } else if (r.modelDir.empty()) {
            r.modelDir = arg;
        } else {
            return makeError(ErrorCode::InvalidInput, "unexpected argument '" + arg + "' (one MODEL_DIR only)");
        }
#undef ACCEL_VALUE
    }
    if (!r.promptsFile.empty() && (r.prompt || !r.inputIds.empty()))
        return makeError(ErrorCode::InvalidInput, "--prompts-file: give it or --prompt / --input-ids, not both");
    if (r.promptsFile.empty() != r.outputFile.empty())
        return makeError(ErrorCode::InvalidInput, r.promptsFile.empty()
                                                      ? "--output: only with --prompts-file (batch generation)"
                                                      : "--prompts-file: needs --output FILE.jsonl for the results");
    if (!r.help && r.modelDir.empty())
        return makeError(ErrorCode::InvalidInput,
                         "MODEL_DIR: missing (a folder with config.json and safetensors weights)");
    return r;
}

nlohmann::json statsToJson(const GenerationStats &s)
{
    return {{"prompt_tokens", s.promptTokens},
            {"new_tokens", s.newTokens},
            {"time_to_first_token_ms", s.timeToFirstTokenMs},
            {"prefill_tokens_per_second", s.prefillTokensPerSecond},
            {"decode_tokens_per_second", s.decodeTokensPerSecond},
            {"total_ms", s.totalMs},
            {"draft_proposed", s.draftProposed},
            {"draft_accepted", s.draftAccepted}};
}

} // namespace accel::inference
