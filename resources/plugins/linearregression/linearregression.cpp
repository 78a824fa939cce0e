// Example accel-worker plugin: fits y = X w + b by distributed gradient descent with the
// runtime's Accelerator, then writes the weights as model.safetensors. Build it against the
// runtime's headers and link libaccel_runtime (see resources/CMakeLists.txt), then run a job:
//   recipe: plugin
//   plugin:
//     library: /path/to/libaccel_plugin_linearregression.so
//     settings: {steps: 200, samples: 512, features: 8, learning_rate: 0.1}
#include "core/runtime/accelerator.h"
#include "core/runtime/plugin.h"
#include "core/runtime/tensorio.h"
#include "core/runtime/training.h"

#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>

namespace {

std::map<std::string, std::string> parseSettings(const char *text)
{
    std::map<std::string, std::string> settings;
    std::istringstream in(text ? text : "");
    std::string line;
    while (std::getline(in, line)) {
        const auto eq = line.find('=');
        if (eq != std::string::npos)
            settings[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return settings;
}

double number(const std::map<std::string, std::string> &settings, const std::string &key, double fallback)
{
    auto it = settings.find(key);
    return it == settings.end() ? fallback : std::stod(it->second);
}

} // namespace

extern "C" int accel_plugin_api_version()
{
    return ACCEL_PLUGIN_API_VERSION;
}

extern "C" int accel_plugin_run(accel::runtime::Accelerator *accelerator, accel::runtime::PluginContext *context)
{
    try {
        const auto settings = parseSettings(context->settings);
        const int64_t steps = int64_t(number(settings, "steps", 200));
        const int64_t samples = int64_t(number(settings, "samples", 512));
        const int64_t features = int64_t(number(settings, "features", 8));
        const double learningRate = number(settings, "learning_rate", 0.1);

        // The same synthetic problem on every rank; each rank trains on its shard.
        auto generator = at::detail::createCPUGenerator(context->seed);
        auto trueWeight = torch::randn({features, 1}, generator);
        auto x = torch::randn({samples, features}, generator);
        auto y = torch::matmul(x, trueWeight) + 0.5;

        auto model = std::make_shared<torch::nn::LinearImpl>(features, 1);
        accelerator->prepareModel(model);
        torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(learningRate));
        auto optimizer = accelerator->prepareOptimizer(sgd);
        auto loader = accelerator->prepareDataLoader(samples, 32, true);
        if (!loader) {
            std::snprintf(context->error, context->errorSize, "%s", loader.error().toString().c_str());
            return 2;
        }
        int64_t step = 0;
        double lastLoss = 0;
        for (int64_t epoch = 0; step < steps; ++epoch) {
            (*loader)->beginEpoch(epoch);
            while (auto batch = (*loader)->next()) {
                if (step >= steps)
                    break;
                auto index = torch::tensor(*batch, torch::kInt64);
                accelerator->accumulate();
                auto loss = torch::mse_loss(model->forward(x.index_select(0, index)), y.index_select(0, index));
                accelerator->backward(loss);
                optimizer->step();
                optimizer->zeroGrad();
                ++step;
                lastLoss =
                    accelerator->reduce(loss.detach().reshape({1}), accel::runtime::ReduceOp::Mean).item<double>();
                if (step % 50 == 0)
                    accelerator->metrics().log(step, {{"loss", lastLoss}});
            }
        }
        accelerator->print("linear regression plugin: " + std::to_string(step) + " steps, final loss " +
                           std::to_string(lastLoss));
        if (accelerator->isMainProcess()) {
            auto saved =
                accel::runtime::saveModelSafetensors(*model, std::string(context->outputDir) + "/model.safetensors");
            if (!saved) {
                std::snprintf(context->error, context->errorSize, "%s", saved.error().toString().c_str());
                return 1;
            }
        }
        accelerator->waitForEveryone();
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(context->error, context->errorSize, "%s", e.what());
        return 1;
    }
}
