#include "core/worker/jobspec.h"

#include "core/common/fileutil.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace accel::worker {

namespace {

void flatten(const YAML::Node &node, const std::string &prefix, std::map<std::string, std::string> &out)
{
    if (node.IsMap()) {
        for (const auto &item : node)
            flatten(item.second,
                    prefix.empty() ? item.first.as<std::string>() : prefix + "." + item.first.as<std::string>(), out);
    } else if (node.IsSequence()) {
        YAML::Emitter emitter;
        emitter << YAML::Flow << node;
        out[prefix] = emitter.c_str();
        for (size_t i = 0; i < node.size(); ++i)
            flatten(node[i], prefix + "." + std::to_string(i), out);
    } else if (node.IsScalar()) {
        out[prefix] = node.as<std::string>();
    } else if (node.IsNull()) {
        out[prefix] = "";
    }
}

std::string lower(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

} // namespace

const std::vector<std::string> &knownRecipes()
{
    static const std::vector<std::string> recipes{"gpt", "distill", "mlp", "torchscript", "plugin", "selftest"};
    return recipes;
}

Result<JobSpec> JobSpec::load(const std::string &path)
{
    auto text = fileutil::readFile(path);
    if (!text)
        return tl::unexpected(text.error());
    return parse(*text, path);
}

Result<JobSpec> JobSpec::parse(const std::string &yamlText, const std::string &path)
{
    JobSpec job;
    job.path = path;
    job.folder = std::filesystem::absolute(path).parent_path().string();
    try {
        const YAML::Node root = YAML::Load(yamlText);
        if (!root.IsMap())
            return makeError(ErrorCode::InvalidInput, "a job file must be a YAML mapping with at least `recipe:`",
                             path);
        flatten(root, "", job.values);
    } catch (const YAML::Exception &e) {
        return makeError(ErrorCode::InvalidInput, "line " + std::to_string(e.mark.line + 1) + ": " + e.msg, path);
    }
    job.recipe = job.text("recipe");
    const auto &recipes = knownRecipes();
    if (std::find(recipes.begin(), recipes.end(), job.recipe) == recipes.end()) {
        std::string message = "recipe: expected one of ";
        for (size_t i = 0; i < recipes.size(); ++i)
            message += (i ? ", " : "") + recipes[i];
        message += "; got \"" + job.recipe + "\"";
        if (auto close = fileutil::closestMatchIn(job.recipe, recipes); !close.empty())
            message += " (did you mean " + close + "?)";
        return makeError(ErrorCode::InvalidInput, message, path);
    }
    job.name = job.text("name", std::filesystem::path(path).stem().string());
    auto seed = job.integer("seed", 42, 0, INT64_MAX);
    if (!seed)
        return tl::unexpected(seed.error());
    job.seed = uint64_t(*seed);

    if (job.has("output_dir"))
        job.outputDir = job.pathValue("output_dir");
    else if (const char *runDir = std::getenv("ACCEL_RUN_DIR"); runDir && *runDir)
        job.outputDir = runDir;
    else
        job.outputDir = (std::filesystem::path(job.folder) / (job.name + "-output")).string();

    TrainingSettings &t = job.training;
    struct IntField {
        const char *key;
        int64_t *target;
        int64_t minimum;
    };
    for (const IntField &field :
         {IntField{"training.max_steps", &t.maxSteps, 0}, IntField{"training.batch_size", &t.batchSize, 1},
          IntField{"training.warmup_steps", &t.warmupSteps, 0}, IntField{"training.log_every", &t.logEvery, 1},
          IntField{"training.eval_every", &t.evalEvery, 0}, IntField{"training.eval_batches", &t.evalBatches, 1},
          IntField{"training.checkpoint_every", &t.checkpointEvery, 0}}) {
        auto value = job.integer(field.key, *field.target, field.minimum, INT64_MAX);
        if (!value)
            return tl::unexpected(value.error());
        *field.target = *value;
    }
    auto accumulation = job.integer("training.gradient_accumulation_steps", 1, 1, 1 << 20);
    auto limit = job.integer("training.checkpoint_total_limit", 0, 0, 1 << 20);
    auto lr = job.number("training.learning_rate", t.learningRate);
    auto minRatio = job.number("training.min_lr_ratio", t.minLrRatio);
    auto decay = job.number("training.weight_decay", t.weightDecay);
    auto clip = job.number("training.grad_clip", t.gradClip);
    auto bucket = job.number("training.bucket_cap_mb", t.bucketCapMb);
    auto timeout = job.number("training.timeout_s", t.timeoutS);
    auto atEnd = job.boolean("training.checkpoint_at_end", t.checkpointAtEnd);
    auto shuffle = job.boolean("training.shuffle", t.shuffle);
    for (const auto *result : {&lr, &minRatio, &decay, &clip, &bucket, &timeout}) {
        if (!*result)
            return tl::unexpected(result->error());
    }
    for (const auto *result : {&accumulation, &limit}) {
        if (!*result)
            return tl::unexpected(result->error());
    }
    if (!atEnd)
        return tl::unexpected(atEnd.error());
    if (!shuffle)
        return tl::unexpected(shuffle.error());
    t.gradientAccumulationSteps = int(*accumulation);
    t.checkpointTotalLimit = int(*limit);
    t.learningRate = *lr;
    t.minLrRatio = *minRatio;
    t.weightDecay = *decay;
    t.gradClip = *clip;
    t.bucketCapMb = *bucket;
    t.timeoutS = *timeout;
    t.checkpointAtEnd = *atEnd;
    t.shuffle = *shuffle;
    t.mixedPrecision = lower(job.text("training.mixed_precision"));
    if (!t.mixedPrecision.empty() && t.mixedPrecision != "no" && t.mixedPrecision != "bf16" &&
        t.mixedPrecision != "fp16" && t.mixedPrecision != "fp8")
        return makeError(ErrorCode::InvalidInput,
                         "training.mixed_precision: expected one of no, fp16, bf16, fp8; got " + t.mixedPrecision,
                         path);
    t.resume = job.text("training.resume", "auto");
    if (t.resume != "auto" && t.resume != "none")
        t.resume = job.pathValue("training.resume");
    return job;
}

Result<int64_t> JobSpec::integer(const std::string &key, int64_t fallback, int64_t minimum, int64_t maximum) const
{
    auto it = values.find(key);
    if (it == values.end())
        return fallback;
    try {
        size_t used = 0;
        const long long value = std::stoll(it->second, &used);
        if (used == it->second.size() && value >= minimum && value <= maximum)
            return int64_t(value);
    } catch (const std::exception &) {
    }
    return makeError(ErrorCode::InvalidInput,
                     key + ": expected an integer from " + std::to_string(minimum) +
                         (maximum == INT64_MAX ? std::string(" up") : " to " + std::to_string(maximum)) + "; got \"" +
                         it->second + "\"",
                     path);
}

Result<double> JobSpec::number(const std::string &key, double fallback) const
{
    auto it = values.find(key);
    if (it == values.end())
        return fallback;
    try {
        size_t used = 0;
        const double value = std::stod(it->second, &used);
        if (used == it->second.size() && value >= 0)
            return value;
    } catch (const std::exception &) {
    }
    return makeError(ErrorCode::InvalidInput, key + ": expected a non-negative number; got \"" + it->second + "\"",
                     path);
}

Result<bool> JobSpec::boolean(const std::string &key, bool fallback) const
{
    auto it = values.find(key);
    if (it == values.end())
        return fallback;
    const std::string v = lower(it->second);
    if (v == "true" || v == "yes" || v == "1" || v == "on")
        return true;
    if (v == "false" || v == "no" || v == "0" || v == "off")
        return false;
    return makeError(ErrorCode::InvalidInput, key + ": expected true or false; got \"" + it->second + "\"", path);
}

std::string JobSpec::text(const std::string &key, const std::string &fallback) const
{
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
}

std::string JobSpec::pathValue(const std::string &key) const
{
    const std::string value = fileutil::expandUser(text(key));
    if (value.empty())
        return {};
    const std::filesystem::path p(value);
    return p.is_absolute() ? value : (std::filesystem::path(folder) / p).lexically_normal().string();
}

std::map<std::string, std::string> JobSpec::section(const std::string &prefix) const
{
    std::map<std::string, std::string> out;
    const std::string start = prefix + ".";
    for (const auto &[key, value] : values) {
        if (key.rfind(start, 0) == 0)
            out[key.substr(start.size())] = value;
    }
    return out;
}

} // namespace accel::worker
