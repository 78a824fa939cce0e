#include "core/worker/batchgenerate.h"

#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/common/text.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/pipelinemap.h"
#include "core/inference/textcodec.h"
#include "core/inference/workeroptions.h"
#include "core/runtime/accelerator.h"
#include "core/worker/pipelinegenerate.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstring>
#include <iostream>
#include <sstream>

namespace accel::worker {

namespace {

int fail(const Error &error)
{
    std::cerr << "accel-worker generate: " << error.toString() << "\n";
    return exitCodeFor(error);
}

bool endsWith(const std::string &text, const std::string &suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

Result<std::vector<Prompt>> readPrompts(const std::string &path, const inference::TextCodec &codec,
                                        const inference::ModelConfig &config,
                                        const inference::SamplingOptions &sampling)
{
    auto content = fileutil::readFile(path);
    if (!content)
        return tl::unexpected(content.error());
    const bool jsonl = endsWith(path, ".jsonl");
    std::vector<Prompt> prompts;
    std::istringstream in(*content);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        const std::string where = path + ":" + std::to_string(number);
        if (text::trim(line).empty())
            continue;
        Prompt prompt;
        if (jsonl) {
            auto parsed = jsonutil::parseJson(line, where);
            if (!parsed)
                return tl::unexpected(parsed.error());
            const bool hasText = parsed->is_object() && parsed->contains("prompt");
            const bool hasIds = parsed->is_object() && parsed->contains("input_ids");
            if (hasText == hasIds)
                return makeError(ErrorCode::InvalidInput,
                                 "expected an object with \"prompt\" (text) or \"input_ids\" (token ids)", where);
            if (hasText) {
                if (!(*parsed)["prompt"].is_string())
                    return makeError(ErrorCode::InvalidInput, "\"prompt\" must be a string", where);
                prompt.text = (*parsed)["prompt"].get<std::string>();
            } else {
                const auto &ids = (*parsed)["input_ids"];
                if (!ids.is_array() || ids.empty())
                    return makeError(ErrorCode::InvalidInput, "\"input_ids\" must be a non-empty array of token ids",
                                     where);
                for (const auto &id : ids) {
                    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= config.vocabSize)
                        return makeError(ErrorCode::InvalidInput,
                                         "token id " + id.dump() + " is outside the vocabulary (0.." +
                                             std::to_string(config.vocabSize - 1) + ")",
                                         where);
                    prompt.ids.push_back(id.get<int64_t>());
                }
                prompt.fromIds = true;
            }
        } else {
            prompt.text = line.back() == '\r' ? line.substr(0, line.size() - 1) : line;
        }
        if (!prompt.fromIds) {
            if (!codec.hasTokenizer())
                return makeError(ErrorCode::InvalidInput, "a text prompt needs tokenizer.json in the model folder",
                                 where);
            auto encoded = codec.encodePrompt(prompt.text, config, sampling);
            if (!encoded)
                return makeError(encoded.error().code, encoded.error().message, where);
            prompt.ids = std::move(*encoded);
        }
        prompts.push_back(std::move(prompt));
    }
    if (prompts.empty())
        return makeError(ErrorCode::InvalidInput, "no prompt in the file", path);
    return prompts;
}

std::string resultLine(size_t index, const Prompt &prompt, const Result<inference::GenerationResult> &result,
                       int process, bool padding)
{
    nlohmann::ordered_json line = {{"index", index}};
    if (!prompt.fromIds)
        line["prompt"] = prompt.text;
    line["input_ids"] = prompt.ids;
    if (result) {
        const auto &seq = result->sequences[0];
        line["tokens"] = seq.tokens;
        line["text"] = seq.text;
        line["stop_reason"] = seq.stopReason;
        line["decode_tokens_per_second"] = result->stats.decodeTokensPerSecond;
    } else {
        line["error"] = result.error().toString();
    }
    line["process"] = process;
    if (padding)
        line["padding"] = true;
    return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

namespace {

// split_between_processes: [start, end) of process `index`, and the share's padded length.
struct Share {
    size_t start = 0, end = 0, padded = 0;
};

Share shareOf(size_t count, size_t processes, size_t index)
{
    const size_t each = count / processes, extras = count % processes;
    Share share;
    share.start = index * each + std::min(index, extras);
    share.end = share.start + each + (index < extras ? 1 : 0);
    share.padded = each + (extras > 0 ? 1 : 0);
    return share;
}

// The bytes of every process, in process order (lengths first, then the bytes padded to the longest).
std::vector<std::string> gatherText(runtime::Accelerator &accelerator, const std::string &mine)
{
    const auto length = accelerator.gather(torch::tensor({static_cast<int64_t>(mine.size())}, torch::kLong));
    torch::Tensor bytes = torch::empty({static_cast<int64_t>(mine.size())}, torch::kUInt8);
    std::memcpy(bytes.data_ptr(), mine.data(), mine.size());
    const torch::Tensor all = accelerator.gather(accelerator.padAcrossProcesses(bytes)).contiguous();
    const int64_t width = all.size(0) / accelerator.numProcesses();
    std::vector<std::string> texts;
    for (int p = 0; p < accelerator.numProcesses(); ++p) {
        const auto *start = static_cast<const char *>(all.data_ptr()) + p * width;
        texts.emplace_back(start, static_cast<size_t>(length[p].item<int64_t>()));
    }
    return texts;
}

} // namespace

int batchGenerateMain(const inference::WorkerRequest &r)
{
    if (inference::isPipelineDeviceMap(r.load.deviceMap))
        return pipelineMain(r);
    if (!r.draftDir.empty())
        return fail(Error{ErrorCode::InvalidInput,
                          "--draft: not with --prompts-file (speculative decoding runs one prompt: use --prompt)",
                          {}});
    auto model = inference::InferenceModel::load(r.modelDir, r.load);
    if (!model)
        return fail(model.error());
    auto codec = inference::TextCodec::forModel(r.modelDir);
    if (!codec)
        return fail(codec.error());
    auto prompts = readPrompts(r.promptsFile, *codec, (*model)->config(), r.sampling);
    if (!prompts)
        return fail(prompts.error());
    auto accelerator = runtime::Accelerator::create();
    if (!accelerator)
        return fail(accelerator.error());
    auto &acc = **accelerator;
    // The Accelerator sets the launch's threads per rank: --threads, applied by the load, stays.
    if (r.load.threads > 0)
        at::set_num_threads(r.load.threads);
    const size_t processes = static_cast<size_t>(acc.numProcesses());
    const size_t index = static_cast<size_t>(acc.processIndex());
    const Share share = shareOf(prompts->size(), processes, index);

    // Results as JSON lines; the padding (the share's last prompt again) is marked and dropped by
    // process 0. A share may be empty when there are fewer prompts than processes.
    std::string mine;
    for (size_t k = 0; k < share.padded; ++k) {
        if (share.end == share.start)
            break;
        const bool padding = share.start + k >= share.end;
        const size_t i = padding ? share.end - 1 : share.start + k;
        const Prompt &prompt = (*prompts)[i];
        auto result = inference::generate(**model, {prompt.ids}, r.sampling, {}, codec->decoder());
        mine += resultLine(i, prompt, result, static_cast<int>(index), padding);
    }
    const std::vector<std::string> all = gatherText(acc, mine);
    if (!acc.isMainProcess())
        return 0;
    std::string output;
    size_t written = 0, failed = 0;
    for (const std::string &text : all) {
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            const auto parsed = jsonutil::parseJson(line, "a gathered result");
            if (!parsed)
                return fail(parsed.error());
            if (parsed->contains("padding"))
                continue;
            failed += parsed->contains("error") ? 1 : 0;
            output += line + "\n";
            ++written;
        }
    }
    if (auto ok = fileutil::writeFileAtomic(r.outputFile, output); !ok)
        return fail(ok.error());
    nlohmann::ordered_json summary = {{"schema", "accel.generate-batch"},
                                      {"version", 1},
                                      {"model", r.modelDir},
                                      {"prompts_file", r.promptsFile},
                                      {"output", r.outputFile},
                                      {"prompts", written},
                                      {"failed", failed},
                                      {"processes", processes},
                                      {"threads", at::get_num_threads()}};
    if (r.json)
        std::cout << summary.dump(2) << "\n";
    else
        std::cout << "wrote " << written << " results (" << failed << " failed) for " << r.promptsFile << " to "
                  << r.outputFile << ", " << processes << " process(es)\n";
    return failed > 0 ? 1 : 0;
}

} // namespace accel::worker
