#include "core/inference/workermain.h"

#include "core/bigmodel/safetensorswriter.h"
#include "core/inference/causallm.h"
#include "core/inference/decodebound.h"
#include "core/inference/pipelinemap.h"
#include "core/inference/servesession.h"
#include "core/inference/textcodec.h"
#include "core/inference/workeroptions.h"

#include <c10/core/InferenceMode.h>

#include <cstdio>
#include <iostream>

namespace accel::inference {

namespace {

// The map the model was dispatched with (GPU indices as numbers, as Accelerate writes them).
nlohmann::ordered_json deviceMapJson(const DeviceMap &map)
{
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto &[key, device] : map) {
        const bool gpu = !device.empty() && device.find_first_not_of("0123456789") == std::string::npos;
        j[key] = gpu ? nlohmann::ordered_json(std::stoll(device)) : nlohmann::ordered_json(device);
    }
    return j;
}

int fail(const std::string &command, const Error &error)
{
    std::cerr << "accel-worker " << command << ": " << error.toString() << "\n";
    return exitCodeFor(error);
}

// --dtype auto: the compute dtype chosen for this model and CPU, written into the request (said on
// stderr unless `quiet`). Generation of one prompt and of a prompts file both take it from here.
Result<std::optional<DecodeDTypeChoice>> resolveDTypeAuto(WorkerRequest &r, bool quiet)
{
    if (r.load.dispatch.computeDType != kAutoComputeDType)
        return std::optional<DecodeDTypeChoice>();
    auto choice = chooseModelDecodeDType(r.modelDir, r.load.threads);
    if (!choice)
        return tl::unexpected(choice.error());
    r.load.dispatch.computeDType = choice->dtype;
    if (!quiet)
        std::cerr << "[--dtype auto: " << choice->dtype << ": " << choice->reason << "]\n";
    return std::optional<DecodeDTypeChoice>(*choice);
}

// --pin-threads: each intra-op thread on its own allowed CPU (said on stderr unless `quiet`).
Result<std::vector<int>> pinThreadsIfAsked(const WorkerRequest &r, bool quiet)
{
    if (!r.pinThreads)
        return std::vector<int>();
    auto pinned = pinIntraOpThreads();
    if (!pinned)
        return makeError(pinned.error().code, "--pin-threads: " + pinned.error().message);
    if (!quiet) {
        std::cerr << "[--pin-threads: " << pinned->size() << " intra-op threads on CPUs";
        for (int cpu : *pinned)
            std::cerr << " " << cpu;
        std::cerr << "]\n";
    }
    return *pinned;
}

int runGenerate(const WorkerRequest &request)
{
    WorkerRequest r = request;
    auto dtypeChoice = resolveDTypeAuto(r, r.json);
    if (!dtypeChoice)
        return fail("generate", dtypeChoice.error());
    auto model = InferenceModel::load(r.modelDir, r.load);
    if (!model)
        return fail("generate", model.error());
    auto pinnedCpus = pinThreadsIfAsked(r, r.json);
    if (!pinnedCpus)
        return fail("generate", pinnedCpus.error());
    if (const auto &kernel = (*model)->quantization().int8Kernel; kernel && !r.json)
        std::cerr << "[int8 kernel: " << kernel->name << ": " << kernel->reason << "]\n";
    if (const auto &prompt = (*model)->promptKernel(); prompt && !r.json)
        std::cerr << "[prompt kernel: " << prompt->reason << "]\n";
    auto codec = TextCodec::forModel(r.modelDir);
    if (!codec)
        return fail("generate", codec.error());
    std::vector<int64_t> ids = r.inputIds;
    if (r.prompt) {
        if (!codec->hasTokenizer())
            return fail("generate", Error{ErrorCode::InvalidInput,
                                          "--prompt needs tokenizer.json in " + r.modelDir + " (or pass --input-ids)",
                                          {}});
        auto encoded = codec->encodePrompt(*r.prompt, (*model)->config(), r.sampling);
        if (!encoded)
            return fail("generate", encoded.error());
        ids = std::move(*encoded);
    }
    if (ids.empty())
        return fail("generate", Error{ErrorCode::InvalidInput, "give --prompt TEXT or --input-ids 1,2,3", {}});
    std::unique_ptr<InferenceModel> draft;
    if (!r.draftDir.empty()) {
        LoadOptions draftOptions; // the draft is small: whole on the CPU, in the model's compute dtype
        draftOptions.threads = r.load.threads;
        draftOptions.dispatch.computeDType = r.load.dispatch.computeDType;
        auto loaded = InferenceModel::load(r.draftDir, draftOptions);
        if (!loaded)
            return fail("generate",
                        Error{loaded.error().code, "--draft: " + loaded.error().message, loaded.error().context});
        draft = std::move(*loaded);
    }
    auto result = generate(
        **model, {ids}, r.sampling,
        [&](size_t, int64_t token, const std::string &piece) {
            if (!r.json) {
                std::cout << (codec->hasTokenizer() ? piece : std::to_string(token) + " ");
                std::cout.flush();
            }
            return true;
        },
        codec->decoder(), DraftModel{draft.get(), r.draftTokens});
    if (!result)
        return fail("generate", result.error());
    const auto &seq = result->sequences[0];
    if (r.json) {
        nlohmann::ordered_json out = {{"schema", "accel.generate"},
                                      {"version", 1},
                                      {"model", r.modelDir},
                                      {"model_type", (*model)->config().modelType},
                                      {"prompt_ids", ids},
                                      {"tokens", seq.tokens},
                                      {"text", seq.text},
                                      {"stop_reason", seq.stopReason},
                                      {"stats", statsToJson(result->stats)},
                                      {"device_map", deviceMapJson((*model)->deviceMap())},
                                      {"quantization", quantizationJson((*model)->quantization())},
                                      {"warnings", (*model)->warnings()}};
        if (*dtypeChoice)
            out["dtype_choice"] = dtypeChoiceJson(**dtypeChoice);
        if (const auto &prompt = (*model)->promptKernel())
            out["prompt_kernel"] = promptKernelJson(*prompt);
        if (r.pinThreads)
            out["pinned_cpus"] = *pinnedCpus;
        // As the serve worker's loaded event: measured after decode (not in its time), on the
        // threads it ran on.
        out["decode_bound"] = decodeBoundJson(**model);
        std::cout << out.dump(2) << "\n";
    } else {
        std::cout << "\n";
        std::cerr << "[" << result->stats.newTokens << " tokens, stop: " << seq.stopReason << ", first token "
                  << result->stats.timeToFirstTokenMs << " ms, decode " << result->stats.decodeTokensPerSecond
                  << " tokens/s]\n";
    }
    return 0;
}

int runInfer(const WorkerRequest &r)
{
    if (r.inputIds.empty())
        return fail("infer", Error{ErrorCode::InvalidInput, "--input-ids: missing (comma-separated token ids)", {}});
    if (r.logitsOut.empty())
        return fail("infer",
                    Error{ErrorCode::InvalidInput, "--logits-out: missing (a .safetensors file to write)", {}});
    auto model = InferenceModel::load(r.modelDir, r.load);
    if (!model)
        return fail("infer", model.error());
    const int64_t vocab = (*model)->config().vocabSize;
    for (int64_t id : r.inputIds)
        if (id < 0 || id >= vocab)
            return fail("infer", Error{ErrorCode::InvalidInput,
                                       "--input-ids: token id " + std::to_string(id) +
                                           " is outside the vocabulary (0.." + std::to_string(vocab - 1) + ")",
                                       {}});
    at::Tensor logits;
    try {
        c10::InferenceMode guard;
        auto ids = at::tensor(r.inputIds, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
        logits = (*model)->lm().forward(ids, nullptr).to(at::kCPU).contiguous();
    } catch (const c10::Error &e) {
        return fail("infer", Error{ErrorCode::Failed, e.what_without_backtrace(), {}});
    }
    std::vector<bigmodel::TensorToWrite> tensors{{"logits", bigmodel::DType::F32, logits.sizes().vec(),
                                                  logits.data_ptr(), static_cast<uint64_t>(logits.nbytes())}};
    if (auto ok = bigmodel::writeSafetensors(r.logitsOut, tensors); !ok)
        return fail("infer", ok.error());
    if (r.json) {
        nlohmann::ordered_json out = {{"schema", "accel.infer"},
                                      {"version", 1},
                                      {"model", r.modelDir},
                                      {"model_type", (*model)->config().modelType},
                                      {"input_ids", r.inputIds},
                                      {"logits_file", r.logitsOut},
                                      {"shape", logits.sizes().vec()},
                                      {"argmax_last", logits[0][-1].argmax().item<int64_t>()},
                                      {"device_map", deviceMapJson((*model)->deviceMap())},
                                      {"quantization", quantizationJson((*model)->quantization())},
                                      {"warnings", (*model)->warnings()}};
        std::cout << out.dump(2) << "\n";
    }
    return 0;
}

} // namespace

bool isWorkerCommand(const std::string &command)
{
    return command == "generate" || command == "infer" || command == "serve";
}

int workerMain(int argc, char **argv, const BatchGenerate &batch)
{
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "serve")
        return runServe(std::cin, std::cout);
    if (!isWorkerCommand(command)) {
        std::cerr << workerHelpText();
        return 2;
    }
    auto request = parseWorkerArguments(argc, argv);
    if (!request)
        return fail(command, request.error());
    if (request->help) {
        std::cout << workerHelpText();
        return 0;
    }
    // Pipeline parallelism (--device-map pipeline, or a map naming processes) runs in the worker's
    // distributed part too; it tells infer by --logits-out.
    if (isPipelineDeviceMap(request->load.deviceMap)) {
        if (command == "generate" && !request->logitsOut.empty())
            return fail(command, Error{ErrorCode::InvalidInput, "--logits-out: only with infer", {}});
        if (!batch)
            return fail(
                command,
                Error{ErrorCode::Unsupported, "--device-map " + request->load.deviceMap + ": not in this program", {}});
        return batch(*request);
    }
    if (command == "generate" && !request->promptsFile.empty()) {
        if (!batch)
            return fail(command, Error{ErrorCode::Unsupported, "--prompts-file: not in this program", {}});
        // Each process applies the choices before it loads its share (said on stderr: stdout is the
        // batch's JSON).
        WorkerRequest r = *request;
        if (auto chosen = resolveDTypeAuto(r, false); !chosen)
            return fail(command, chosen.error());
        if (auto pinned = pinThreadsIfAsked(r, false); !pinned)
            return fail(command, pinned.error());
        return batch(r);
    }
    if (command == "infer" && !request->promptsFile.empty())
        return fail(command, Error{ErrorCode::InvalidInput, "--prompts-file: only with generate", {}});
    return command == "generate" ? runGenerate(*request) : runInfer(*request);
}

} // namespace accel::inference
