// accel-runtime-probe: a small program the runtime tests start as one or more ranks (with
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set) to exercise the Accelerator for real. One program
// with modes, so that libtorch is linked once for all of them:
//   gloo RANK WORLD PORT                 c10d's gloo collectives (glooprobe.cpp, tst_gloo)
//   collectives check|stall|bench ...    the sharding collectives (collectivesprobe.cpp)
//   fp8allreduce key=value ...           MS-AMP's FP8 all-reduce (fp8allreduceprobe.cpp)
//   multimodel key=value ...             several prepared models (multimodelprobe.cpp)
// and the Accelerator scenarios here:
// Usage: accel-runtime-probe <scenario> [key=value ...]
//   train     steps= batch= accum= seed= out= save_at= checkpoint= resume= kill_after_save= shuffle= log=1
//             dropout= bucket_mb= optimizer=sgd|adamw
//             model=stack: blocks wrapped as sharding units (wrap_root=1 wraps the model too);
//             init= / data= write the prepared initial weights / the data set (safetensors); prints the
//             strategy and the training memory measured after the last backward
//   gather    size= batch= out=
//   bf16      steps= out=
//   join      timeout=         (just rendezvous and all-reduce once)
//   allreduce-bandwidth size_mb= iters=   (tests/gpu: bus bandwidth of the all-reduce on this device)
//   make-torchscript module= data=   (fixtures for the worker's torchscript recipe)
// Results go to `out` (rank 0 only) as text: one value per line in hex float so the tests can
// compare bit for bit.
#include "core/common/log.h"
#include "core/runtime/accelerator.h"
#include "core/runtime/strategy/shardedmodule.h"
#include "core/runtime/training.h"

#include "core/runtime/tensorio.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

using namespace accel::runtime;

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
double doubleArg(const std::string &key, double fallback)
{
    return std::stod(arg(key, std::to_string(fallback)));
}

std::string hex(double value)
{
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%a", value);
    return buffer;
}

struct Net : torch::nn::Module {
    explicit Net(double dropout)
    {
        fc1 = register_module("fc1", torch::nn::Linear(8, 32));
        fc2 = register_module("fc2", torch::nn::Linear(32, 32));
        fc3 = register_module("fc3", torch::nn::Linear(32, 4));
        drop = register_module("drop", torch::nn::Dropout(dropout));
    }
    torch::Tensor forward(torch::Tensor x)
    {
        x = drop(torch::tanh(fc1(x)));
        x = torch::tanh(fc2(x));
        return fc3(x);
    }
    torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
    torch::nn::Dropout drop{nullptr};
};

// An input layer, `blocks` residual tanh blocks and an output layer; each block (and, with
// wrap_root=1, the whole model) runs through the holder Accelerator::wrap returned.
struct StackBlockImpl : torch::nn::Module {
    StackBlockImpl() { fc = register_module("fc", torch::nn::Linear(32, 32)); }
    torch::Tensor forward(const torch::Tensor &x) { return x + torch::tanh(fc(x)); }
    torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(StackBlock);

struct Stack : torch::nn::Module {
    explicit Stack(int64_t count)
    {
        in = register_module("in", torch::nn::Linear(8, 32));
        blocks = register_module("blocks", torch::nn::ModuleList());
        for (int64_t i = 0; i < count; ++i)
            blocks->push_back(StackBlock());
        out = register_module("out", torch::nn::Linear(32, 4));
    }
    void wrapUnits(Accelerator &accelerator, bool wrapRoot, const std::shared_ptr<Stack> &self)
    {
        for (const auto &block : *blocks)
            units.push_back(accelerator.wrap(block));
        if (wrapRoot)
            root = accelerator.wrap(self);
    }
    torch::Tensor forward(const torch::Tensor &input)
    {
        const auto body = [&] {
            auto x = torch::tanh(in(input));
            for (size_t i = 0; i < blocks->size(); ++i)
                x = units.empty() ? blocks[i]->as<StackBlock>()->forward(x)
                                  : (*units[i])([&] { return blocks[i]->as<StackBlock>()->forward(x); });
            return out(x);
        };
        return root ? (*root)(body) : body();
    }
    torch::nn::Linear in{nullptr}, out{nullptr};
    torch::nn::ModuleList blocks{nullptr};
    std::vector<std::shared_ptr<ShardedModule>> units;
    std::shared_ptr<ShardedModule> root;
};

// A fixed synthetic classification set: same on every rank and run.
std::pair<torch::Tensor, torch::Tensor> dataset(int64_t size)
{
    auto generator = at::detail::createCPUGenerator(1234);
    auto x = torch::randn({size, 8}, generator);
    auto w = torch::randn({8, 4}, generator);
    auto y = torch::argmax(torch::matmul(x, w), 1);
    return {x, y};
}

std::unique_ptr<Accelerator> makeAccelerator(AcceleratorOptions options)
{
    options.rendezvousTimeoutS = doubleArg("timeout", 30);
    options.collectiveTimeoutS = doubleArg("timeout", 30);
    options.bucketCapMb = doubleArg("bucket_mb", 25);
    auto accelerator = Accelerator::create(options);
    if (!accelerator) {
        std::cerr << "accel-runtime-probe: " << accelerator.error().toString() << std::endl;
        std::exit(3);
    }
    return std::move(*accelerator);
}

void writeLines(Accelerator &accelerator, const std::vector<std::string> &lines)
{
    if (!accelerator.isMainProcess() || arg("out").empty())
        return;
    std::ofstream out(arg("out"), std::ios::app);
    for (const auto &line : lines)
        out << line << "\n";
}

int train()
{
    AcceleratorOptions options;
    options.gradientAccumulationSteps = int(intArg("accum", 1));
    options.mixedPrecision = arg("precision", "no");
    options.project.projectDir = arg("project");
    options.project.automaticCheckpointNaming = !options.project.projectDir.empty();
    options.project.totalLimit = int(intArg("total_limit", 0));
    options.project.iteration = int(intArg("iteration", 0));
    auto accelerator = makeAccelerator(options);
    accelerator->setSeed(uint64_t(intArg("seed", 7)));

    std::shared_ptr<torch::nn::Module> model;
    std::function<torch::Tensor(const torch::Tensor &)> forward;
    if (arg("model") == "stack") {
        auto stack = std::make_shared<Stack>(intArg("blocks", 4));
        stack->wrapUnits(*accelerator, arg("wrap_root") == "1", stack);
        forward = [stack](const torch::Tensor &x) { return stack->forward(x); };
        model = stack;
    } else {
        auto net = std::make_shared<Net>(doubleArg("dropout", 0.0));
        forward = [net](const torch::Tensor &x) { return net->forward(x); };
        model = net;
    }
    // prepareModel() broadcasts rank 0's weights: rank 0's are everyone's initial weights.
    if (!arg("init").empty() && accelerator->isMainProcess()) {
        if (auto saved = saveModelSafetensors(*model, arg("init")); !saved) {
            std::cerr << saved.error().toString() << std::endl;
            return 1;
        }
    }
    accelerator->prepareModel(model);
    std::unique_ptr<torch::optim::Optimizer> inner;
    if (arg("optimizer", "sgd") == "adamw")
        inner = std::make_unique<torch::optim::AdamW>(model->parameters(),
                                                      torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
    else
        inner = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    auto optimizer = accelerator->prepareOptimizer(*inner);
    // Decaying by default; `constant=1` for comparisons across world sizes (the scheduler steps
    // numProcesses() times per optimizer step, like Accelerate's).
    const bool constant = arg("constant") == "1";
    auto scheduler = accelerator->prepareScheduler(
        [constant](int64_t step) { return constant ? 1.0 : 1.0 / (1.0 + 0.01 * double(step)); });
    auto [x, y] = dataset(intArg("size", 256));
    if (!arg("data").empty() && accelerator->isMainProcess()) {
        if (auto saved = saveTensors(arg("data"), {{"x", x}, {"y", y}}); !saved) {
            std::cerr << saved.error().toString() << std::endl;
            return 1;
        }
    }
    auto loader = accelerator->prepareDataLoader(x.size(0), intArg("batch", 8), arg("shuffle", "0") == "1", true);
    if (!loader) {
        std::cerr << loader.error().toString() << std::endl;
        return 2;
    }
    int64_t completed = 0;
    int64_t epoch = 0, skip = 0;
    if (!arg("resume").empty() || arg("resume_auto") == "1") {
        if (auto loaded = accelerator->loadState(arg("resume")); !loaded) {
            std::cerr << "accel-runtime-probe: " << loaded.error().toString() << std::endl;
            return 1;
        }
        epoch = (*loader)->resumeEpoch();
        skip = (*loader)->resumeSkip();
        completed = intArg("resume_step", 0);
    }
    const int64_t steps = intArg("steps", 20);
    const int64_t saveAt = intArg("save_at", -1);
    std::vector<std::string> lines;
    for (; completed < steps; ++epoch, skip = 0) {
        (*loader)->beginEpoch(epoch, skip);
        while (completed < steps) {
            auto batch = (*loader)->next();
            if (!batch)
                break;
            auto index = torch::tensor(*batch, torch::kInt64);
            accelerator->accumulate();
            torch::Tensor loss;
            {
                auto guard = accelerator->autocast();
                loss =
                    torch::nn::functional::cross_entropy(forward(x.index_select(0, index)), y.index_select(0, index));
            }
            accelerator->backward(loss.to(torch::kFloat));
            if (accelerator->syncGradients() && arg("clip") == "1")
                accelerator->clipGradNorm(doubleArg("max_norm", 1.0));
            if (accelerator->syncGradients() && completed + 1 == steps) {
                const TrainingMemory memory = accelerator->trainingMemory();
                lines.push_back("memory " + std::to_string(memory.parameters) + " " + std::to_string(memory.gradients) +
                                " " + std::to_string(memory.optimizerState));
            }
            optimizer->step();
            scheduler->step();
            optimizer->zeroGrad();
            if (!accelerator->syncGradients())
                continue;
            ++completed;
            const double mean = accelerator->reduce(loss.detach().to(torch::kFloat), ReduceOp::Mean).item<double>();
            lines.push_back("loss " + std::to_string(completed) + " " + hex(mean));
            accelerator->metrics().log(completed, {{"loss", mean}, {"lr", scheduler->lr()}});
            if (completed == saveAt) {
                auto saved = accelerator->saveState(arg("checkpoint"));
                if (!saved) {
                    std::cerr << "accel-runtime-probe: " << saved.error().toString() << std::endl;
                    return 1;
                }
                writeLines(*accelerator, lines);
                lines.clear();
                if (arg("kill_after_save") == "1") {
                    std::cout.flush();
                    std::raise(SIGKILL);
                }
            }
        }
    }
    lines.push_back("transport " + accelerator->gradientTransport());
    lines.push_back("strategy " + accelerator->strategyName());
    accelerator->unshardModel();
    for (const auto &parameter : model->named_parameters()) {
        auto flat = parameter.value().detach().reshape({-1});
        for (int64_t i = 0; i < flat.numel(); ++i)
            lines.push_back("param " + parameter.key() + " " + hex(flat[i].item<double>()));
    }
    writeLines(*accelerator, lines);
    return 0;
}

int gather()
{
    AcceleratorOptions options;
    options.data.evenBatches = arg("even", "1") == "1";
    auto accelerator = makeAccelerator(options);
    auto loader = accelerator->prepareDataLoader(intArg("size", 10), intArg("batch", 3), false, false);
    if (!loader)
        return 2;
    std::vector<std::string> lines;
    (*loader)->beginEpoch(0);
    while (auto batch = (*loader)->next()) {
        auto gathered = accelerator->gatherForMetrics(torch::tensor(*batch, torch::kInt64));
        for (int64_t i = 0; i < gathered.numel(); ++i)
            lines.push_back(std::to_string(gathered[i].item<int64_t>()));
    }
    auto padded = accelerator->padAcrossProcesses(torch::ones({accelerator->processIndex() + 1}), 0, -1.0);
    auto all = accelerator->gather(padded);
    lines.push_back("padded " + std::to_string(all.numel()) + " " + std::to_string(all.sum().item<double>()));
    auto value = torch::tensor({double(accelerator->processIndex() + 1)});
    accelerator->broadcast(value, accelerator->numProcesses() - 1);
    lines.push_back("broadcast " + std::to_string(value.item<double>()));
    lines.push_back(
        "max " +
        std::to_string(
            accelerator->reduce(torch::tensor({double(accelerator->processIndex())}), ReduceOp::Max).item<double>()));
    accelerator->waitForEveryone();
    writeLines(*accelerator, lines);
    return 0;
}

// Writes a TorchScript module whose forward(x, y) returns a regression loss, and its data, for
// the worker's torchscript recipe test (no Python needed).
int makeTorchScript()
{
    torch::jit::Module module("LinearLoss");
    module.register_parameter("weight", torch::zeros({4, 1}), false);
    module.register_parameter("bias", torch::zeros({1}), false);
    module.define(R"JIT(
def forward(self, x, y):
    prediction = torch.matmul(x, self.weight) + self.bias
    return torch.mean((prediction - y) ** 2)
)JIT");
    module.save(arg("module"));
    auto generator = at::detail::createCPUGenerator(5);
    auto x = torch::randn({128, 4}, generator);
    auto y = torch::matmul(x, torch::tensor({{1.0f}, {-2.0f}, {0.5f}, {3.0f}})) + 0.3;
    auto saved = saveTensors(arg("data"), {{"x", x}, {"y", y}});
    if (!saved) {
        std::cerr << saved.error().toString() << std::endl;
        return 1;
    }
    return 0;
}

} // namespace

int glooProbe(int argc, char **argv);
int collectivesProbe(int argc, char **argv);
int fp8AllReduceProbe(int argc, char **argv);
int multiModelProbe(int argc, char **argv);

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::cerr << "usage: accel-runtime-probe train|gather|join|gloo|collectives|fp8allreduce|multimodel ...\n";
        return 2;
    }
    const std::map<std::string, int (*)(int, char **)> modes{{"gloo", glooProbe},
                                                             {"collectives", collectivesProbe},
                                                             {"fp8allreduce", fp8AllReduceProbe},
                                                             {"multimodel", multiModelProbe}};
    if (const auto mode = modes.find(argv[1]); mode != modes.end())
        return mode->second(argc - 1, argv + 1);
    for (int i = 2; i < argc; ++i) {
        const std::string text = argv[i];
        const auto eq = text.find('=');
        g_args[text.substr(0, eq)] = eq == std::string::npos ? "1" : text.substr(eq + 1);
    }
    const std::string scenario = argv[1];
    if (arg("log") == "1" && !arg("out").empty() && std::getenv("RANK") && std::string(std::getenv("RANK")) == "0") {
        // The runtime's debug messages of rank 0 as "log <message>" lines of the output.
        accel::log::setMinimumLevel(accel::log::Level::Debug);
        accel::log::setSink([](accel::log::Level, const std::string &, const std::string &message) {
            std::ofstream(arg("out"), std::ios::app) << "log " << message << "\n";
        });
    }
    try {
        if (scenario == "train")
            return train();
        if (scenario == "gather")
            return gather();
        if (scenario == "make-torchscript")
            return makeTorchScript();
        if (scenario == "allreduce-bandwidth") {
            // Bus bandwidth of a float32 SUM all-reduce of size_mb on this rank's device (NCCL on GPUs):
            // 2 (n-1)/n * bytes / seconds, median-free mean over iters after 5 warm-up rounds.
            auto accelerator = makeAccelerator({});
            const int64_t bytes = intArg("size_mb", 64) * 1024 * 1024;
            const int iters = int(intArg("iters", 20));
            auto tensor = accelerator->toDevice(torch::ones({bytes / 4}));
            for (int i = 0; i < 5; ++i)
                tensor = accelerator->reduce(tensor).div_(accelerator->numProcesses());
            if (accelerator->onCuda())
                torch::cuda::synchronize();
            const auto start = std::chrono::steady_clock::now();
            for (int i = 0; i < iters; ++i)
                tensor = accelerator->reduce(tensor).div_(accelerator->numProcesses());
            if (accelerator->onCuda())
                torch::cuda::synchronize();
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
            const double n = accelerator->numProcesses();
            if (accelerator->isMainProcess())
                std::cout << "busbw_gbps " << 2 * (n - 1) / n * double(bytes) / seconds / 1e9 << " device "
                          << accelerator->deviceName() << std::endl;
            return 0;
        }
        if (scenario == "join") {
            auto accelerator = makeAccelerator({});
            auto sum = accelerator->reduce(torch::ones({1}));
            std::cout << "sum " << sum.item<double>() << std::endl;
            return 0;
        }
    } catch (const std::exception &e) {
        std::cerr << "accel-runtime-probe: " << e.what() << std::endl;
        return 1;
    }
    std::cerr << "accel-runtime-probe: unknown scenario " << scenario << "\n";
    return 2;
}
