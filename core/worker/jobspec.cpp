#include "core/worker/jobspec.h"

#include "core/common/fileutil.h"
#include "core/common/jobfilelimits.h"
#include "core/common/yamldocument.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace accel::worker {

namespace {

void flatten(const YAML::Node &node, const std::string &prefix, std::map<std::string, std::string> &out)
{
    if (node.IsMap()) {
        for (const auto &item : node) {
            const std::string key = item.first.as<std::string>();
            if (const std::string problem = jobs::jobKeyProblem(key); !problem.empty())
                throw YAML::Exception(item.first.Mark(), problem);
            flatten(item.second, prefix.empty() ? key : prefix + "." + key, out);
        }
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

} // namespace

Result<JobSpec> JobSpec::load(const std::string &path)
{
    auto text = fileutil::readFile(path, jobs::kMaxJobFileBytes);
    if (!text)
        return tl::unexpected(text.error());
    return parse(*text, path);
}

Result<JobSpec> JobSpec::parse(const std::string &yamlText, const std::string &path)
{
    JobSpec job;
    job.path = path;
    job.folder = std::filesystem::absolute(path).parent_path().string();
    // The input guard bounds the document (size, depth, aliases expanded) before flatten walks it.
    auto document = yamlutil::parseYaml(yamlText, path, jobs::jobFileLimits());
    if (!document)
        return tl::unexpected(document.error());
    try {
        const YAML::Node &root = *document;
        if (!root.IsMap())
            return makeError(ErrorCode::InvalidInput, "a job file must be a YAML mapping with at least `recipe:`",
                             path);
        flatten(root, "", job.values);
    } catch (const YAML::Exception &e) {
        return makeError(ErrorCode::InvalidInput, e.msg,
                         e.mark.is_null() ? path : path + ": line " + std::to_string(e.mark.line + 1));
    }
    job.recipe = job.raw("recipe");
    const auto &recipes = jobs::knownRecipes();
    if (std::find(recipes.begin(), recipes.end(), job.recipe) == recipes.end()) {
        std::string message = "recipe: expected one of ";
        for (size_t i = 0; i < recipes.size(); ++i)
            message += (i ? ", " : "") + recipes[i];
        message += "; got \"" + job.recipe + "\"";
        if (auto close = fileutil::closestMatchIn(job.recipe, recipes); !close.empty())
            message += " (did you mean " + close + "?)";
        return makeError(ErrorCode::InvalidInput, message, path);
    }
    // Every field of the recipe's schema: a present value must fit it, a required one be there.
    for (const jobs::JobField &f : jobs::fields(job.recipe)) {
        const auto it = job.values.find(f.key);
        const std::string value = it == job.values.end() ? std::string() : it->second;
        if (value.empty() && f.required)
            return makeError(ErrorCode::InvalidInput, f.key + ": missing (" + f.help + ")", path);
        if (std::string problem = jobs::valueProblem(f, value); !problem.empty())
            return makeError(ErrorCode::InvalidInput, f.key + ": " + problem, path);
    }
    // The tensor-parallel options exist for causal_lm only; elsewhere they would do nothing.
    for (const char *key : {"training.vocab_parallel", "training.sequence_parallel"}) {
        if (job.has(key) && !jobs::field(job.recipe, key))
            return makeError(ErrorCode::InvalidInput,
                             std::string(key) +
                                 ": only the causal_lm recipe splits its model over the vocabulary "
                                 "or the sequence; remove the key for recipe " +
                                 job.recipe,
                             path);
    }
    job.name =
        job.has("name") && !job.raw("name").empty() ? job.raw("name") : std::filesystem::path(path).stem().string();
    job.seed = uint64_t(job.integer("seed"));

    if (job.has("output_dir"))
        job.outputDir = job.pathValue("output_dir");
    else if (const char *runDir = std::getenv("ACCEL_RUN_DIR"); runDir && *runDir)
        job.outputDir = runDir;
    else
        job.outputDir = (std::filesystem::path(job.folder) / (job.name + "-output")).string();

    TrainingSettings &t = job.training;
    t.maxSteps = job.integer("training.max_steps");
    t.batchSize = job.integer("training.batch_size");
    t.warmupSteps = job.integer("training.warmup_steps");
    t.logEvery = job.integer("training.log_every");
    t.evalEvery = job.integer("training.eval_every");
    t.evalBatches = job.integer("training.eval_batches");
    t.checkpointEvery = job.integer("training.checkpoint_every");
    t.gradientAccumulationSteps = int(job.integer("training.gradient_accumulation_steps"));
    t.checkpointTotalLimit = int(job.integer("training.checkpoint_total_limit"));
    t.learningRate = job.number("training.learning_rate");
    t.minLrRatio = job.number("training.min_lr_ratio");
    t.weightDecay = job.number("training.weight_decay");
    t.gradClip = job.number("training.grad_clip");
    t.bucketCapMb = job.number("training.bucket_cap_mb");
    t.timeoutS = job.number("training.timeout_s");
    t.checkpointAtEnd = job.boolean("training.checkpoint_at_end");
    t.shuffle = job.boolean("training.shuffle");
    t.mixedPrecision = job.text("training.mixed_precision");
    t.resume = job.text("training.resume");
    if (t.resume != "auto" && t.resume != "none")
        t.resume = job.pathValue("training.resume");
    return job;
}

const jobs::JobField &JobSpec::schemaField(const std::string &key) const
{
    if (const jobs::JobField *f = jobs::field(recipe, key))
        return *f;
    throw std::logic_error("the " + recipe + " recipe's schema has no field " + key);
}

std::string JobSpec::valueOrDefault(const std::string &key) const
{
    const jobs::JobField &f = schemaField(key);
    const auto it = values.find(key);
    std::string value = it == values.end() || it->second.empty() ? f.defaultValue : it->second;
    if (value.empty() && f.type != jobs::JobField::Type::Text && f.type != jobs::JobField::Type::Path &&
        f.type != jobs::JobField::Type::Choice)
        throw std::logic_error(key + " is absent and has no default");
    return f.lowercase ? jobs::lowered(value) : value;
}

int64_t JobSpec::integer(const std::string &key) const
{
    long long value = 0;
    jobs::parseInteger(valueOrDefault(key), value);
    return int64_t(value);
}

double JobSpec::number(const std::string &key) const
{
    double value = 0;
    jobs::parseNumber(valueOrDefault(key), value);
    return value;
}

bool JobSpec::boolean(const std::string &key) const
{
    return jobs::parseBoolean(valueOrDefault(key)).value_or(false);
}

std::vector<int64_t> JobSpec::integers(const std::string &key) const
{
    std::vector<int64_t> out;
    for (const std::string &item : jobs::splitList(valueOrDefault(key))) {
        long long value = 0;
        jobs::parseInteger(item, value);
        out.push_back(int64_t(value));
    }
    return out;
}

std::string JobSpec::text(const std::string &key) const
{
    return valueOrDefault(key);
}

std::string JobSpec::raw(const std::string &key, const std::string &fallback) const
{
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
}

std::string JobSpec::pathValue(const std::string &key) const
{
    const std::string value = fileutil::expandUser(raw(key));
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
