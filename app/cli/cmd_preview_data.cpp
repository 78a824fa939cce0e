// accel preview-data JOB: what a causal_lm job (docs/finetune.md) will train on, read and tokenized
// exactly as accel-worker reads it (core/worker/lmdata, the model folder's tokenizer.json; no
// libtorch): the format, files, documents and tokens, the samples (windows of data.block_size or
// instruction examples), the optimizer steps per epoch for the job's batch size on the config's
// processes (as Accelerate's DataLoader deals batches), and the first
// samples decoded as the model sees them, an instruction example's prompt (no loss) apart from its
// completion.
#include "app/cli/argparser.h"
#include "app/cli/command.h"
#include "app/cli/estimatesharding.h"
#include "core/bigmodel/modelfamilies.h"
#include "core/tokenizer/tokenizer.h"
#include "core/worker/lmdata.h"
#include "launcher/jobfile.h"
#include "launcher/jsonoutput.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace accel::cli {

namespace {

using nlohmann::ordered_json;

struct Epoch {
    int64_t batches = 0; // per rank
    int64_t steps = 0;   // optimizer steps
};

// Batches per rank and optimizer steps in one epoch, as the run's data loader deals them
// (core/runtime/shardeddataloader.h: batch k of the order to rank k mod P, no drop_last, the last
// round padded by wrapping around: even_batches), one optimizer step per `accumulation` batches
// and one at the epoch's last batch.
Epoch epochOf(int64_t samples, int64_t batch, int processes, int64_t accumulation)
{
    const int64_t global = std::max<int64_t>(1, batch) * std::max(1, processes);
    Epoch epoch;
    epoch.batches = (samples + global - 1) / global;
    epoch.steps = (epoch.batches + accumulation - 1) / std::max<int64_t>(1, accumulation);
    return epoch;
}

ordered_json sampleJson(const worker::LmData &data, const tokenizer::Tokenizer &tokenizer, int64_t k)
{
    const std::vector<int32_t> ids = data.ids(k);
    ordered_json sample{{"index", k}, {"tokens", ids.size()}};
    if (data.format == worker::LmDataFormat::Text) {
        sample["text"] = tokenizer.decode(ids);
        return sample;
    }
    const auto prompt = size_t(std::clamp<int64_t>(data.promptLengths[size_t(k)], 0, int64_t(ids.size())));
    sample["prompt"] = tokenizer.decode(std::vector<int32_t>(ids.begin(), ids.begin() + long(prompt)));
    sample["completion"] = tokenizer.decode(std::vector<int32_t>(ids.begin() + long(prompt), ids.end()));
    sample["masked_tokens"] = prompt; // labels -100: no loss on them
    return sample;
}

ordered_json dataJson(const std::string &key, const std::string &path, const worker::LmData &data)
{
    return {{"key", key},
            {"path", path},
            {"format", data.format == worker::LmDataFormat::Text ? "text" : "instruction"},
            {"files", data.files},
            {"documents", data.documents},
            {"tokens", data.tokens},
            {"samples", data.samples()},
            {"cut_examples", data.cutExamples},
            {"dropped_examples", data.droppedExamples},
            {"seconds", data.seconds}};
}

std::string quotedSample(const std::string &text, size_t limit = 400)
{
    std::string shown = text.size() > limit ? text.substr(0, limit) + "..." : text;
    std::string out = "\"";
    for (char c : shown)
        out += c == '\n' ? std::string("\\n") : std::string(1, c);
    return out + "\"";
}

int fail(const Error &error)
{
    std::fprintf(stderr, "accel preview-data: %s\n", error.toString().c_str());
    return exitCodeFor(error);
}

int fail(const tl::unexpected<Error> &error)
{
    return fail(error.value());
}

int runPreviewData(int argc, char **argv)
{
    ArgParser parser("accel preview-data",
                     "Read and tokenize a causal_lm job's data as accel-worker will (no libtorch): tokens, samples, "
                     "steps per epoch and the first samples as the model sees them");
    parser.addPositional({"JOB", "a causal_lm job file (.yaml): model.path's tokenizer, data.train, data.block_size, "
                                 "data.format, data.text_key, training.batch_size"});
    parser.addValue("config_file", "CONFIG", "the Accelerate config the job is launched with (its process count)");
    parser.addValue("num_processes", "N", "processes in total instead of the config's (default 1 without a config)");
    parser.addValue("samples", "N", "samples to show, decoded", "3");
    parser.addFlag("json", "print one JSON object (schema accel.data-preview)");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::printf("%s", parser.helpText().c_str());
            return ExitOk;
        }
        std::fprintf(stderr, "accel preview-data: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    auto count = [&](const char *name, long long fallback, long long *out) {
        const std::string text = parser.valueOr(name, std::to_string(fallback));
        char *end = nullptr;
        *out = std::strtoll(text.c_str(), &end, 10);
        return end && *end == '\0' && !text.empty() && *out >= 0 && *out <= (1 << 20);
    };
    long long shown = 3, processes = 0;
    if (!count("samples", 3, &shown) || !count("num_processes", 0, &processes) ||
        (parser.isSet("num_processes") && processes < 1)) {
        std::fprintf(stderr, "accel preview-data: --samples takes a whole number from 0, --num_processes one from 1 "
                             "(up to 1048576)\n");
        return ExitBadInput;
    }
    const std::string jobPath = *parser.firstPositional("JOB");
    auto job = launcher::JobFile::load(jobPath);
    if (!job)
        return fail(job.error());
    if (job->recipe() != "causal_lm")
        return fail(makeError(ErrorCode::InvalidInput,
                              "recipe: preview-data reads causal_lm jobs; got \"" + job->recipe() + "\"", jobPath));
    for (const launcher::FieldIssue &issue : job->validate()) {
        if (issue.key.rfind("model.", 0) == 0 || issue.key.rfind("data.", 0) == 0 ||
            issue.key.rfind("training.", 0) == 0)
            return fail(makeError(ErrorCode::InvalidInput, issue.key + ": " + issue.message, jobPath));
    }
    const std::string modelDir = job->value("model.path");
    auto tokenizer = tokenizer::Tokenizer::load(modelDir);
    if (!tokenizer)
        return fail(tokenizer.error());
    auto config = bigmodel::readModelConfig(modelDir + "/config.json");
    if (!config)
        return fail(config.error());
    auto eos = worker::documentEndId(*tokenizer, config->eosTokenIds, modelDir);
    if (!eos)
        return fail(eos.error());
    auto format = worker::parseLmDataFormat(job->value("data.format"));
    if (!format)
        return fail(makeError(ErrorCode::InvalidInput, format.error().message, jobPath));
    worker::LmDataOptions options;
    options.blockSize = std::stoll(job->value("data.block_size"));
    options.textKey = job->value("data.text_key");
    options.format = *format;
    const std::string trainPath = job->value("data.train");
    auto train = worker::loadLmData(trainPath, *tokenizer, *eos, options);
    if (!train)
        return fail(train.error());
    std::optional<worker::LmData> eval;
    const std::string evalPath = job->value("data.eval");
    if (!evalPath.empty()) {
        options.key = "data.eval";
        auto read = worker::loadLmData(evalPath, *tokenizer, *eos, options);
        if (!read)
            return fail(read.error());
        eval = std::move(*read);
    }
    auto world = launchedProcesses(parser.valueOr("config_file", ""),
                                   processes > 0 ? std::optional<int>(int(processes)) : std::nullopt);
    if (!world)
        return fail(world.error());
    const int64_t batch = std::stoll(job->value("training.batch_size"));
    const int64_t accumulation = std::stoll(job->value("training.gradient_accumulation_steps"));
    const int64_t maxSteps = std::stoll(job->value("training.max_steps"));
    const Epoch epoch = epochOf(train->samples(), batch, *world, accumulation);
    const int64_t samples = std::min<int64_t>(shown, train->samples());

    if (parser.isSet("json")) {
        ordered_json j{{"schema", launcher::DataPreviewSchema}, {"version", 1}, {"job", jobPath}, {"model", modelDir}};
        j["block_size"] = options.blockSize;
        j["eos_id"] = *eos;
        j["eos_token"] = tokenizer->decode({*eos});
        j["train"] = dataJson("data.train", trainPath, *train);
        j["eval"] = eval ? dataJson("data.eval", evalPath, *eval) : ordered_json(nullptr);
        j["batch_size"] = batch;
        j["processes"] = *world;
        j["gradient_accumulation_steps"] = accumulation;
        j["batches_per_epoch"] = epoch.batches;
        j["steps_per_epoch"] = epoch.steps;
        j["max_steps"] = maxSteps;
        j["epochs"] = epoch.steps > 0 ? ordered_json(double(maxSteps) / double(epoch.steps)) : ordered_json(nullptr);
        ordered_json list = ordered_json::array();
        for (int64_t k = 0; k < samples; ++k)
            list.push_back(sampleJson(*train, *tokenizer, k));
        j["samples"] = list;
        std::printf("%s\n", j.dump(2).c_str());
        return ExitOk;
    }
    const bool text = train->format == worker::LmDataFormat::Text;
    std::printf("data.train: %s: %s, %lld file(s), %lld %s, %lld tokens (%.2f s)\n", trainPath.c_str(),
                text ? "text" : "instruction", (long long)train->files, (long long)train->documents,
                text ? "documents" : "examples", (long long)train->tokens, train->seconds);
    std::printf("  %lld %s; batch %lld x %d process(es)%s: %lld steps per epoch (max_steps %lld)\n",
                (long long)train->samples(),
                text ? ("windows of " + std::to_string(options.blockSize) + " tokens").c_str() : "examples",
                (long long)batch, *world,
                accumulation > 1 ? (", " + std::to_string(accumulation) + " batches per step").c_str() : "",
                (long long)epoch.steps, (long long)maxSteps);
    if (eval)
        std::printf("data.eval: %s: %lld tokens, %lld samples\n", evalPath.c_str(), (long long)eval->tokens,
                    (long long)eval->samples());
    for (int64_t k = 0; k < samples; ++k) {
        const ordered_json sample = sampleJson(*train, *tokenizer, k);
        if (text) {
            std::printf("sample %lld (%lld tokens): %s\n", (long long)k, (long long)sample["tokens"].get<int64_t>(),
                        quotedSample(sample["text"].get<std::string>()).c_str());
        } else {
            std::printf("sample %lld (%lld tokens, the first %lld without loss): %s | %s\n", (long long)k,
                        (long long)sample["tokens"].get<int64_t>(), (long long)sample["masked_tokens"].get<int64_t>(),
                        quotedSample(sample["prompt"].get<std::string>()).c_str(),
                        quotedSample(sample["completion"].get<std::string>()).c_str());
        }
    }
    return ExitOk;
}

} // namespace

static Registrar registrar({"preview-data", "show a causal_lm job's data as the model will see it (tokens, steps)",
                            &runPreviewData});

} // namespace accel::cli
