// Recipe `causal_lm` (docs/finetune.md): a Hugging Face causal language model (GPT-2, Llama,
// Mistral, Qwen2) fine-tuned whole or with LoRA on the user's text. The model is the inference
// families' own module tree (core/inference), loaded from the folder and prepared by the
// Accelerator like any other: its blocks are the sharding units, gradient checkpointing runs per
// block. The loss is Transformers' labels=input_ids loss; the optimizer torch's AdamW. At the end
// rank 0 writes a Hugging Face folder (<output_dir>/model) or the LoRA adapter
// (<output_dir>/adapter) in peft's layout.
#include "core/worker/causallmrecipe.h"
#include "core/worker/activationcheckpoint.h"
#include "core/worker/causallmparallel.h"
#include "core/worker/contextparallel.h"
#include "core/worker/jobrunner.h"
#include "core/worker/trainingloop.h"

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/memorysize.h"
#include "core/inference/dispatch.h"
#include "core/inference/lora.h"
#include "core/inference/pretrainedwriter.h"
#include "core/inference/torchtensors.h"
#include "core/plan/tensorparallelsplit.h"
#include "core/runtime/accelerator.h"
#include "core/runtime/fusedadamw.h"
#include "core/runtime/precision/fp8training.h"
#include "core/tokenizer/tokenizer.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sstream>

namespace accel::worker {

namespace fs = std::filesystem;
namespace F = torch::nn::functional;
using inference::CausalLM;

namespace {

// Refusals before anything starts are the job's problem (exit 2), also where the loader calls a
// feature unsupported.
Error asInvalid(Error error)
{
    if (error.code == ErrorCode::Unsupported)
        error.code = ErrorCode::InvalidInput;
    return error;
}

std::string count(int64_t n)
{
    std::ostringstream out;
    out << n;
    return out.str();
}

// The LoRA settings the job asks for, or none (full fine-tuning).
Result<std::optional<inference::LoraConfig>> loraSettings(const JobSpec &job)
{
    if (!job.has("lora.r")) {
        for (const auto &[key, value] : job.section("lora"))
            return makeError(ErrorCode::InvalidInput,
                             "lora." + key +
                                 " is set but lora.r is not: set lora.r (the rank) to train a LoRA "
                                 "adapter, or remove the lora section for full fine-tuning",
                             job.path);
        return std::optional<inference::LoraConfig>();
    }
    inference::LoraConfig config;
    config.rank = job.integer("lora.r");
    config.alpha = job.number("lora.alpha");
    config.dropout = job.number("lora.dropout");
    config.rslora = job.boolean("lora.use_rslora");
    for (int i = 0;; ++i) {
        const std::string key = "lora.target_modules." + std::to_string(i);
        if (!job.has(key))
            break;
        config.targetModules.push_back(job.raw(key));
    }
    if (config.targetModules.empty() && !job.raw("lora.target_modules").empty())
        config.targetModules.push_back(job.raw("lora.target_modules"));
    return std::optional<inference::LoraConfig>(config);
}

// Training-only config settings the recipe does not implement, refused by name.
Result<void> checkConfig(const inference::ModelConfig &config, int64_t blockSize, const std::string &configPath)
{
    if (!config.trainingUnimplemented.empty())
        return makeError(ErrorCode::InvalidInput,
                         config.trainingUnimplemented.front() + ": not implemented for training", configPath);
    if (config.family == inference::ModelFamily::Gpt2 && blockSize > config.maxPositions)
        return makeError(ErrorCode::InvalidInput,
                         "data.block_size " + std::to_string(blockSize) + " exceeds the model's n_positions " +
                             std::to_string(config.maxPositions),
                         configPath);
    return {};
}

// The dtype the checkpoint stores its floating weights in (config.json's dtype, else the first
// floating tensor's).
at::ScalarType checkpointDtype(const inference::ModelConfig &config, const bigmodel::Checkpoint &checkpoint)
{
    if (auto parsed = inference::parseComputeDType(config.torchDtype))
        return *parsed;
    for (const bigmodel::TensorInfo *info : checkpoint.tensors()) {
        if (bigmodel::dtypeIsFloating(info->dtype))
            if (auto type = inference::scalarTypeFor(info->dtype))
                return *type;
    }
    return at::kFloat;
}

// training.vocab_parallel and training.sequence_parallel (tensorparallel.h): applied with tensor
// parallelism, refused by name where they cannot apply.
Result<inference::TensorParallelOptions> readTensorParallelOptions(runtime::Accelerator &accelerator,
                                                                   const JobSpec &job)
{
    inference::TensorParallelOptions options;
    options.vocabParallel = job.boolean("training.vocab_parallel");
    options.sequenceParallel = job.boolean("training.sequence_parallel");
    // Refused as accel estimate-memory refuses them (one check, core/plan/tensorparallelsplit.h).
    runtime::MeshJob meshJob;
    meshJob.tensorParallel = accelerator.mesh().size(runtime::MeshDim::Tp);
    meshJob.contextParallel = accelerator.mesh().size(runtime::MeshDim::Cp);
    meshJob.vocabParallel = options.vocabParallel;
    meshJob.sequenceParallel = options.sequenceParallel;
    if (auto ok = runtime::checkMeshJob(meshJob); !ok)
        return makeError(ok.error().code, ok.error().message, job.path);
    return options;
}

// Batch tensors: ids [B, T] and labels [B, T] (kIgnoreLabel on prompts and padding), padded on
// the right to the longest sample with `pad`.
std::pair<torch::Tensor, torch::Tensor> makeBatch(const LmData &data, const std::vector<int64_t> &indices, int32_t pad)
{
    std::vector<std::vector<int32_t>> ids, labels;
    size_t longest = 0;
    for (int64_t index : indices) {
        ids.push_back(data.ids(index));
        labels.push_back(data.labels(index));
        longest = std::max(longest, ids.back().size());
    }
    auto idTensor = torch::full({int64_t(indices.size()), int64_t(longest)}, int64_t(pad), torch::kInt64);
    auto labelTensor = torch::full({int64_t(indices.size()), int64_t(longest)}, int64_t(kIgnoreLabel), torch::kInt64);
    auto idAccess = idTensor.accessor<int64_t, 2>();
    auto labelAccess = labelTensor.accessor<int64_t, 2>();
    for (size_t b = 0; b < ids.size(); ++b) {
        for (size_t t = 0; t < ids[b].size(); ++t) {
            idAccess[int64_t(b)][int64_t(t)] = ids[b][t];
            labelAccess[int64_t(b)][int64_t(t)] = labels[b][t];
        }
    }
    return {idTensor, labelTensor};
}

// Transformers' causal LM loss: position t predicts label t + 1; mean over the predicted tokens
// (labels other than kIgnoreLabel). With `sum` the sum instead. With `vocabParallel` the logits
// are this rank's vocabulary columns and the loss is computed over the group without joining them.
torch::Tensor lmLoss(const torch::Tensor &logits, const torch::Tensor &labels, bool sum = false,
                     const inference::TensorParallelGroup *vocabParallel = nullptr)
{
    const int64_t vocab = logits.size(-1), length = logits.size(1);
    auto predicted = logits.narrow(1, 0, length - 1).reshape({-1, vocab}).to(torch::kFloat);
    auto targets = labels.narrow(1, 1, length - 1).reshape({-1});
    if (vocabParallel) {
        const auto each = inference::vocabParallelCrossEntropy(predicted, targets, kIgnoreLabel, *vocabParallel);
        const auto total = each.sum();
        return sum ? total : total / (targets != kIgnoreLabel).sum().to(torch::kFloat);
    }
    auto options = F::CrossEntropyFuncOptions().ignore_index(kIgnoreLabel);
    if (sum)
        options.reduction(torch::kSum);
    return F::cross_entropy(predicted, targets, options);
}

struct LoadedModel {
    std::shared_ptr<CausalLM> lm;
    at::ScalarType checkpointDtype = at::kFloat;
    int64_t parameters = 0, trainable = 0;
    std::vector<std::string> adapted; // LoRA
};

// Builds the family's tree, loads the checkpoint (float32 for trained weights; a frozen base
// keeps the checkpoint's dtype under mixed precision), attaches LoRA and hands the parameters
// to torch's registry.
Result<LoadedModel> loadModel(runtime::Accelerator &accelerator, const JobSpec &job, const std::string &modelDir,
                              const inference::ModelConfig &config, const std::optional<inference::LoraConfig> &lora,
                              CausalLmTensorParallel *tensorParallel, const inference::TensorParallelOptions &options)
{
    auto checkpointPath = bigmodel::resolveCheckpointPath(modelDir);
    if (!checkpointPath)
        return tl::unexpected(checkpointPath.error());
    auto checkpoint = bigmodel::Checkpoint::open(*checkpointPath);
    if (!checkpoint)
        return tl::unexpected(checkpoint.error());
    auto created = inference::createCausalLM(config);
    if (!created)
        return tl::unexpected(asInvalid(created.error()));
    if (tensorParallel) { // before anything is read
        (*created)->setTensorParallelOptions(options);
        if (auto ok = (*created)->checkTensorParallel(tensorParallel->size()); !ok)
            return tl::unexpected(asInvalid(ok.error()));
    }
    LoadedModel loaded;
    loaded.lm = std::shared_ptr<CausalLM>(std::move(*created));
    loaded.checkpointDtype = checkpointDtype(config, *checkpoint);
    inference::DispatchOptions dispatch;
    const bool mixed = accelerator.mixedPrecision() != runtime::MixedPrecision::No;
    dispatch.computeDType = lora && mixed ? std::string() : std::string("float32");
    dispatch.strict = true;
    auto report = inference::dispatchCheckpoint(*loaded.lm, *checkpoint, dispatch);
    if (!report)
        return tl::unexpected(report.error());
    if (tensorParallel) { // this rank's part of each split layer, in storage of its own
        if (auto split = tensorParallel->split(*loaded.lm); !split)
            return tl::unexpected(asInvalid(split.error()));
    }
    // The tensors view the mapped checkpoint, which is read-only. Every rank maps the same files,
    // so nothing is broadcast (Accelerator::loadedOnEveryRank); trained weights that the strategy
    // does not copy into buffers of its own (DDP, one process) or that FP8 may rescale in place are
    // copied here. Under FSDP / ZeRO the strategy reads each rank's part from the mapping.
    const bool fp8 = accelerator.mixedPrecision() == runtime::MixedPrecision::Fp8;
    const bool copyTrained = !accelerator.strategyCopiesParameters();
    torch::NoGradGuard noGrad;
    for (const auto &p : loaded.lm->namedParameters()) {
        at::Tensor &value = p.parameter->value;
        if ((fp8 || (!lora && copyTrained)) && !value.storage().resizable())
            value = value.clone();
    }
    if (lora) {
        auto adapted = inference::attachLora(*loaded.lm, *lora, at::detail::createCPUGenerator(job.seed));
        if (!adapted)
            return makeError(ErrorCode::InvalidInput, adapted.error().message, job.path);
        loaded.adapted = *adapted;
    }
    inference::setExecutionDevices(*loaded.lm, at::Device(accelerator.deviceName()));
    loaded.lm->registerTorchParameters(
        [&](const std::string &name) { return !lora || inference::isLoraParameter(name); });
    if (tensorParallel)
        tensorParallel->collectSplitTensors(*loaded.lm);
    for (const auto &p : static_cast<torch::nn::Module &>(*loaded.lm).parameters()) {
        loaded.parameters += p.numel();
        loaded.trainable += p.requires_grad() ? p.numel() : 0;
    }
    accelerator.loadedOnEveryRank(loaded.lm);
    return loaded;
}

// Mean next-token loss over at most evalBatches x batch size x replicas samples of `data` (the same
// on every rank; the ranks of one data-parallel replica, a tp group, read the same samples).
double evaluate(runtime::Accelerator &accelerator, CausalLM &lm, const LmData &data, const TrainingSettings &t,
                int32_t pad, const CausalLmContextParallel *contextParallel)
{
    const runtime::DeviceMesh &mesh = accelerator.mesh();
    const int64_t ranks = mesh.dataParallelSize();
    const int64_t total = std::min<int64_t>(data.samples(), t.evalBatches * t.batchSize * ranks);
    double sum = 0, n = 0;
    for (int64_t start = mesh.dataParallelIndex(accelerator.processIndex()) * t.batchSize; start < total;
         start += t.batchSize * ranks) {
        std::vector<int64_t> indices;
        for (int64_t i = start; i < std::min(total, start + t.batchSize); ++i)
            indices.push_back(i);
        auto [ids, labels] = makeBatch(data, indices, pad);
        auto autocast = accelerator.autocast();
        if (contextParallel) { // this rank's part of the sequences: the sums over the ranks are whole
            const auto [partSum, partCount] = contextParallel->sums(lm, ids, labels, pad);
            sum += partSum;
            n += partCount;
            continue;
        }
        auto logits = lm.forward(accelerator.toDevice(ids), nullptr);
        auto target = accelerator.toDevice(labels);
        sum += lmLoss(logits, target, true, lm.vocabParallel().get()).item<double>();
        n += double((target.narrow(1, 1, target.size(1) - 1) != kIgnoreLabel).sum().item<int64_t>());
    }
    auto totals = accelerator.reduce(torch::tensor({sum, n}, torch::kDouble));
    return totals[0].item<double>() / std::max(1.0, totals[1].item<double>());
}

// The families' Linear layers (the LoRA branches' too) convert to FP8 like torch::nn::Linear.
void registerFamilyLinears()
{
    static std::once_flag once;
    std::call_once(once, [] {
        runtime::registerLinearLayerKind([](torch::nn::Module &module) -> std::optional<runtime::LinearLayerView> {
            if (auto *linear = dynamic_cast<inference::Linear *>(&module))
                return runtime::LinearLayerView{linear->baseWeight()->value, linear->inFeatures(),
                                                linear->outFeatures()};
            return std::nullopt;
        });
    });
}

} // namespace

Result<CausalLmSetup> readCausalLmSetup(const JobSpec &job)
{
    CausalLmSetup setup;
    setup.modelDir = job.pathValue("model.path");
    auto config = inference::loadModelConfig(setup.modelDir);
    if (!config)
        return tl::unexpected(asInvalid(config.error()));
    setup.config = *config;
    setup.blockSize = job.integer("data.block_size");
    if (auto ok = checkConfig(setup.config, setup.blockSize, setup.modelDir + "/config.json"); !ok)
        return tl::unexpected(ok.error());
    auto lora = loraSettings(job);
    if (!lora)
        return tl::unexpected(lora.error());
    setup.lora = *lora;
    auto format = parseLmDataFormat(job.text("data.format"));
    if (!format)
        return makeError(ErrorCode::InvalidInput, format.error().message, job.path);
    setup.format = *format;
    const std::string dtype = job.text("output.dtype");
    if (dtype != "auto") {
        auto parsed = inference::parseComputeDType(dtype);
        if (!parsed)
            return makeError(ErrorCode::InvalidInput, "output.dtype: " + parsed.error().message, job.path);
        setup.outputDtype = *parsed;
    }
    auto shard = bigmodel::parseMemorySize(job.text("output.max_shard_size"));
    if (!shard || *shard <= 0)
        return makeError(ErrorCode::InvalidInput,
                         "output.max_shard_size: expected a size such as 5GB or 500MB; got " +
                             job.text("output.max_shard_size"),
                         job.path);
    setup.maxShardBytes = uint64_t(*shard);
    return setup;
}

Result<void> runCausalLmRecipe(runtime::Accelerator &accelerator, const JobSpec &job)
{
    registerFamilyLinears();
    auto setupRead = readCausalLmSetup(job);
    if (!setupRead)
        return tl::unexpected(setupRead.error());
    const CausalLmSetup &setup = *setupRead;
    const TrainingSettings &t = job.training;

    // The tokenizer and the data: refused before the model is built.
    auto tokenizer = tokenizer::Tokenizer::load(setup.modelDir);
    if (!tokenizer)
        return tl::unexpected(asInvalid(tokenizer.error()));
    auto eosFound = documentEndId(*tokenizer, setup.config.eosTokenIds, setup.modelDir);
    if (!eosFound)
        return tl::unexpected(eosFound.error());
    const int32_t eos = *eosFound;
    LmDataOptions dataOptions;
    dataOptions.blockSize = setup.blockSize;
    dataOptions.textKey = job.text("data.text_key");
    dataOptions.format = setup.format;
    auto train = loadLmData(job.pathValue("data.train"), *tokenizer, eos, dataOptions);
    if (!train)
        return tl::unexpected(train.error());
    std::optional<LmData> eval;
    if (const std::string evalPath = job.pathValue("data.eval"); !evalPath.empty()) {
        dataOptions.key = "data.eval";
        auto read = loadLmData(evalPath, *tokenizer, eos, dataOptions);
        if (!read)
            return tl::unexpected(read.error());
        eval = std::move(*read);
    }
    for (const LmData *data : {&*train, eval ? &*eval : nullptr}) {
        const auto outside = [&](const std::vector<int32_t> &ids) {
            return std::find_if(ids.begin(), ids.end(),
                                [&](int32_t id) { return id < 0 || id >= setup.config.vocabSize; });
        };
        if (!data)
            continue;
        std::vector<const std::vector<int32_t> *> lists{&data->packed};
        for (const auto &ids : data->examples)
            lists.push_back(&ids);
        for (const auto *ids : lists) {
            if (auto it = outside(*ids); it != ids->end())
                return makeError(ErrorCode::InvalidInput,
                                 "the tokenizer produced id " + std::to_string(*it) +
                                     ", outside the model's vocab_size " + std::to_string(setup.config.vocabSize),
                                 setup.modelDir);
        }
    }
    const int32_t pad = eos;

    auto tensorParallel = CausalLmTensorParallel::create(accelerator, job, setup);
    if (!tensorParallel)
        return tl::unexpected(tensorParallel.error());
    auto contextParallel = CausalLmContextParallel::create(accelerator, job, setup);
    if (!contextParallel)
        return tl::unexpected(contextParallel.error());
    auto tensorParallelOptions = readTensorParallelOptions(accelerator, job);
    if (!tensorParallelOptions)
        return tl::unexpected(tensorParallelOptions.error());
    auto loaded = loadModel(accelerator, job, setup.modelDir, setup.config, setup.lora, tensorParallel->get(),
                            *tensorParallelOptions);
    if (!loaded)
        return tl::unexpected(loaded.error());
    std::shared_ptr<CausalLM> lm = loaded->lm;
    if (*contextParallel) {
        if (auto attached = (*contextParallel)->attach(*lm); !attached)
            return attached;
    }
    lm->train();

    // Sharding units: every block, then the model itself (its embeddings, final norm and head).
    std::vector<std::shared_ptr<runtime::ShardedModule>> units;
    for (const auto &block : lm->blocks())
        units.push_back(accelerator.wrap(block));
    auto root = accelerator.wrap(lm);
    const bool checkpointing = job.boolean("training.gradient_checkpointing");
    lm->setRunners(
        [units, checkpointing](size_t block, const at::Tensor &input, const CausalLM::BlockBody &body) {
            return (*units[block])([&] { return checkpointing ? checkpointed(body, input) : body(input); });
        },
        [root](const std::function<at::Tensor()> &forward) { return (*root)(forward); });

    const LmData &data = *train;
    const double tokensPerSample = data.format == LmDataFormat::Text ? double(data.blockSize) : [&] {
        double tokens = 0;
        for (const auto &ids : data.examples)
            tokens += double(ids.size());
        return tokens / double(std::max<size_t>(1, data.examples.size()));
    }();
    std::string what = data.format == LmDataFormat::Text
                           ? count(data.samples()) + " windows of " + count(data.blockSize) + " tokens"
                           : count(data.samples()) + " instruction examples";
    accelerator.print(
        "causal_lm: " + setup.config.modelType + " (" + lm->typeName() + "), " + count(setup.config.numLayers) +
        " layers, hidden " + count(setup.config.hiddenSize) + ", " + count(loaded->parameters) +
        (*tensorParallel ? " parameters on this rank, " : " parameters, ") + count(loaded->trainable) + " trained" +
        (setup.lora
             ? " (LoRA r " + count(setup.lora->rank) + " on " + count(int64_t(loaded->adapted.size())) + " layers)"
             : std::string(" (full fine-tuning)")) +
        "; data: " + count(data.files) + " file(s), " + count(data.documents) + " " +
        (data.format == LmDataFormat::Text ? "documents, " : "examples, ") + count(data.tokens) + " tokens in " +
        std::to_string(data.seconds) + " s, " + what + "; " + count(accelerator.numProcesses()) + " process(es), " +
        accelerator.strategyName() +
        (*tensorParallel || *contextParallel
             ? ", mesh " + accelerator.mesh().describe() + " (" +
                   (*tensorParallel ? "tp collectives: " + (*tensorParallel)->transport() : std::string()) +
                   (tensorParallelOptions->vocabParallel ? ", vocab-parallel embedding and head" : "") +
                   (tensorParallelOptions->sequenceParallel ? ", sequence-parallel norms" : "") +
                   (*tensorParallel && *contextParallel ? "; " : "") +
                   (*contextParallel ? (*contextParallel)->describe() : std::string()) + ")"
             : std::string()));
    if (data.cutExamples > 0 || data.droppedExamples > 0)
        accelerator.print("note: data.train: " + count(data.cutExamples) + " example(s) longer than data.block_size " +
                          count(data.blockSize) + " were cut to it; " + count(data.droppedExamples) +
                          " kept no completion token and were left out");

    std::vector<torch::Tensor> trained;
    for (const auto &p : static_cast<torch::nn::Module &>(*lm).parameters())
        if (p.requires_grad())
            trained.push_back(p);
    runtime::FusedAdamW optimizer(trained,
                                  torch::optim::AdamWOptions(t.learningRate)
                                      .betas({job.number("training.adam_beta1"), job.number("training.adam_beta2")})
                                      .eps(job.number("training.adam_epsilon"))
                                      .weight_decay(t.weightDecay));

    int64_t logitsBytes = 0; // of the first batch, on this rank
    TrainingTask task;
    task.datasetSize = data.samples();
    task.tokensPerSample = int64_t(std::llround(tokensPerSample));
    task.model = lm;
    task.optimizer = &optimizer;
    task.loss = [&](const std::vector<int64_t> &indices) {
        auto [ids, labels] = makeBatch(data, indices, pad);
        if (*contextParallel)
            return (*contextParallel)->loss(*lm, ids, labels, pad);
        auto logits = lm->forward(accelerator.toDevice(ids), nullptr);
        if (logitsBytes == 0)
            logitsBytes = int64_t(logits.nbytes());
        return lmLoss(logits, accelerator.toDevice(labels), false, lm->vocabParallel().get());
    };
    if (*tensorParallel)
        task.clipGradients = [&](double maxNorm) { return (*tensorParallel)->clipGradients(maxNorm); };
    if (eval) {
        task.evalLoss = [&] { return evaluate(accelerator, *lm, *eval, t, pad, contextParallel->get()); };
        task.perplexity = true;
    }
    auto summary = runTraining(accelerator, job, task);
    if (!summary)
        return tl::unexpected(summary.error());
    if (const inference::TensorParallel vocab = lm->vocabParallel())
        accelerator.print("vocab-parallel: logits of the first batch " + count(logitsBytes) + " bytes on this rank (" +
                          count(setup.config.vocabSize / vocab->size) + " of " + count(setup.config.vocabSize) +
                          " vocabulary columns)");
    accelerator.unshardModel(); // every rank: rank 0 alone writes below
    if (*tensorParallel)
        (*tensorParallel)->gather(*lm);
    lm->eval();

    std::string written;
    if (accelerator.isMainProcess()) {
        if (setup.lora) {
            written = (fs::path(job.outputDir) / "adapter").string();
            if (auto ok = inference::saveLoraAdapter(*lm, *setup.lora, written, fs::absolute(setup.modelDir).string());
                !ok)
                return ok;
        } else {
            written = (fs::path(job.outputDir) / "model").string();
            auto ok = inference::writePretrained(
                *lm, setup.modelDir, written, setup.outputDtype.value_or(loaded->checkpointDtype), setup.maxShardBytes);
            if (!ok)
                return tl::unexpected(ok.error());
        }
        if (checkpointing)
            std::cout << "gradient checkpointing: " << recomputedForwards()
                      << " block forwards recomputed in backward on rank 0" << std::endl;
        std::cout << "done: " << summary->steps << " steps, final loss " << summary->finalLoss << ", "
                  << summary->tokensPerSecond << " tokens/s, " << summary->seconds << " s; "
                  << (setup.lora ? "adapter: " : "model: ") << written << std::endl;
    }
    accelerator.waitForEveryone();
    return {};
}

} // namespace accel::worker
