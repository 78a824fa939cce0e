#include "core/worker/pipelinegenerate.h"

#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/textcodec.h"
#include "core/inference/workeroptions.h"
#include "core/runtime/accelerator.h"
#include "core/worker/batchgenerate.h"
#include "core/worker/pipelinelink.h"
#include "core/worker/pipelinestage.h"

#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

namespace accel::worker {

namespace {

using inference::KVCache;

// Messages of a lane: the last stage's command and ids to the first, each stage's header and hidden
// states to the next. A header is [batch, tokens, reset (the lane's caches start again), end, dtype].
enum Kind { kCommand = 0, kIds = 1, kHeader = 2, kHidden = 3 };
constexpr int kKinds = 4;
int tagOf(int lane, Kind kind)
{
    return lane * kKinds + kind;
}

at::Tensor header(int64_t batch, int64_t tokens, bool reset, bool end, at::ScalarType dtype)
{
    return torch::tensor({batch, tokens, int64_t(reset), int64_t(end), int64_t(dtype)}, torch::kLong);
}

struct Header {
    int64_t batch = 0, tokens = 0;
    bool reset = false, end = false;
    at::ScalarType dtype = at::kFloat;
};

Header receiveHeader(PipelineLink &link, int from, int tag)
{
    const at::Tensor h = link.recv(torch::empty({5}, torch::kLong), from, tag);
    const int64_t *v = h.data_ptr<int64_t>();
    return {v[0], v[1], v[2] != 0, v[3] != 0, static_cast<at::ScalarType>(v[4])};
}

at::Tensor receiveHidden(PipelineLink &link, int from, int lane, const Header &h, int64_t hiddenSize)
{
    return link.recv(torch::empty({h.batch, h.tokens, hiddenSize}, torch::TensorOptions().dtype(h.dtype)), from,
                     tagOf(lane, kHidden));
}

void sendHidden(PipelineLink &link, int to, int lane, const at::Tensor &hidden, bool reset)
{
    link.send(header(hidden.size(0), hidden.size(1), reset, false, hidden.scalar_type()), to, tagOf(lane, kHeader));
    link.send(hidden, to, tagOf(lane, kHidden));
}

// The first and middle stages: one lane's micro-batches until the last stage ends the lane.
void serveLane(PipelineStage &stage, PipelineLink &link, int rank, int stages, int lane, int64_t hiddenSize)
{
    try {
        c10::InferenceMode guard;
        KVCache cache;
        for (;;) {
            at::Tensor hidden;
            Header h;
            if (stage.first()) {
                h = receiveHeader(link, stages - 1, tagOf(lane, kCommand));
                if (!h.end) {
                    at::Tensor ids =
                        link.recv(torch::empty({h.batch, h.tokens}, torch::kLong), stages - 1, tagOf(lane, kIds));
                    if (h.reset)
                        cache.clear();
                    hidden = stage.embed(ids, cache.length());
                }
            } else {
                h = receiveHeader(link, rank - 1, tagOf(lane, kHeader));
                if (!h.end) {
                    if (h.reset)
                        cache.clear();
                    hidden = receiveHidden(link, rank - 1, lane, h, hiddenSize);
                }
            }
            if (h.end) {
                if (rank + 1 < stages - 1)
                    link.send(header(0, 0, false, true, at::kLong), rank + 1, tagOf(lane, kHeader));
                return;
            }
            sendHidden(link, rank + 1, lane, stage.layers(hidden, cache), h.reset);
        }
    } catch (const std::exception &e) {
        // The other stages wait on this one: end the process (the launch stops the others).
        std::cerr << "accel-worker: pipeline stage " << rank << ", lane " << lane << ": " << e.what() << std::endl;
        std::_Exit(1);
    }
}

// The model as the last stage sees it: a forward sends the ids to the first stage and finishes
// with this stage's layers and the head.
class LastStage : public inference::CausalLM {
public:
    LastStage(inference::CausalLM &model, PipelineStage &stage, PipelineLink &link, int rank, int lane)
        : CausalLM(model.typeName(), model.config()), m_model(model), m_stage(stage), m_link(link), m_rank(rank),
          m_lane(lane)
    {}
    std::vector<std::shared_ptr<inference::Module>> blocks() const override { return {}; }
    std::string blockPrefix() const override { return m_model.blockPrefix(); }
    bool rebuildsCacheAt(int64_t past, int64_t tokens) const override { return m_model.rebuildsCacheAt(past, tokens); }
    at::Tensor forward(const at::Tensor &ids, KVCache *cache, bool lastOnly) override
    {
        const bool reset = cache->length() == 0;
        m_link.send(header(ids.size(0), ids.size(1), reset, false, at::kLong), 0, tagOf(m_lane, kCommand));
        m_link.send(ids.to(at::kLong), 0, tagOf(m_lane, kIds));
        const Header h = receiveHeader(m_link, m_rank - 1, tagOf(m_lane, kHeader));
        at::Tensor hidden = receiveHidden(m_link, m_rank - 1, m_lane, h, config().hiddenSize);
        return m_stage.head(m_stage.layers(hidden, *cache), lastOnly);
    }
    void end() { m_link.send(header(0, 0, false, true, at::kLong), 0, tagOf(m_lane, kCommand)); }

private:
    inference::CausalLM &m_model;
    PipelineStage &m_stage;
    PipelineLink &m_link;
    int m_rank, m_lane;
};

int fail(const std::string &command, const Error &error)
{
    std::cerr << "accel-worker " << command << ": " << error.toString() << "\n";
    return exitCodeFor(error);
}

// What a pipeline does not run, by name (checked before any process waits for another).
std::optional<Error> refusal(const inference::WorkerRequest &r)
{
    auto refuse = [](const std::string &what) {
        return Error{ErrorCode::InvalidInput,
                     what + ": not with a pipeline --device_map (each process runs its layers in the "
                            "checkpoint's or --dtype's precision, whole on its CPU)",
                     {}};
    };
    if (!r.draftDir.empty())
        return refuse("--draft (speculative decoding runs one model in one process)");
    if (r.load.dispatch.computeDType == inference::kAutoComputeDType)
        return Error{ErrorCode::InvalidInput,
                     "--dtype auto: not with a pipeline --device_map (each process would measure and choose on its "
                     "own, and the stages must compute in one dtype); give --dtype float32 or bfloat16",
                     {}};
    if (r.pinThreads)
        return Error{ErrorCode::InvalidInput,
                     "--pin-threads: not with a pipeline --device_map (the processes of one host would pin their "
                     "threads to the same CPUs); leave the placement to the launch",
                     {}};
    if (!r.load.quantization.method.empty())
        return refuse("--quantization " + r.load.quantization.method);
    if (r.load.quantization.skipModules)
        return refuse("--skip-modules");
    if (!r.load.quantization.keepInFp32Modules.empty())
        return refuse("--keep-in-fp32-modules");
    if (!r.load.adapterDir.empty())
        return refuse("--adapter");
    if (!r.load.dispatch.offloadFolder.empty())
        return refuse("--offload-folder");
    if (!r.load.maxMemory.empty())
        return refuse("--max-memory");
    if (r.load.dispatch.gpusOnCpu)
        return refuse("--gpus-on-cpu");
    return std::nullopt;
}

std::string mapJson(const inference::DeviceMap &map)
{
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto &[key, device] : map)
        j[key] = device;
    return j.dump();
}

using LmOf = std::function<inference::CausalLM &(int lane)>;

// The last process's part: infer's forward, or the generations of every lane, and the output.
int runLastStage(const inference::WorkerRequest &r, bool infer, const std::vector<Prompt> &prompts, const LmOf &lmOf,
                 int lanes, const inference::TextCodec &codec, inference::InferenceModel &model,
                 const nlohmann::ordered_json &pipeline, PipelineLink *link)
{
    const std::string command = infer ? "infer" : "generate";
    const int rank = pipeline["processes"].get<int>() - 1;
    auto endLanes = [&] {
        if (!link)
            return;
        for (int lane = 0; lane < lanes; ++lane)
            static_cast<LastStage &>(lmOf(lane)).end();
        link->flush();
    };
    if (infer) {
        at::Tensor logits;
        try {
            c10::InferenceMode guard;
            KVCache cache;
            logits =
                lmOf(0).forward(torch::tensor(prompts[0].ids, torch::kLong).unsqueeze(0), &cache, false).contiguous();
        } catch (const c10::Error &e) {
            endLanes();
            return fail(command, Error{ErrorCode::Failed, e.what_without_backtrace(), {}});
        }
        endLanes();
        std::vector<bigmodel::TensorToWrite> tensors{{"logits", bigmodel::DType::F32, logits.sizes().vec(),
                                                      logits.data_ptr(), static_cast<uint64_t>(logits.nbytes())}};
        if (auto ok = bigmodel::writeSafetensors(r.logitsOut, tensors); !ok)
            return fail(command, ok.error());
        if (r.json)
            std::cout << nlohmann::ordered_json{{"schema", "accel.infer"},
                                                {"version", 1},
                                                {"model", r.modelDir},
                                                {"model_type", model.config().modelType},
                                                {"input_ids", prompts[0].ids},
                                                {"logits_file", r.logitsOut},
                                                {"shape", logits.sizes().vec()},
                                                {"device_map", pipeline["device_map"]},
                                                {"argmax_last", logits[0][-1].argmax().item<int64_t>()},
                                                {"pipeline", pipeline},
                                                {"warnings", model.warnings()}}
                             .dump(2)
                      << "\n";
        return 0;
    }
    const bool single = r.promptsFile.empty();
    const inference::Decoder decoder = codec.decoder();
    std::vector<std::optional<Result<inference::GenerationResult>>> results(prompts.size());
    std::vector<std::thread> threads;
    for (int lane = 0; lane < lanes; ++lane)
        threads.emplace_back([&, lane] {
            for (size_t i = static_cast<size_t>(lane); i < prompts.size(); i += static_cast<size_t>(lanes)) {
                auto stream = [&](size_t, int64_t token, const std::string &piece) {
                    if (single && !r.json) {
                        std::cout << (codec.hasTokenizer() ? piece : std::to_string(token) + " ");
                        std::cout.flush();
                    }
                    return true;
                };
                results[i] = inference::generate(lmOf(lane), {prompts[i].ids}, r.sampling, stream, decoder);
            }
        });
    for (auto &t : threads)
        t.join();
    endLanes();
    if (single) {
        const auto &result = *results[0];
        if (!result)
            return fail(command, result.error());
        const auto &seq = result->sequences[0];
        if (!r.json) {
            std::cout << "\n";
            return 0;
        }
        std::cout << nlohmann::ordered_json{{"schema", "accel.generate"},
                                            {"version", 1},
                                            {"model", r.modelDir},
                                            {"model_type", model.config().modelType},
                                            {"prompt_ids", prompts[0].ids},
                                            {"tokens", seq.tokens},
                                            {"text", seq.text},
                                            {"stop_reason", seq.stopReason},
                                            {"stats", inference::statsToJson(result->stats)},
                                            {"device_map", pipeline["device_map"]},
                                            {"pipeline", pipeline},
                                            {"warnings", model.warnings()}}
                         .dump(2)
                  << "\n";
        return 0;
    }
    std::string output;
    size_t failed = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
        failed += *results[i] ? 0 : 1;
        output += resultLine(i, prompts[i], *results[i], rank);
    }
    if (auto ok = fileutil::writeFileAtomic(r.outputFile, output); !ok)
        return fail(command, ok.error());
    if (r.json)
        std::cout << nlohmann::ordered_json{{"schema", "accel.generate-batch"},
                                            {"version", 1},
                                            {"model", r.modelDir},
                                            {"prompts_file", r.promptsFile},
                                            {"output", r.outputFile},
                                            {"prompts", prompts.size()},
                                            {"failed", failed},
                                            {"processes", pipeline["processes"]},
                                            {"threads", at::get_num_threads()},
                                            {"pipeline", pipeline}}
                         .dump(2)
                  << "\n";
    else
        std::cout << "wrote " << prompts.size() << " results (" << failed << " failed) for " << r.promptsFile << " to "
                  << r.outputFile << ", a pipeline of " << pipeline["processes"] << " process(es)\n";
    return failed > 0 ? 1 : 0;
}

} // namespace

int pipelineMain(const inference::WorkerRequest &r)
{
    const bool infer = !r.logitsOut.empty();
    const std::string command = infer ? "infer" : "generate";
    if (auto refused = refusal(r))
        return fail(command, *refused);
    auto config = inference::loadModelConfig(r.modelDir);
    if (!config)
        return fail(command, config.error());
    auto planning = inference::createCausalLM(*config); // the tree only: nothing loaded
    if (!planning)
        return fail(command, planning.error());
    auto accelerator = runtime::Accelerator::create();
    if (!accelerator)
        return fail(command, accelerator.error());
    auto &acc = **accelerator;
    const int stages = acc.numProcesses(), rank = acc.processIndex();
    auto plan = planPipeline(r.load.deviceMap, **planning, stages);
    if (!plan)
        return fail(command, plan.error());
    inference::LoadOptions load = r.load;
    load.deviceMap = mapJson(stageDeviceMap(*plan, **planning, rank));
    auto model = inference::InferenceModel::load(r.modelDir, load);
    if (!model)
        return fail(command, model.error());
    auto stage = PipelineStage::create((*model)->lm(), *plan, rank);
    if (!stage)
        return fail(command, stage.error());
    stage->dropOtherStages();
    auto codec = inference::TextCodec::forModel(r.modelDir);
    if (!codec)
        return fail(command, codec.error());

    // The prompts, read and checked on every process before any of them waits for another.
    std::vector<Prompt> prompts;
    if (!r.promptsFile.empty()) {
        auto read = readPrompts(r.promptsFile, *codec, (*model)->config(), r.sampling);
        if (!read)
            return fail(command, read.error());
        prompts = std::move(*read);
    } else if (r.prompt) {
        if (!codec->hasTokenizer())
            return fail(command, Error{ErrorCode::InvalidInput,
                                       "--prompt needs tokenizer.json in " + r.modelDir + " (or pass --input-ids)",
                                       {}});
        auto encoded = codec->encodePrompt(*r.prompt, (*model)->config(), r.sampling);
        if (!encoded)
            return fail(command, encoded.error());
        prompts.push_back({*r.prompt, std::move(*encoded), false});
    } else if (!r.inputIds.empty()) {
        for (int64_t id : r.inputIds)
            if (id < 0 || id >= (*model)->config().vocabSize)
                return fail(command,
                            Error{ErrorCode::InvalidInput,
                                  "--input-ids: token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                      std::to_string((*model)->config().vocabSize - 1) + ")",
                                  {}});
        prompts.push_back({"", r.inputIds, true});
    } else {
        return fail(command, Error{ErrorCode::InvalidInput,
                                   infer ? "--input-ids: missing (comma-separated token ids)"
                                         : "give --prompt TEXT, --input-ids 1,2,3 or --prompts-file FILE",
                                   {}});
    }

    // Every stage's layers and bytes, for the report.
    const auto &report = (*model)->report();
    const at::Tensor figures = acc.gather(
        torch::tensor({plan->begin(rank), plan->end(rank), static_cast<int64_t>(report.residentBytes),
                       static_cast<int64_t>(report.residentTensors), static_cast<int64_t>(report.offloadedTensors)},
                      torch::kLong));
    std::unique_ptr<PipelineLink> link;
    if (stages > 1) {
        auto connected = PipelineLink::connect(acc.env(), acc.options().collectiveTimeoutS);
        if (!connected)
            return fail(command, connected.error());
        link = std::move(*connected);
    }
    const int lanes = infer ? 1 : static_cast<int>(std::min<size_t>(prompts.size(), static_cast<size_t>(stages)));
    const bool last = rank == stages - 1;
    if (!last) {
        std::vector<std::thread> threads;
        for (int lane = 0; lane < lanes; ++lane)
            threads.emplace_back(serveLane, std::ref(*stage), std::ref(*link), rank, stages, lane,
                                 (*model)->config().hiddenSize);
        for (auto &t : threads)
            t.join();
        link->flush();
        return 0;
    }
    // The last process: the lanes' generations (prompt i on lane i % lanes), or infer's forward.
    std::vector<std::unique_ptr<LastStage>> heads;
    auto lmOf = [&](int lane) -> inference::CausalLM & {
        if (stages == 1)
            return (*model)->lm();
        while (static_cast<int>(heads.size()) <= lane)
            heads.push_back(
                std::make_unique<LastStage>((*model)->lm(), *stage, *link, rank, static_cast<int>(heads.size())));
        return *heads[static_cast<size_t>(lane)];
    };
    for (int lane = 0; lane < lanes; ++lane)
        lmOf(lane);
    nlohmann::ordered_json layout = nlohmann::ordered_json::object();
    for (const auto &[key, device] : pipelineLayout(*plan, **planning))
        layout[key] = device;
    nlohmann::ordered_json pipeline = {
        {"processes", stages}, {"micro_batches", lanes}, {"device_map", layout}, {"stages", nlohmann::json::array()}};
    for (int s = 0; s < stages; ++s) {
        const int64_t *f = figures.data_ptr<int64_t>() + 5 * s;
        pipeline["stages"].push_back({{"rank", s},
                                      {"layers", {f[0], f[1]}},
                                      {"resident_bytes", f[2]},
                                      {"resident_tensors", f[3]},
                                      {"other_stages_tensors", f[4]}});
    }
    return runLastStage(r, infer, prompts, lmOf, lanes, *codec, **model, pipeline, link.get());
}

} // namespace accel::worker
