// The job runner and the smaller recipes: mlp, torchscript, plugin, selftest; the capability
// report. The gpt recipe is in gptrecipe.cpp, the shared loop in trainingloop.cpp.
#include "core/worker/cpuaffinity.h"
#include "core/worker/jobrunner.h"
#include "core/worker/nativesettings.h"
#include "core/worker/trainingloop.h"

#include "core/common/checkpointnames.h"
#include "core/hardware/nvmlprobe.h"
#include "core/plan/tensorparallelsplit.h"
#include "core/runtime/fusedadamw.h"
#include "core/runtime/plugin.h"
#include "core/runtime/tensorio.h"
#include "core/runtime/training.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <iostream>
#include <optional>
#include <regex>

namespace accel::worker {

namespace fs = std::filesystem;
namespace F = torch::nn::functional;
using runtime::Accelerator;

namespace {

Result<std::map<std::string, torch::Tensor>> loadData(const JobSpec &job, const std::string &key)
{
    const std::string path = job.pathValue(key);
    if (path.empty())
        return makeError(ErrorCode::InvalidInput, key + ": missing (a safetensors file)", job.path);
    return runtime::loadTensors(path);
}

void finalMessage(Accelerator &accelerator, const TrainingSummary &summary, const std::string &model)
{
    if (accelerator.isMainProcess())
        std::cout << "done: " << summary.steps << " steps, final loss " << summary.finalLoss << ", "
                  << summary.samplesPerSecond << " samples/s, " << summary.seconds << " s"
                  << (model.empty() ? "" : "; model: " + model) << std::endl;
}

// Holds a TorchScript module's parameters so the Accelerator can prepare and checkpoint them
// ("." in names becomes "__", which register_parameter requires).
struct ParameterHolder : torch::nn::Module {
    explicit ParameterHolder(torch::jit::Module &module)
    {
        for (const auto &item : module.named_parameters(true)) {
            std::string name = item.name;
            name = std::regex_replace(name, std::regex("\\."), "__");
            // Every floating parameter trains (a module built in C++ may not have asked for it).
            torch::Tensor value = item.value;
            if (value.is_floating_point())
                value.requires_grad_(true);
            register_parameter(name, value, value.requires_grad());
        }
    }
};

// The NUMA node of local rank `localRank`'s GPU (NVML's PCI bus id, sysfs), as Accelerate pins GPU ranks.
std::optional<int> gpuNumaNode(int localRank)
{
    const hardware::GpuSection gpus = hardware::probeNvml();
    if (localRank < 0 || size_t(localRank) >= gpus.gpus.size())
        return std::nullopt;
    return numaNodeOfPciDevice(gpus.gpus[size_t(localRank)].pciBusId);
}

} // namespace

runtime::AcceleratorOptions acceleratorOptions(const JobSpec &job)
{
    runtime::AcceleratorOptions options;
    const TrainingSettings &t = job.training;
    options.gradientAccumulationSteps = t.gradientAccumulationSteps;
    options.mixedPrecision = t.mixedPrecision;
    options.rendezvousTimeoutS = t.timeoutS;
    options.collectiveTimeoutS = t.timeoutS;
    options.bucketCapMb = t.bucketCapMb;
    options.data.dataSeed = job.seed;
    options.project.projectDir = job.outputDir;
    options.project.automaticCheckpointNaming = true;
    options.project.totalLimit = t.checkpointTotalLimit;
    // runJob refuses an out-of-range checkpoint_<n> before this is reached.
    options.project.iteration =
        checkpointnames::latestCheckpointNumber((fs::path(job.outputDir) / "checkpoints").string()).value_or(-1) + 1;
    return options;
}

Result<void> runJob(const JobSpec &job)
{
    if (auto latest = checkpointnames::latestCheckpointNumber((fs::path(job.outputDir) / "checkpoints").string());
        !latest)
        return tl::unexpected(latest.error());
    auto env = runtime::DistributedEnv::fromEnvironment();
    if (!env)
        return tl::unexpected(env.error());
    // Every exported setting acted on, refused or noted (docs/native-keys.md), before anything starts.
    auto settings =
        checkNativeSettings([](const char *name) { return std::getenv(name); },
                            {env->worldSize, env->localRank, env->localWorldSize}, job.training.mixedPrecision);
    if (!settings)
        return tl::unexpected(settings.error());
    if (settings->cpuAffinity) {
        // Before libtorch starts a thread: its threads inherit the mask.
        std::optional<int> node;
        if (!env->useCpu && torch::cuda::is_available())
            node = gpuNumaNode(env->localRank);
        auto pinned = pinToNumaNode(env->localRank, env->localWorldSize, node);
        if (!pinned)
            return tl::unexpected(pinned.error());
        std::cerr << "note: enable_cpu_affinity: rank " << env->rank << " (local rank " << env->localRank
                  << ") pinned to NUMA node " << pinned->node << " (CPUs " << pinned->nodeCpus
                  << "); Cpus_allowed_list " << pinned->allowedCpus << std::endl;
    }
    if (env->rank == 0) {
        for (const std::string &note : settings->notes)
            std::cerr << "note: " << note << std::endl;
    }
    runtime::AcceleratorOptions options = acceleratorOptions(job);
    if (!settings->mixedPrecision.empty())
        options.mixedPrecision = settings->mixedPrecision;
    auto created = Accelerator::create(options, *env);
    if (!created)
        return tl::unexpected(created.error());
    Accelerator &accelerator = **created;
    // tp / cp outside the causal_lm recipe: refused as accel estimate-memory refuses them (one check).
    runtime::MeshJob meshJob;
    meshJob.recipe = job.recipe;
    meshJob.tensorParallel = accelerator.mesh().size(runtime::MeshDim::Tp);
    meshJob.contextParallel = accelerator.mesh().size(runtime::MeshDim::Cp);
    if (auto ok = runtime::checkMeshJob(meshJob); !ok)
        return makeError(ok.error().code, ok.error().message, job.path);
    accelerator.setSeed(job.seed);
    // Without a run directory from the launcher, the job's output folder is the run directory
    // (metrics/rank<N>.jsonl goes there).
    const char *runDir = std::getenv("ACCEL_RUN_DIR");
    const char *metricsFile = std::getenv("ACCEL_METRICS_FILE");
    if ((!runDir || !*runDir) && (!metricsFile || !*metricsFile))
        ::setenv("ACCEL_RUN_DIR", job.outputDir.c_str(), 1);
    std::error_code ec;
    fs::create_directories(job.outputDir, ec);
    try {
        if (job.recipe == "gpt")
            return runGptRecipe(accelerator, job);
        if (job.recipe == "distill")
            return runDistillRecipe(accelerator, job);
        if (job.recipe == "causal_lm")
            return runCausalLmRecipe(accelerator, job);
        if (job.recipe == "mlp")
            return runMlpRecipe(accelerator, job);
        if (job.recipe == "torchscript")
            return runTorchScriptRecipe(accelerator, job);
        if (job.recipe == "plugin")
            return runPluginRecipe(accelerator, job);
        if (job.recipe == "selftest")
            return runSelfTestRecipe(accelerator, job);
    } catch (const std::exception &e) {
        std::string what = e.what();
        return makeError(ErrorCode::Failed,
                         "rank " + std::to_string(accelerator.processIndex()) + ": " +
                             what.substr(0, what.find("\nException raised from")),
                         job.path);
    }
    return makeError(ErrorCode::InvalidInput, "recipe: unknown recipe " + job.recipe, job.path);
}

Result<void> runMlpRecipe(Accelerator &accelerator, const JobSpec &job)
{
    auto data = loadData(job, "mlp.data");
    if (!data)
        return tl::unexpected(data.error());
    if (!data->count("inputs") || !data->count("targets"))
        return makeError(ErrorCode::InvalidInput,
                         "mlp.data: the file needs tensors `inputs` [N, features] and `targets` [N] (class ids)",
                         job.path);
    torch::Tensor inputs = data->at("inputs").to(torch::kFloat), targets = data->at("targets").to(torch::kInt64);
    if (inputs.dim() != 2 || targets.dim() != 1 || inputs.size(0) != targets.size(0))
        return makeError(ErrorCode::InvalidInput,
                         "mlp.data: `inputs` must be [N, features] and `targets` [N] with the same N", job.path);
    const int64_t classes = job.has("mlp.classes") ? job.integer("mlp.classes") : targets.max().item<int64_t>() + 1;
    if (targets.min().item<int64_t>() < 0 || targets.max().item<int64_t>() >= classes)
        return makeError(ErrorCode::InvalidInput,
                         "mlp.data: `targets` must be class ids from 0 to " + std::to_string(classes - 1) +
                             " (mlp.classes " + std::to_string(classes) + ")",
                         job.path);
    auto model = std::make_shared<torch::nn::SequentialImpl>();
    int64_t width = inputs.size(1);
    for (const int64_t hidden : job.integers("mlp.hidden")) {
        model->push_back(torch::nn::Linear(width, hidden));
        model->push_back(torch::nn::ReLU());
        width = hidden;
    }
    model->push_back(torch::nn::Linear(width, classes));
    if (const std::string init = job.pathValue("mlp.init"); !init.empty()) {
        if (auto loaded = runtime::loadModelSafetensors(*model, init, true); !loaded)
            return loaded;
    }
    const TrainingSettings &t = job.training;
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    const std::string kind = job.text("mlp.optimizer");
    if (kind == "adamw")
        optimizer = std::make_unique<runtime::FusedAdamW>(
            model->parameters(), torch::optim::AdamWOptions(t.learningRate).weight_decay(t.weightDecay));
    else if (kind == "sgd")
        optimizer = std::make_unique<torch::optim::SGD>(
            model->parameters(),
            torch::optim::SGDOptions(t.learningRate).momentum(job.number("mlp.momentum")).weight_decay(t.weightDecay));
    else
        return makeError(ErrorCode::InvalidInput, "mlp.optimizer: expected sgd or adamw; got " + kind, job.path);

    TrainingTask task;
    task.datasetSize = inputs.size(0);
    task.model = model;
    task.optimizer = optimizer.get();
    task.loss = [&](const std::vector<int64_t> &indices) {
        auto index = torch::tensor(indices, torch::kInt64);
        return F::cross_entropy(model->forward(accelerator.toDevice(inputs.index_select(0, index))).to(torch::kFloat),
                                accelerator.toDevice(targets.index_select(0, index)));
    };
    auto summary = runTraining(accelerator, job, task);
    if (!summary)
        return tl::unexpected(summary.error());
    const std::string out = (fs::path(job.outputDir) / "model.safetensors").string();
    if (accelerator.isMainProcess()) {
        if (auto saved = runtime::saveModelSafetensors(*model, out); !saved)
            return saved;
    }
    finalMessage(accelerator, *summary, out);
    return {};
}

Result<void> runTorchScriptRecipe(Accelerator &accelerator, const JobSpec &job)
{
    const std::string modulePath = job.pathValue("torchscript.module");
    if (modulePath.empty())
        return makeError(ErrorCode::InvalidInput, "torchscript.module: missing (a module saved with torch.jit.save)",
                         job.path);
    torch::jit::Module module;
    try {
        module = torch::jit::load(modulePath);
    } catch (const c10::Error &e) {
        return makeError(ErrorCode::InvalidInput,
                         std::string("cannot load the TorchScript module: ") + e.what_without_backtrace(), modulePath);
    }
    module.train();
    auto data = loadData(job, "torchscript.data");
    if (!data)
        return tl::unexpected(data.error());
    if (data->empty())
        return makeError(ErrorCode::InvalidInput, "torchscript.data: the file holds no tensors", job.path);
    // forward() takes the data tensors in the order of torchscript.inputs (default: by name).
    std::vector<torch::Tensor> columns;
    for (int i = 0;; ++i) {
        const std::string key = "torchscript.inputs." + std::to_string(i);
        if (!job.has(key))
            break;
        auto it = data->find(job.raw(key));
        if (it == data->end())
            return makeError(ErrorCode::InvalidInput, key + ": no tensor named " + job.raw(key) + " in the data file",
                             job.path);
        columns.push_back(it->second);
    }
    if (columns.empty()) {
        for (auto &[name, tensor] : *data)
            columns.push_back(tensor);
    }
    auto holder = std::make_shared<ParameterHolder>(module);
    const TrainingSettings &t = job.training;
    runtime::FusedAdamW optimizer(holder->parameters(),
                                  torch::optim::AdamWOptions(t.learningRate).weight_decay(t.weightDecay));
    TrainingTask task;
    task.datasetSize = columns.front().size(0);
    task.model = holder;
    task.optimizer = &optimizer;
    task.loss = [&](const std::vector<int64_t> &indices) {
        auto index = torch::tensor(indices, torch::kInt64);
        std::vector<torch::jit::IValue> arguments;
        for (auto &column : columns)
            arguments.emplace_back(accelerator.toDevice(column.index_select(0, index)));
        return module.forward(arguments).toTensor().to(torch::kFloat);
    };
    auto summary = runTraining(accelerator, job, task);
    if (!summary)
        return tl::unexpected(summary.error());
    const std::string out = (fs::path(job.outputDir) / "model.pt").string();
    if (accelerator.isMainProcess())
        module.save(out);
    finalMessage(accelerator, *summary, out);
    return {};
}

Result<void> runPluginRecipe(Accelerator &accelerator, const JobSpec &job)
{
    const std::string library = job.pathValue("plugin.library");
    if (library.empty())
        return makeError(ErrorCode::InvalidInput,
                         "plugin.library: missing (a shared library exporting accel_plugin_run)", job.path);
    void *handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        return makeError(ErrorCode::InvalidInput, std::string("cannot load the plugin: ") + ::dlerror(), library);
    using VersionFunction = int (*)();
    using RunFunction = int (*)(Accelerator *, runtime::PluginContext *);
    auto version = reinterpret_cast<VersionFunction>(::dlsym(handle, "accel_plugin_api_version"));
    auto run = reinterpret_cast<RunFunction>(::dlsym(handle, "accel_plugin_run"));
    if (!version || !run)
        return makeError(
            ErrorCode::InvalidInput,
            "the plugin does not export accel_plugin_api_version and accel_plugin_run (see core/runtime/plugin.h)",
            library);
    if (version() != ACCEL_PLUGIN_API_VERSION)
        return makeError(ErrorCode::Unsupported,
                         "the plugin was built for plugin API " + std::to_string(version()) + "; this worker speaks " +
                             std::to_string(ACCEL_PLUGIN_API_VERSION),
                         library);
    std::string settings;
    for (const auto &[key, value] : job.section("plugin.settings"))
        settings += key + "=" + value + "\n";
    std::vector<char> error(4096, '\0');
    runtime::PluginContext context;
    context.jobPath = job.path.c_str();
    context.outputDir = job.outputDir.c_str();
    context.settings = settings.c_str();
    context.seed = job.seed;
    context.error = error.data();
    context.errorSize = error.size();
    const int status = run(&accelerator, &context);
    if (status != 0)
        return makeError(ErrorCode::Failed,
                         "the plugin failed (" + std::to_string(status) + "): " + std::string(error.data()), library);
    return {};
}

Result<void> runSelfTestRecipe(Accelerator &accelerator, const JobSpec &job)
{
    const int rank = accelerator.processIndex(), world = accelerator.numProcesses();
    std::vector<std::string> failures;
    auto check = [&](const std::string &name, bool ok, const std::string &detail) {
        if (!ok)
            failures.push_back(name + ": " + detail);
        accelerator.print(std::string(ok ? "  ok    " : "  FAIL  ") + name + (ok ? "" : " (" + detail + ")"));
    };
    accelerator.print("accel selftest: " + std::to_string(world) + " process(es), rendezvous ok");
    const double sum = accelerator.reduce(torch::tensor({double(rank + 1)}, torch::kDouble)).item<double>();
    check("all-reduce", sum == world * (world + 1) / 2.0, "sum " + std::to_string(sum));
    auto value = torch::tensor({rank == 0 ? 42.0 : -1.0}, torch::kDouble);
    accelerator.broadcast(value, 0);
    check("broadcast", value.item<double>() == 42.0, "got " + std::to_string(value.item<double>()));
    auto gathered = accelerator.gather(torch::tensor({int64_t(rank)}, torch::kInt64));
    check("gather", gathered.equal(torch::arange(world, torch::kInt64)), "got " + c10::str(gathered));

    // One DDP step against the same step on the whole global batch in one process.
    torch::manual_seed(job.seed);
    auto makeModel = [] {
        return torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::Tanh(), torch::nn::Linear(16, 3));
    };
    auto ddp = makeModel();
    torch::manual_seed(job.seed);
    auto reference = makeModel();
    auto generator = at::detail::createCPUGenerator(job.seed + 1);
    const int64_t perRank = 4;
    auto x = torch::randn({perRank * world, 6}, generator);
    auto y = torch::randint(0, 3, {perRank * world}, generator);
    accelerator.prepareModel(ddp.ptr());
    torch::optim::SGD ddpOptimizer(ddp->parameters(), torch::optim::SGDOptions(0.1));
    auto prepared = accelerator.prepareOptimizer(ddpOptimizer);
    accelerator.backward(F::cross_entropy(ddp->forward(x.slice(0, rank * perRank, (rank + 1) * perRank)),
                                          y.slice(0, rank * perRank, (rank + 1) * perRank)));
    prepared->step();
    torch::optim::SGD referenceOptimizer(reference->parameters(), torch::optim::SGDOptions(0.1));
    F::cross_entropy(reference->forward(x), y).backward();
    referenceOptimizer.step();
    double worst = 0;
    auto a = ddp->parameters(), b = reference->parameters();
    for (size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
    check("DDP step == single-process step on the global batch", worst < 1e-5,
          "max difference " + std::to_string(worst));
    const double failed = accelerator.reduce(torch::tensor({double(failures.size())}, torch::kDouble)).item<double>();
    accelerator.waitForEveryone();
    if (failed > 0)
        return makeError(ErrorCode::Failed, "selftest: " + std::to_string(int(failed)) + " check(s) failed" +
                                                (failures.empty() ? std::string() : ": " + failures.front()));
    accelerator.print("Test is a success! You are ready for your distributed training!");
    return {};
}

} // namespace accel::worker
