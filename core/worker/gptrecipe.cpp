// Recipe `gpt`: a decoder-only transformer language model on bytes (vocabulary 256), trained
// from scratch on a text corpus with AdamW, warm-up + cosine, evaluation, checkpoints, resume.
// Recipe `distill`: the same student trained with a frozen teacher gpt (loaded from a gpt run's
// model.safetensors, prepared as a second model) and a distillation term in the loss.
#include "core/worker/jobrunner.h"
#include "core/worker/trainingloop.h"

#include "core/common/fileutil.h"
#include "core/runtime/accelerator.h"
#include "core/runtime/fusedadamw.h"
#include "core/runtime/strategy/shardedmodule.h"
#include "core/runtime/tensorio.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

namespace accel::worker {

namespace fs = std::filesystem;
namespace F = torch::nn::functional;

namespace {

// The shape of a gpt (the job schema's model.* fields hold the defaults).
struct GptConfig {
    int64_t nLayer = 0, nHead = 1, nEmbd = 0, blockSize = 0;
    double dropout = 0.0;
};

struct AttentionImpl : torch::nn::Module {
    AttentionImpl(const GptConfig &c) : nHead(c.nHead)
    {
        qkv = register_module("qkv", torch::nn::Linear(c.nEmbd, 3 * c.nEmbd));
        proj = register_module("proj", torch::nn::Linear(c.nEmbd, c.nEmbd));
        drop = register_module("drop", torch::nn::Dropout(c.dropout));
        mask = torch::ones({c.blockSize, c.blockSize}, torch::kBool).tril();
    }
    torch::Tensor forward(const torch::Tensor &x)
    {
        const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hs = C / nHead;
        auto parts = qkv(x).split(C, 2);
        auto q = parts[0].view({B, T, nHead, hs}).transpose(1, 2);
        auto k = parts[1].view({B, T, nHead, hs}).transpose(1, 2);
        auto v = parts[2].view({B, T, nHead, hs}).transpose(1, 2);
        auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(hs)));
        att = att.masked_fill(mask.slice(0, 0, T).slice(1, 0, T).logical_not(), -INFINITY);
        att = drop(torch::softmax(att, -1));
        auto y = torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
        return drop(proj(y));
    }
    int64_t nHead;
    torch::nn::Linear qkv{nullptr}, proj{nullptr};
    torch::nn::Dropout drop{nullptr};
    torch::Tensor mask;
};
TORCH_MODULE(Attention);

struct BlockImpl : torch::nn::Module {
    BlockImpl(const GptConfig &c)
    {
        ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.nEmbd})));
        attn = register_module("attn", Attention(c));
        ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.nEmbd})));
        fc = register_module("fc", torch::nn::Linear(c.nEmbd, 4 * c.nEmbd));
        proj = register_module("proj", torch::nn::Linear(4 * c.nEmbd, c.nEmbd));
        drop = register_module("drop", torch::nn::Dropout(c.dropout));
    }
    torch::Tensor forward(torch::Tensor x)
    {
        x = x + attn(ln1(x));
        return x + drop(proj(F::gelu(fc(ln2(x)))));
    }
    torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
    Attention attn{nullptr};
    torch::nn::Linear fc{nullptr}, proj{nullptr};
    torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Block);

struct Gpt : torch::nn::Module {
    // With `accelerator`, each Block is offered as a sharding unit as soon as it is built
    // (Accelerator::wrapBuilt: under ZeRO-3 with zero3_init_flag it is sharded there and then, so
    // no rank ever holds every block whole); call wrapRoot() once the model is made. Without it
    // (a model loaded from a file), call wrapUnits() before prepareModel().
    explicit Gpt(const GptConfig &c, runtime::Accelerator *accelerator = nullptr) : config(c)
    {
        wte = register_module("wte", torch::nn::Embedding(256, c.nEmbd));
        wpe = register_module("wpe", torch::nn::Embedding(c.blockSize, c.nEmbd));
        blocks = register_module("blocks", torch::nn::ModuleList());
        for (int64_t i = 0; i < c.nLayer; ++i) {
            Block block(c);
            blocks->push_back(block);
            if (accelerator)
                units.push_back(accelerator->wrapBuilt(block.ptr()));
        }
        lnf = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.nEmbd})));
        initialise();
    }
    // GPT-2's initialisation, parameter by parameter in the order of named_parameters(), so the
    // random draws are the same whether the blocks are sharded or not; a block's parameters are
    // written inside its unit's modify(), which holds them whole for the call.
    void initialise()
    {
        torch::NoGradGuard noGrad;
        std::vector<std::string> visited;
        const auto initialiseModule = [&](const std::string &prefix, torch::nn::Module &module) {
            for (auto &item : module.named_parameters()) {
                const std::string name = prefix + item.key();
                visited.push_back(name);
                auto &p = item.value();
                if (name.find("ln") != std::string::npos)
                    continue; // LayerNorm keeps ones/zeros
                if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0)
                    p.zero_();
                else if (name.find("proj.weight") != std::string::npos)
                    p.normal_(0.0, 0.02 / std::sqrt(2.0 * double(config.nLayer)));
                else
                    p.normal_(0.0, 0.02);
            }
        };
        initialiseModule("wte.", *wte);
        initialiseModule("wpe.", *wpe);
        for (size_t i = 0; i < blocks->size(); ++i) {
            const auto change = [&, i] { initialiseModule("blocks." + std::to_string(i) + ".", *blocks[i]); };
            if (units.empty())
                change();
            else
                units[i]->modify(change);
        }
        initialiseModule("ln_f.", *lnf);
        const auto all = named_parameters();
        bool inOrder = visited.size() == all.size();
        for (size_t i = 0; inOrder && i < all.size(); ++i)
            inOrder = visited[i] == all[i].key();
        if (!inOrder)
            throw std::logic_error("gpt: initialise() visits the parameters out of named_parameters() order");
    }
    // The whole model becomes the root unit (its embeddings and final LayerNorm); call once made.
    void wrapRoot(runtime::Accelerator &accelerator, const std::shared_ptr<Gpt> &self)
    {
        root = accelerator.wrap(self);
    }
    // Each transformer block, then the whole model, become sharding units (FSDP's transformer
    // auto-wrap; DeepSpeed ZeRO-3 gathers per unit); call before prepareModel().
    void wrapUnits(runtime::Accelerator &accelerator, const std::shared_ptr<Gpt> &self)
    {
        for (const auto &block : *blocks)
            units.push_back(accelerator.wrap(block));
        wrapRoot(accelerator, self);
    }
    // Logits [B, T, 256]; the output projection is tied to the token embedding.
    torch::Tensor forward(const torch::Tensor &tokens)
    {
        const auto body = [&] {
            const int64_t T = tokens.size(1);
            auto positions = torch::arange(T, torch::kInt64);
            auto x = wte(tokens) + wpe(positions);
            for (size_t i = 0; i < blocks->size(); ++i) {
                auto *block = blocks[i]->as<Block>();
                x = units.empty() ? block->forward(x) : (*units[i])([&] { return block->forward(x); });
            }
            return F::linear(lnf(x), wte->weight);
        };
        return root ? (*root)(body) : body();
    }
    GptConfig config;
    torch::nn::Embedding wte{nullptr}, wpe{nullptr};
    torch::nn::ModuleList blocks{nullptr};
    torch::nn::LayerNorm lnf{nullptr};
    std::vector<std::shared_ptr<runtime::ShardedModule>> units;
    std::shared_ptr<runtime::ShardedModule> root;
};

Result<std::string> readCorpus(const std::string &path, const JobSpec &job)
{
    if (path.empty())
        return makeError(ErrorCode::InvalidInput, "data.corpus: missing (a text file or a folder of text files)",
                         job.path);
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        std::vector<fs::path> files;
        for (const auto &entry : fs::recursive_directory_iterator(path, ec)) {
            if (entry.is_regular_file())
                files.push_back(entry.path());
        }
        std::sort(files.begin(), files.end());
        std::string all;
        for (const auto &file : files) {
            auto text = fileutil::readFile(file.string());
            if (!text)
                return tl::unexpected(text.error());
            all += *text;
            all += "\n";
        }
        return all;
    }
    if (!fs::exists(path, ec))
        return makeError(ErrorCode::NotFound, "data.corpus: " + path + " does not exist", job.path);
    return fileutil::readFile(path);
}

// The teacher of the distill recipe and how much the loss follows it.
struct Distillation {
    std::shared_ptr<Gpt> teacher;
    double alpha = 0;       // loss = (1 - alpha) * cross entropy + alpha * T^2 * KL(teacher || student)
    double temperature = 1; // T: both distributions softened by it
};

// The gpt shape under `prefix` ("model." or "teacher.model."): the job's values (checked
// against the schema by JobSpec::parse), else `defaults` for the sizes and the schema's dropout.
Result<GptConfig> readGptConfig(const JobSpec &job, const std::string &prefix, const GptConfig &defaults)
{
    auto integer = [&](const char *key, int64_t fallback) {
        return job.has(prefix + key) ? job.integer(prefix + key) : fallback;
    };
    GptConfig config{integer("n_layer", defaults.nLayer), integer("n_head", defaults.nHead),
                     integer("n_embd", defaults.nEmbd), integer("block_size", defaults.blockSize),
                     job.number(prefix + "dropout")};
    if (config.nEmbd % config.nHead != 0)
        return makeError(ErrorCode::InvalidInput,
                         prefix + "n_embd (" + std::to_string(config.nEmbd) + ") must be divisible by " + prefix +
                             "n_head (" + std::to_string(config.nHead) + ")",
                         job.path);
    return config;
}

// The student's shape: model.* with the schema's defaults.
GptConfig studentDefaults(const JobSpec &job)
{
    return GptConfig{job.integer("model.n_layer"), job.integer("model.n_head"), job.integer("model.n_embd"),
                     job.integer("model.block_size"), 0.0};
}

// distill: teacher.model.* (default: the student's), teacher.weights (required), distill.alpha,
// distill.temperature. The teacher sees the student's context length.
Result<Distillation> readDistillation(runtime::Accelerator &accelerator, const JobSpec &job, const GptConfig &student)
{
    auto config = readGptConfig(job, "teacher.model.", student);
    if (!config)
        return tl::unexpected(config.error());
    if (config->blockSize != student.blockSize)
        return makeError(ErrorCode::InvalidInput,
                         "teacher.model.block_size (" + std::to_string(config->blockSize) +
                             ") must equal model.block_size (" + std::to_string(student.blockSize) + ")",
                         job.path);
    Distillation distillation;
    distillation.alpha = job.number("distill.alpha");
    distillation.temperature = job.number("distill.temperature");
    const std::string weights = job.pathValue("teacher.weights");
    std::error_code ec;
    if (!fs::is_regular_file(weights, ec))
        return makeError(ErrorCode::InvalidInput, "teacher.weights: " + weights + " does not exist", job.path);
    distillation.teacher = std::make_shared<Gpt>(*config);
    if (auto loaded = runtime::loadModelSafetensors(*distillation.teacher, weights, true); !loaded)
        return makeError(ErrorCode::InvalidInput,
                         "teacher.weights: " + loaded.error().message +
                             " (teacher.model must describe the gpt that wrote it)",
                         job.path);
    distillation.teacher->eval();
    for (auto &p : distillation.teacher->parameters())
        p.requires_grad_(false);
    distillation.teacher->wrapUnits(accelerator, distillation.teacher);
    return distillation;
}

} // namespace

static Result<void> runLanguageModel(runtime::Accelerator &accelerator, const JobSpec &job, bool distill)
{
    auto studentConfig = readGptConfig(job, "model.", studentDefaults(job));
    if (!studentConfig)
        return tl::unexpected(studentConfig.error());
    const GptConfig config = *studentConfig;
    const double evalFraction = job.number("data.eval_fraction");
    auto corpus = readCorpus(job.pathValue("data.corpus"), job);
    if (!corpus)
        return tl::unexpected(corpus.error());
    const int64_t total = int64_t(corpus->size());
    const int64_t evalBytes = std::clamp<int64_t>(int64_t(double(total) * evalFraction), 0, total);
    auto bytes = torch::from_blob(corpus->data(), {total}, torch::kUInt8).to(torch::kInt64);
    auto train = bytes.narrow(0, 0, total - evalBytes);
    auto eval = bytes.narrow(0, total - evalBytes, evalBytes);
    const int64_t T = config.blockSize;
    if (train.size(0) < T + 1)
        return makeError(ErrorCode::InvalidInput,
                         "data.corpus: " + std::to_string(train.size(0)) +
                             " training bytes, fewer than block_size + 1 = " + std::to_string(T + 1),
                         job.path);
    auto windows = train.unfold(0, T + 1, T); // [N, T + 1], non-overlapping
    torch::Tensor evalWindows = eval.size(0) >= T + 1 ? eval.unfold(0, T + 1, T) : torch::Tensor();

    auto model = std::make_shared<Gpt>(config, &accelerator);
    model->wrapRoot(accelerator, model);
    int64_t parameterCount = 0;
    for (const auto &p : model->parameters())
        parameterCount += p.numel();
    accelerator.print("gpt: " + std::to_string(config.nLayer) + " layers, " + std::to_string(config.nHead) +
                      " heads, n_embd " + std::to_string(config.nEmbd) + ", context " + std::to_string(T) + ", " +
                      std::to_string(parameterCount) + " parameters; " + std::to_string(windows.size(0)) +
                      " training windows; " + std::to_string(accelerator.numProcesses()) + " process(es), " +
                      accelerator.strategyName());
    Distillation distillation;
    if (distill) {
        auto read = readDistillation(accelerator, job, config);
        if (!read)
            return tl::unexpected(read.error());
        distillation = std::move(*read);
        int64_t teacherCount = 0;
        for (const auto &p : distillation.teacher->parameters())
            teacherCount += p.numel();
        const GptConfig &c = distillation.teacher->config;
        accelerator.print("teacher: " + std::to_string(c.nLayer) + " layers, " + std::to_string(c.nHead) +
                          " heads, n_embd " + std::to_string(c.nEmbd) + ", " + std::to_string(teacherCount) +
                          " parameters, frozen; loss = " + std::to_string(1.0 - distillation.alpha) +
                          " x cross entropy + " + std::to_string(distillation.alpha) + " x T^2 x KL, T " +
                          std::to_string(distillation.temperature));
    }
    const TrainingSettings &t = job.training;
    runtime::FusedAdamW optimizer(
        model->parameters(), torch::optim::AdamWOptions(t.learningRate).betas({0.9, 0.95}).weight_decay(t.weightDecay));

    TrainingTask task;
    task.datasetSize = windows.size(0);
    task.tokensPerSample = T;
    task.model = model;
    if (distillation.teacher)
        task.referenceModels.push_back(distillation.teacher);
    task.optimizer = &optimizer;
    task.loss = [&](const std::vector<int64_t> &indices) {
        auto batch = accelerator.toDevice(windows.index_select(0, torch::tensor(indices, torch::kInt64)));
        auto logits = model->forward(batch.slice(1, 0, T)).reshape({-1, 256}).to(torch::kFloat);
        auto loss = F::cross_entropy(logits, batch.slice(1, 1, T + 1).reshape({-1}));
        if (!distillation.teacher)
            return loss;
        torch::Tensor reference;
        {
            torch::NoGradGuard noGrad;
            reference = distillation.teacher->forward(batch.slice(1, 0, T)).reshape({-1, 256}).to(torch::kFloat);
        }
        // KL(teacher || student) per token on distributions softened by T, scaled by T^2 so its
        // gradients keep their size as T changes.
        const double temperature = distillation.temperature;
        auto kl = F::kl_div(F::log_softmax(logits / temperature, 1), F::softmax(reference / temperature, 1),
                            F::KLDivFuncOptions().reduction(torch::kBatchMean));
        return loss * (1.0 - distillation.alpha) + kl * (distillation.alpha * temperature * temperature);
    };
    if (evalWindows.defined() && evalWindows.size(0) > 0) {
        task.evalLoss = [&]() {
            const int64_t count =
                std::min<int64_t>(evalWindows.size(0), t.evalBatches * t.batchSize * accelerator.numProcesses());
            double sum = 0, n = 0;
            for (int64_t start = accelerator.processIndex() * t.batchSize; start < count;
                 start += t.batchSize * accelerator.numProcesses()) {
                auto batch = accelerator.toDevice(evalWindows.slice(0, start, std::min(count, start + t.batchSize)));
                auto autocast = accelerator.autocast();
                auto logits = model->forward(batch.slice(1, 0, T));
                sum += F::cross_entropy(logits.reshape({-1, 256}).to(torch::kFloat),
                                        batch.slice(1, 1, T + 1).reshape({-1}),
                                        F::CrossEntropyFuncOptions().reduction(torch::kSum))
                           .item<double>();
                n += double(batch.size(0) * T);
            }
            auto totals = accelerator.reduce(torch::tensor({sum, n}, torch::kDouble));
            return totals[0].item<double>() / std::max(1.0, totals[1].item<double>());
        };
    }
    auto summary = runTraining(accelerator, job, task);
    if (!summary)
        return tl::unexpected(summary.error());
    accelerator.unshardModel(); // every rank: rank 0 alone saves and samples below

    if (accelerator.isMainProcess()) {
        std::error_code ec;
        fs::create_directories(job.outputDir, ec);
        if (auto saved =
                runtime::saveModelSafetensors(*model, (fs::path(job.outputDir) / "model.safetensors").string());
            !saved)
            return saved;
        // A short sample, so a person sees what the model learnt.
        torch::NoGradGuard noGrad;
        model->eval();
        const std::string prompt = job.text("sample.prompt");
        std::vector<int64_t> tokens(prompt.begin(), prompt.end());
        auto generator = at::detail::createCPUGenerator(job.seed);
        const int64_t length = job.integer("sample.length");
        for (int64_t i = 0; i < length; ++i) {
            const int64_t start = std::max<int64_t>(0, int64_t(tokens.size()) - T);
            auto context =
                torch::tensor(std::vector<int64_t>(tokens.begin() + start, tokens.end()), torch::kInt64).unsqueeze(0);
            auto logits = model->forward(context).select(1, -1).squeeze(0) / 0.8;
            tokens.push_back(torch::multinomial(torch::softmax(logits, -1), 1, false, generator).item<int64_t>());
        }
        std::string sample(tokens.begin(), tokens.end());
        for (char &c : sample) {
            if ((unsigned char)c < 32 && c != '\n')
                c = ' ';
        }
        std::cout << "sample: " << sample << "\n";
        std::cout << "done: " << summary->steps << " steps, final loss " << summary->finalLoss << ", "
                  << summary->tokensPerSecond << " tokens/s, " << summary->seconds
                  << " s; model: " << (fs::path(job.outputDir) / "model.safetensors").string() << std::endl;
    }
    return {};
}

Result<void> runGptRecipe(runtime::Accelerator &accelerator, const JobSpec &job)
{
    return runLanguageModel(accelerator, job, false);
}

Result<void> runDistillRecipe(runtime::Accelerator &accelerator, const JobSpec &job)
{
    return runLanguageModel(accelerator, job, true);
}

} // namespace accel::worker
