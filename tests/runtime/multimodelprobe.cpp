// accel-runtime-probe multimodel: one rank of a job with several prepared models, started by
// tst_multimodel (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set, or none for one process).
// Usage: accel-runtime-probe multimodel key=value ...
//   steps= batch= (per rank) out= teacher=1 (a frozen teacher and a distillation term) second=1 (a
//   second trained model with an optimizer of its own) clip=1 max_norm= save_at= checkpoint=
//   resume= resume_step= shared_optimizer=1 (one optimizer over the student and the second model)
// Models, in preparation order: the student (model 0, AdamW), the teacher (model 1, frozen),
// the second model (model 2 or 1, SGD with momentum). Every block and every model is wrapped as
// a sharding unit. Step s trains on the global samples [s*G, (s+1)*G) mod N (G = batch x world),
// rank r on its r-th slice of them, so one process with batch G computes the same steps.
// Rank 0 writes to `out`: loss lines, strategy names, the training memory after the last
// backward, the initial and final teacher weights and every trained parameter, in hex floats.
#include "core/runtime/accelerator.h"
#include "core/runtime/strategy/shardedmodule.h"
#include "core/runtime/training.h"

#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

using namespace accel::runtime;
namespace F = torch::nn::functional;

namespace {

std::map<std::string, std::string> g_args;

std::string arg(const std::string &key, const std::string &fallback = {})
{
    auto it = g_args.find(key);
    return it == g_args.end() ? fallback : it->second;
}
int64_t intArg(const std::string &key, int64_t fallback)
{
    return std::stoll(arg(key, std::to_string(fallback)));
}

std::string hex(double value)
{
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%a", value);
    return buffer;
}

struct BlockImpl : torch::nn::Module {
    BlockImpl() { fc = register_module("fc", torch::nn::Linear(32, 32)); }
    torch::Tensor forward(const torch::Tensor &x) { return x + torch::tanh(fc(x)); }
    torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Block);

// Input layer, residual tanh blocks, output layer; blocks and the model run through their holders.
struct Stack : torch::nn::Module {
    Stack(int64_t blocksCount, int64_t outputs)
    {
        in = register_module("in", torch::nn::Linear(8, 32));
        blocks = register_module("blocks", torch::nn::ModuleList());
        for (int64_t i = 0; i < blocksCount; ++i)
            blocks->push_back(Block());
        out = register_module("out", torch::nn::Linear(32, outputs));
    }
    void wrapUnits(Accelerator &accelerator, const std::shared_ptr<Stack> &self)
    {
        for (const auto &block : *blocks)
            units.push_back(accelerator.wrap(block));
        root = accelerator.wrap(self);
    }
    torch::Tensor forward(const torch::Tensor &input)
    {
        return (*root)([&] {
            auto x = torch::tanh(in(input));
            for (size_t i = 0; i < blocks->size(); ++i)
                x = (*units[i])([&] { return blocks[i]->as<Block>()->forward(x); });
            return out(x);
        });
    }
    torch::nn::Linear in{nullptr}, out{nullptr};
    torch::nn::ModuleList blocks{nullptr};
    std::vector<std::shared_ptr<ShardedModule>> units;
    std::shared_ptr<ShardedModule> root;
};

std::shared_ptr<Stack> makeStack(uint64_t seed, int64_t blocks, int64_t outputs)
{
    torch::manual_seed(seed);
    return std::make_shared<Stack>(blocks, outputs);
}

void addParameters(std::vector<std::string> &lines, const std::string &kind, const std::string &prefix,
                   torch::nn::Module &model)
{
    for (const auto &parameter : model.named_parameters()) {
        auto flat = parameter.value().detach().reshape({-1});
        for (int64_t i = 0; i < flat.numel(); ++i)
            lines.push_back(kind + " " + prefix + parameter.key() + "[" + std::to_string(i) + "] " +
                            hex(flat[i].item<double>()));
    }
}

int run()
{
    AcceleratorOptions options;
    options.rendezvousTimeoutS = 60;
    options.collectiveTimeoutS = 60;
    auto created = Accelerator::create(options);
    if (!created) {
        std::cerr << "accel-runtime-probe multimodel: " << created.error().toString() << std::endl;
        return 3;
    }
    Accelerator &accelerator = **created;
    const bool withTeacher = arg("teacher") == "1", withSecond = arg("second") == "1";
    auto student = makeStack(11, 3, 4);
    auto teacher = withTeacher ? makeStack(22, 6, 4) : nullptr;
    auto second = withSecond ? makeStack(33, 2, 4) : nullptr;
    std::vector<std::string> lines;
    if (teacher) {
        for (auto &p : teacher->parameters())
            p.requires_grad_(false);
        addParameters(lines, "teacher_init", "", *teacher);
    }
    // Every unit is offered before any model is prepared: each model takes its own.
    student->wrapUnits(accelerator, student);
    if (teacher)
        teacher->wrapUnits(accelerator, teacher);
    if (second)
        second->wrapUnits(accelerator, second);
    accelerator.prepareModel(student);
    if (teacher)
        accelerator.prepareModel(teacher);
    if (second)
        accelerator.prepareModel(second);

    std::vector<torch::Tensor> studentParameters = student->parameters();
    if (second && arg("shared_optimizer") == "1") {
        for (const auto &p : second->parameters())
            studentParameters.push_back(p);
    }
    torch::optim::AdamW studentOptimizer(studentParameters, torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
    std::unique_ptr<torch::optim::SGD> secondOptimizer;
    auto first = accelerator.prepareOptimizer(studentOptimizer);
    std::shared_ptr<AcceleratedOptimizer> other;
    if (second && arg("shared_optimizer") != "1") {
        secondOptimizer =
            std::make_unique<torch::optim::SGD>(second->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
        other = accelerator.prepareOptimizer(*secondOptimizer);
    }

    auto generator = at::detail::createCPUGenerator(1234);
    const int64_t size = 256;
    auto x = torch::randn({size, 8}, generator);
    auto y = torch::argmax(torch::matmul(x, torch::randn({8, 4}, generator)), 1);

    int64_t completed = 0;
    if (!arg("resume").empty()) {
        if (auto loaded = accelerator.loadState(arg("resume")); !loaded) {
            std::cerr << "accel-runtime-probe multimodel: " << loaded.error().toString() << std::endl;
            return 1;
        }
        completed = intArg("resume_step", 0);
    }
    const int64_t steps = intArg("steps", 8), batch = intArg("batch", 8), saveAt = intArg("save_at", -1);
    const int64_t global = batch * accelerator.numProcesses();
    const double temperature = 2.0;
    for (; completed < steps;) {
        std::vector<int64_t> indices;
        for (int64_t j = 0; j < batch; ++j)
            indices.push_back((completed * global + accelerator.processIndex() * batch + j) % size);
        auto index = torch::tensor(indices, torch::kInt64);
        auto inputs = x.index_select(0, index), targets = y.index_select(0, index);
        accelerator.accumulate();
        auto logits = student->forward(inputs);
        auto loss = F::cross_entropy(logits, targets);
        if (teacher) {
            torch::Tensor reference;
            {
                torch::NoGradGuard noGrad;
                reference = teacher->forward(inputs);
            }
            // Distillation: KL(teacher || student) on softened distributions, scaled by T^2.
            loss = loss + F::kl_div(F::log_softmax(logits / temperature, 1), F::softmax(reference / temperature, 1),
                                    F::KLDivFuncOptions().reduction(torch::kBatchMean)) *
                              (temperature * temperature);
        }
        if (second)
            loss = loss + F::mse_loss(second->forward(inputs), F::one_hot(targets, 4).to(torch::kFloat));
        accelerator.backward(loss);
        if (arg("clip") == "1")
            accelerator.clipGradNorm(std::stod(arg("max_norm", "0.5")));
        if (completed + 1 == steps) {
            const TrainingMemory memory = accelerator.trainingMemory();
            lines.push_back("memory " + std::to_string(memory.parameters) + " " + std::to_string(memory.gradients) +
                            " " + std::to_string(memory.optimizerState));
        }
        first->step();
        first->zeroGrad();
        if (other) {
            other->step();
            other->zeroGrad();
        }
        ++completed;
        lines.push_back("loss " + std::to_string(completed) + " " +
                        hex(accelerator.reduce(loss.detach(), ReduceOp::Mean).item<double>()));
        if (completed == saveAt) {
            if (auto saved = accelerator.saveState(arg("checkpoint")); !saved) {
                std::cerr << "accel-runtime-probe multimodel: " << saved.error().toString() << std::endl;
                return 1;
            }
        }
    }
    for (size_t i = 0; i < accelerator.modelCount(); ++i)
        lines.push_back("strategy " + std::to_string(i) + " " + accelerator.strategyName(i));
    accelerator.unshardModel();
    addParameters(lines, "param", "student.", *student);
    if (second)
        addParameters(lines, "param", "second.", *second);
    if (teacher)
        addParameters(lines, "teacher", "", *teacher);
    if (accelerator.isMainProcess() && !arg("out").empty()) {
        std::ofstream out(arg("out"));
        for (const auto &line : lines)
            out << line << "\n";
    }
    return 0;
}

} // namespace

// `accel-runtime-probe multimodel ...` (runtimeprobe.cpp): argv[0] is the mode word.
int multiModelProbe(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const std::string text = argv[i];
        const auto eq = text.find('=');
        g_args[text.substr(0, eq)] = eq == std::string::npos ? "1" : text.substr(eq + 1);
    }
    try {
        return run();
    } catch (const std::exception &e) {
        std::cerr << "accel-runtime-probe multimodel: " << e.what() << std::endl;
        return 1;
    }
}
