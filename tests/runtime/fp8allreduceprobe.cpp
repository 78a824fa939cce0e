// accel-runtime-probe fp8allreduce: one rank of an MS-AMP (mixed precision fp8, ACCELERATE_FP8_BACKEND=MSAMP)
// DDP job, started by tst_fp8allreduce (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set, or none for one
// process). Usage: accel-runtime-probe fp8allreduce out=DIR steps=N batch=B (per rank) dump=K
// Step s trains on the global samples [s*G, (s+1)*G) mod 512 (G = B x world), rank r on its r-th
// slice, so one process with batch G computes the same steps. For the first K steps each rank
// writes, per converted weight i (registration order), what the FP8 all-reduce saw and produced:
//   s<s>_r<r>_w<i>_local.bin   the gradient before it (float32)
//   s<s>_r<r>_w<i>_codes.bin   this rank's E4M3 codes (uint8)
//   s<s>_r<r>_w<i>_reduced.bin the gradient after it (float32)
//   s<s>_r<r>_w<i>_scale.txt   the agreed scale and this rank's amax (hex floats)
// Every rank writes loss_r<r>.txt (its loss per step, hex) and weights_r<r>.bin (every parameter
// at the end, float32, in parameters() order).
// Checkpoints: save=K writes DIR/checkpoint (saveState) after K steps; resume=CHECKPOINT from=K
// loads it and runs steps K..N-1 (reset_scales=1 then sets the FP8 all-reduce's previous scales
// to 1, as a checkpoint without them leaves them). zero=S multiplies step S's loss by 0 (zero
// gradients); inf=S sets element [0][0] of b.weight's gradient to infinity in step S.
#include "core/runtime/accelerator.h"
#include "core/runtime/precision/fp8allreduce.h"
#include "core/runtime/precision/fp8training.h"
#include "core/runtime/precision/mixedprecisionpolicy.h"
#include "core/runtime/training.h"

#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
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

std::string hex(double value)
{
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%a", value);
    return buffer;
}

void writeBytes(const std::string &path, const torch::Tensor &tensor)
{
    const torch::Tensor t = tensor.contiguous();
    std::ofstream(path, std::ios::binary).write(static_cast<const char *>(t.data_ptr()), std::streamsize(t.nbytes()));
}

struct Net : torch::nn::Module {
    Net()
    {
        a = register_module("a", torch::nn::Linear(32, 64));
        b = register_module("b", torch::nn::Linear(64, 64));
        c = register_module("c", torch::nn::Linear(64, 16));
    }
    torch::Tensor forward(torch::Tensor x) { return c(torch::relu(b(torch::relu(a(x))))); }
    torch::nn::Linear a{nullptr}, b{nullptr}, c{nullptr};
};

int run()
{
    AcceleratorOptions options;
    options.rendezvousTimeoutS = 60;
    options.collectiveTimeoutS = 60;
    auto created = Accelerator::create(options);
    if (!created) {
        std::cerr << "accel-runtime-probe fp8allreduce: " << created.error().toString() << std::endl;
        return 3;
    }
    Accelerator &accelerator = **created;
    const std::string out = arg("out", ".");
    const int64_t steps = std::stoll(arg("steps", "10")), batch = std::stoll(arg("batch", "8")),
                  dump = std::stoll(arg("dump", "2")), from = std::stoll(arg("from", "0")),
                  save = std::stoll(arg("save", "-1")), zero = std::stoll(arg("zero", "-1")),
                  inf = std::stoll(arg("inf", "-1"));
    const int rank = accelerator.processIndex();
    torch::manual_seed(7);
    auto model = std::make_shared<Net>();
    accelerator.prepareModel(model);
    torch::optim::AdamW adamw(model->parameters(), torch::optim::AdamWOptions(3e-3));
    auto optimizer = accelerator.prepareOptimizer(adamw);
    // The FP8 all-reduce the precision policy handed to the DDP strategy.
    auto *fp8 = dynamic_cast<Fp8GradientAllReduce *>(accelerator.precision().gradientReductionInUse());
    if (accelerator.numProcesses() > 1 && !fp8) {
        std::cerr << "accel-runtime-probe fp8allreduce: no FP8 all-reduce under " << accelerator.strategyName(0)
                  << std::endl;
        return 1;
    }
    if (const std::string resume = arg("resume"); !resume.empty()) {
        if (auto loaded = accelerator.loadState(resume); !loaded) {
            std::cerr << "accel-runtime-probe fp8allreduce: " << loaded.error().toString() << std::endl;
            return 1;
        }
        if (fp8 && arg("reset_scales") == "1")
            fp8->resetScales();
    }
    int64_t current = 0;
    model->b->weight.register_hook([&current, inf](torch::Tensor gradient) {
        if (current != inf)
            return gradient;
        gradient = gradient.clone();
        gradient.index_put_({0, 0}, std::numeric_limits<float>::infinity());
        return gradient;
    });

    auto generator = at::detail::createCPUGenerator(1234);
    const int64_t size = 512;
    auto x = torch::randn({size, 32}, generator);
    auto y = torch::tanh(torch::matmul(x, torch::randn({32, 16}, generator)));
    const int64_t global = batch * accelerator.numProcesses();
    std::ofstream losses(out + "/loss_r" + std::to_string(rank) + ".txt");
    for (int64_t step = from; step < steps; ++step) {
        current = step;
        std::vector<int64_t> indices;
        for (int64_t j = 0; j < batch; ++j)
            indices.push_back((step * global + rank * batch + j) % size);
        auto index = torch::tensor(indices, torch::kInt64);
        accelerator.accumulate();
        torch::Tensor loss;
        {
            auto autocast = accelerator.autocast();
            loss =
                torch::mse_loss(model->forward(x.index_select(0, index)).to(torch::kFloat), y.index_select(0, index));
            if (step == zero)
                loss = loss * 0.0;
        }
        accelerator.backward(loss);
        losses << hex(loss.item<double>()) << "\n";
        if (fp8 && step < dump) {
            const auto &local = fp8->lastLocal();
            const auto &weights = accelerator.precision().fp8()->convertedWeights();
            for (size_t i = 0; i < weights.size(); ++i) {
                const std::string base =
                    out + "/s" + std::to_string(step) + "_r" + std::to_string(rank) + "_w" + std::to_string(i);
                writeBytes(base + "_local.bin", local.gradients[i]);
                writeBytes(base + "_codes.bin", local.codes[i]);
                writeBytes(base + "_reduced.bin", weights[i].grad().to(torch::kFloat));
                std::ofstream(base + "_scale.txt") << hex(local.scales[i]) << " " << hex(local.amax[i]) << "\n";
            }
        }
        optimizer->step();
        optimizer->zeroGrad();
        if (step + 1 == save) {
            if (auto saved = accelerator.saveState(out + "/checkpoint"); !saved) {
                std::cerr << "accel-runtime-probe fp8allreduce: " << saved.error().toString() << std::endl;
                return 1;
            }
        }
    }
    std::vector<torch::Tensor> flat;
    for (const auto &p : model->parameters())
        flat.push_back(p.detach().to(torch::kFloat).flatten());
    writeBytes(out + "/weights_r" + std::to_string(rank) + ".bin", torch::cat(flat));
    return 0;
}

} // namespace

// `accel-runtime-probe fp8allreduce ...` (runtimeprobe.cpp): argv[0] is the mode word.
int fp8AllReduceProbe(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto eq = a.find('=');
        if (eq != std::string::npos)
            g_args[a.substr(0, eq)] = a.substr(eq + 1);
    }
    try {
        return run();
    } catch (const std::exception &e) {
        std::cerr << "accel-runtime-probe fp8allreduce: " << e.what() << std::endl;
        return 1;
    }
}
