#include "app/cli/recipememory.h"

#include "core/bigmodel/loratargets.h"
#include "core/bigmodel/modelloader.h"
#include "core/bigmodel/safetensors.h"
#include "launcher/jobfile.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace accel::cli {

namespace {

int64_t integerValue(const launcher::JobFile &job, const std::string &key)
{
    return std::stoll(job.value(key)); // validated by JobFile before
}

// The shape problems of the job (the keys the model is built from), as JobFile reports them.
Result<void> checkShape(const launcher::JobFile &job, const std::string &jobFile)
{
    for (const launcher::FieldIssue &issue : job.validate()) {
        if (issue.key.rfind("model.", 0) == 0 || issue.key.rfind("mlp.", 0) == 0 || issue.key.rfind("lora.", 0) == 0)
            return makeError(ErrorCode::InvalidInput, issue.key + ": " + issue.message, jobFile);
    }
    return {};
}

// gpt (core/worker/gptrecipe.cpp): token and position embeddings, n_layer blocks of LayerNorm,
// qkv + projection, LayerNorm, 4x MLP (every Linear with a bias), a final LayerNorm; the output
// projection is tied to the token embedding. Trained with AdamW.
RecipeModel gptModel(const launcher::JobFile &job)
{
    const int64_t layers = integerValue(job, "model.n_layer"), heads = integerValue(job, "model.n_head"),
                  width = integerValue(job, "model.n_embd"), context = integerValue(job, "model.block_size");
    const int64_t block = 2 * width + (3 * width * width + 3 * width) + (width * width + width) + 2 * width +
                          (4 * width * width + 4 * width) + (4 * width * width + width);
    RecipeModel model;
    model.recipe = "gpt";
    model.shape = std::to_string(layers) + " layers, " + std::to_string(heads) + " heads, n_embd " +
                  std::to_string(width) + ", context " + std::to_string(context);
    model.parameters = uint64_t(256 * width + context * width + layers * block + 2 * width);
    model.optimizer = "adamw";
    model.optimizerStates = 2;
    return model;
}

// The largest value of an integer tensor in the mapped file (mlp targets are class ids).
Result<int64_t> largestTarget(const bigmodel::TensorInfo &targets, const std::string &dataFile)
{
    const uint64_t count = targets.elementCount();
    if (count == 0)
        return makeError(ErrorCode::InvalidInput, "mlp.data: `targets` is empty", dataFile);
    auto read = [&](uint64_t i) -> int64_t {
        const std::byte *at = targets.data + i * uint64_t(bigmodel::dtypeBits(targets.dtype) / 8);
        switch (targets.dtype) {
        case bigmodel::DType::U8:
            return int64_t(uint8_t(*at));
        case bigmodel::DType::I8:
            return int64_t(int8_t(*at));
        case bigmodel::DType::I16: {
            int16_t v;
            std::memcpy(&v, at, sizeof v);
            return v;
        }
        case bigmodel::DType::I32: {
            int32_t v;
            std::memcpy(&v, at, sizeof v);
            return v;
        }
        default: {
            int64_t v;
            std::memcpy(&v, at, sizeof v);
            return v;
        }
        }
    };
    const auto dtype = targets.dtype;
    if (dtype != bigmodel::DType::U8 && dtype != bigmodel::DType::I8 && dtype != bigmodel::DType::I16 &&
        dtype != bigmodel::DType::I32 && dtype != bigmodel::DType::I64)
        return makeError(ErrorCode::InvalidInput,
                         std::string("mlp.data: `targets` is ") + bigmodel::dtypeCode(dtype) +
                             "; estimate-memory reads class ids of U8, I8, I16, I32 or I64 (or set mlp.classes)",
                         dataFile);
    int64_t largest = read(0);
    for (uint64_t i = 1; i < count; ++i)
        largest = std::max(largest, read(i));
    return largest;
}

// mlp (core/worker/recipes.cpp): Linear(features, hidden[0]), ReLU, ..., Linear(last, classes),
// features from `inputs` [N, features], classes from mlp.classes or max(targets) + 1.
Result<RecipeModel> mlpModel(const launcher::JobFile &job, const std::string &jobFile)
{
    const std::string dataFile = job.value("mlp.data");
    auto data = bigmodel::SafetensorsFile::open(dataFile);
    if (!data)
        return makeError(ErrorCode::InvalidInput, "mlp.data: " + data.error().message, jobFile);
    const bigmodel::TensorInfo *inputs = (*data)->find("inputs");
    const bigmodel::TensorInfo *targets = (*data)->find("targets");
    if (!inputs || !targets || inputs->shape.size() != 2)
        return makeError(ErrorCode::InvalidInput,
                         "mlp.data: the file needs tensors `inputs` [N, features] and `targets` [N] (class ids)",
                         dataFile);
    int64_t classes = 0;
    if (!job.value("mlp.classes").empty()) {
        classes = integerValue(job, "mlp.classes");
    } else {
        auto largest = largestTarget(*targets, dataFile);
        if (!largest)
            return tl::unexpected(largest.error());
        classes = std::max<int64_t>(2, *largest + 1);
    }
    std::vector<int64_t> widths{inputs->shape[1]};
    std::istringstream hidden(job.value("mlp.hidden"));
    for (std::string item; std::getline(hidden, item, ',');) {
        if (item.find_first_not_of(" []") != std::string::npos)
            widths.push_back(std::stoll(item.substr(item.find_first_not_of(" ["))));
    }
    widths.push_back(classes);
    RecipeModel model;
    model.recipe = "mlp";
    for (size_t i = 0; i < widths.size(); ++i) {
        model.shape += (i ? " -> " : "") + std::to_string(widths[i]);
        if (i > 0)
            model.parameters += uint64_t(widths[i - 1] * widths[i] + widths[i]);
    }
    model.optimizer = job.value("mlp.optimizer");
    if (model.optimizer == "adamw")
        model.optimizerStates = 2;
    else // SGD keeps a momentum buffer only with momentum
        model.optimizerStates = std::stod(job.value("mlp.momentum")) != 0.0 ? 1 : 0;
    return model;
}

// causal_lm (core/worker/causallmrecipe.cpp): the model folder's parameters from its safetensors
// headers (config.json alone when there are none), all trained in float32 with AdamW; with LoRA
// only the adapters of the layers lora.target_modules selects train, and the base stays frozen.
Result<RecipeModel> causalLmModel(const launcher::JobFile &job, const std::string &jobFile)
{
    const std::string folder = job.value("model.path");
    auto read = bigmodel::loadModel(folder);
    if (!read)
        return makeError(ErrorCode::InvalidInput, "model.path: " + read.error().toString(), jobFile);
    const auto loaded = std::make_shared<const bigmodel::LoadedModel>(std::move(*read));
    const bigmodel::ModelStructure &structure = loaded->structure;
    RecipeModel model;
    model.recipe = "causal_lm";
    model.family = structure.family.empty() && loaded->config ? loaded->config->modelType : structure.family;
    model.parameters = structure.parameterCount();
    model.trainable = model.parameters;
    model.shape = model.family.empty() ? std::string("unknown family") : model.family;
    if (loaded->config)
        model.shape += ", " + std::to_string(loaded->config->numLayers) + " layers, hidden " +
                       std::to_string(loaded->config->hiddenSize);
    model.optimizer = "adamw";
    model.optimizerStates = 2;
    model.vocabParallel = jobs::parseBoolean(job.value("training.vocab_parallel")).value_or(false);
    model.sequenceParallel = jobs::parseBoolean(job.value("training.sequence_parallel")).value_or(false);
    model.loaded = loaded;
    if (job.value("lora.r").empty())
        return model;
    model.loraRank = integerValue(job, "lora.r");
    auto lora =
        bigmodel::countLoraParameters(structure, jobs::splitList(job.value("lora.target_modules")), model.loraRank);
    if (!lora)
        return makeError(ErrorCode::InvalidInput, lora.error().message, jobFile);
    model.loraLayers = lora->layers;
    model.trainable = lora->parameters;
    for (const bigmodel::ModelTensor &tensor : structure.tensors()) {
        if (!tensor.buffer && tensor.aliasOf.empty())
            model.frozenStoredBytes += (tensor.elements * uint64_t(bigmodel::dtypeBits(tensor.dtype)) + 7) / 8;
    }
    model.parameters += model.trainable;
    model.shape +=
        "; LoRA r " + std::to_string(model.loraRank) + " on " + std::to_string(lora->layers.size()) + " layers";
    return model;
}

} // namespace

bool isJobFile(const std::string &path)
{
    auto endsWith = [&path](const char *suffix) {
        const size_t n = std::strlen(suffix);
        return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
    };
    return endsWith(".yaml") || endsWith(".yml");
}

Result<RecipeModel> recipeModel(const std::string &jobFile)
{
    auto job = launcher::JobFile::load(jobFile);
    if (!job) {
        Error error = job.error();
        if (error.code == ErrorCode::Unsupported) { // a recipe other than gpt and mlp
            const size_t from = error.message.find("got \"");
            const size_t to = from == std::string::npos ? from : error.message.find('"', from + 5);
            const std::string recipe =
                to == std::string::npos ? std::string("?") : error.message.substr(from + 5, to - from - 5);
            error.code = ErrorCode::InvalidInput;
            error.message = "recipe: estimate-memory counts the model of gpt, mlp and causal_lm jobs; got \"" + recipe +
                            "\" (for another job give its model folder or checkpoint)";
        }
        return tl::unexpected(std::move(error));
    }
    if (auto shape = checkShape(*job, jobFile); !shape)
        return tl::unexpected(shape.error());
    Result<RecipeModel> model = job->recipe() == "gpt"         ? Result<RecipeModel>(gptModel(*job))
                                : job->recipe() == "causal_lm" ? causalLmModel(*job, jobFile)
                                                               : mlpModel(*job, jobFile);
    if (model) {
        if (model->trainable == 0)
            model->trainable = model->parameters;
        model->jobFile = jobFile;
        model->mixedPrecision = job->value("training.mixed_precision");
    }
    return model;
}

} // namespace accel::cli
