#include "launcher/jobfile.h"

#include "core/common/fileutil.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>

namespace accel::launcher {

namespace fs = std::filesystem;

namespace {

using T = JobField::Type;
constexpr double kHuge = 9.0e18;

JobField make(const char *key, const char *label, T type, const char *def, double lo, double hi, const char *group,
              const char *help)
{
    JobField f;
    f.key = key;
    f.label = label;
    f.type = type;
    f.defaultValue = def;
    f.minimum = lo;
    f.maximum = hi;
    f.group = group;
    f.help = help;
    return f;
}

JobField choice(const char *key, const char *label, const char *def, std::vector<std::string> choices,
                const char *group, const char *help)
{
    JobField f = make(key, label, T::Choice, def, 0, 0, group, help);
    f.choices = std::move(choices);
    return f;
}

JobField required(JobField f)
{
    f.required = true;
    return f;
}

JobField exclusiveMinimum(JobField f)
{
    f.minimumExclusive = true;
    return f;
}

std::vector<JobField> jobFields()
{
    return {
        make("name", "Name", T::Text, "", 0, 0, "Job", "run name; default: the job file's name"),
        make("seed", "Seed", T::Integer, "42", 0, kHuge, "Job", "torch seed and data-order seed"),
        make("output_dir", "Output folder", T::Path, "", 0, 0, "Job",
             "where the model and checkpoints go; empty: the run directory"),
    };
}

std::vector<JobField> trainingFields()
{
    const char *tr = "Training";
    const char *adv = "Advanced";
    return {
        make("training.max_steps", "Steps", T::Integer, "100", 0, kHuge, tr, "optimizer steps"),
        make("training.batch_size", "Batch size", T::Integer, "8", 1, kHuge, tr, "samples per process and step"),
        exclusiveMinimum(make("training.learning_rate", "Learning rate", T::Number, "3.0e-4", 0, 10, tr,
                              "peak learning rate (AdamW/SGD)")),
        make("training.warmup_steps", "Warm-up steps", T::Integer, "0", 0, kHuge, tr,
             "linear warm-up, then cosine decay"),
        make("training.weight_decay", "Weight decay", T::Number, "0.0", 0, 10, tr, "decoupled weight decay"),
        choice("training.mixed_precision", "Mixed precision", "", {"", "no", "bf16", "fp16", "fp8"}, tr,
               "empty: from the cluster config; fp16 needs a CUDA build"),
        make("training.eval_every", "Evaluate every", T::Integer, "0", 0, kHuge, tr, "steps; 0 = never (gpt only)"),
        make("training.checkpoint_every", "Checkpoint every", T::Integer, "0", 0, kHuge, tr, "steps; 0 = never"),
        make("training.log_every", "Log every", T::Integer, "10", 1, kHuge, tr, "steps between metrics lines"),
        make("training.min_lr_ratio", "Final LR ratio", T::Number, "0.1", 0, 1, adv,
             "cosine decays to learning_rate * ratio"),
        make("training.grad_clip", "Gradient clip", T::Number, "0.0", 0, 1e9, adv, "global norm; 0 = off"),
        make("training.gradient_accumulation_steps", "Accumulation steps", T::Integer, "1", 1, 1 << 20, adv,
             "batches per optimizer step"),
        make("training.eval_batches", "Eval batches", T::Integer, "4", 1, kHuge, adv, "per process"),
        make("training.checkpoint_at_end", "Checkpoint at end", T::Boolean, "false", 0, 0, adv,
             "save a checkpoint after the last step"),
        make("training.checkpoint_total_limit", "Keep checkpoints", T::Integer, "0", 0, 1 << 20, adv,
             "newest N; 0 = all"),
        make("training.resume", "Resume", T::Text, "auto", 0, 0, adv,
             "auto (latest checkpoint), none, or a checkpoint folder"),
        make("training.shuffle", "Shuffle", T::Boolean, "true", 0, 0, adv, "seeded, same on every rank"),
        exclusiveMinimum(
            make("training.bucket_cap_mb", "Bucket size (MB)", T::Number, "25", 0, 1e6, adv, "all-reduce bucket")),
        exclusiveMinimum(make("training.timeout_s", "Timeout (s)", T::Number, "1800", 0, 1e9, adv,
                              "rendezvous and collective timeout")),
    };
}

std::vector<JobField> gptFields()
{
    std::vector<JobField> out = jobFields();
    const std::vector<JobField> own = {
        make("model.n_layer", "Layers", T::Integer, "2", 1, 1024, "Model", "transformer blocks"),
        make("model.n_head", "Heads", T::Integer, "2", 1, 1024, "Model", "attention heads; must divide n_embd"),
        make("model.n_embd", "Embedding size", T::Integer, "64", 1, 65536, "Model", "width (n_embd)"),
        make("model.block_size", "Context", T::Integer, "64", 2, 65536, "Model", "bytes per window (block_size)"),
        make("model.dropout", "Dropout", T::Number, "0.0", 0, 0.99, "Model", "0 = off"),
        required(make("data.corpus", "Corpus", T::Path, "", 0, 0, "Data", "a text file, or a folder of text files")),
        make("data.eval_fraction", "Eval fraction", T::Number, "0.05", 0, 0.5, "Data",
             "the last part of the bytes, for evaluation"),
        make("sample.prompt", "Sample prompt", T::Text, "The ", 0, 0, "Data", "rank 0 prints a sample at the end"),
        make("sample.length", "Sample length", T::Integer, "160", 0, 100000, "Data", "bytes to generate"),
    };
    out.insert(out.end(), own.begin(), own.end());
    const std::vector<JobField> training = trainingFields();
    out.insert(out.end(), training.begin(), training.end());
    return out;
}

std::vector<JobField> mlpFields()
{
    std::vector<JobField> out = jobFields();
    const std::vector<JobField> own = {
        required(make("mlp.data", "Data", T::Path, "", 0, 0, "Data",
                      "safetensors with `inputs` [N, features] and `targets` [N]")),
        make("mlp.init", "Initial weights", T::Path, "", 0, 0, "Data", "optional safetensors (0.weight, 0.bias, ...)"),
        make("mlp.hidden", "Hidden sizes", T::IntegerList, "64, 64", 1, 1 << 24, "Model",
             "hidden layer widths, comma separated"),
        make("mlp.classes", "Classes", T::Integer, "", 2, 1 << 24, "Model", "empty: max(targets) + 1"),
        choice("mlp.optimizer", "Optimizer", "sgd", {"sgd", "adamw"}, "Model", "SGD with momentum, or AdamW"),
        make("mlp.momentum", "Momentum", T::Number, "0.9", 0, 1, "Model", "SGD only"),
    };
    out.insert(out.end(), own.begin(), own.end());
    const std::vector<JobField> training = trainingFields();
    out.insert(out.end(), training.begin(), training.end());
    return out;
}

std::string trim(const std::string &text)
{
    const auto begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string::npos)
        return {};
    return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

std::string lower(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

bool parseInteger(const std::string &text, long long &out)
{
    if (text.empty())
        return false;
    char *end = nullptr;
    errno = 0;
    out = std::strtoll(text.c_str(), &end, 10);
    return errno == 0 && end && *end == '\0';
}

bool parseNumber(const std::string &text, double &out)
{
    if (text.empty())
        return false;
    char *end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return end && *end == '\0' && std::isfinite(out);
}

std::string formatBound(double value)
{
    if (value >= kHuge)
        return "up";
    std::ostringstream out;
    out << value;
    return out.str();
}

std::string rangeText(const JobField &f)
{
    const std::string lo = formatBound(f.minimum);
    if (f.maximum >= kHuge)
        return (f.minimumExclusive ? "greater than " : "from ") + lo + (f.minimumExclusive ? "" : " up");
    return (f.minimumExclusive ? "greater than " + lo + " and at most " : "from " + lo + " to ") +
           formatBound(f.maximum);
}

std::vector<std::string> splitList(const std::string &text)
{
    std::string cleaned = text;
    std::replace_if(
        cleaned.begin(), cleaned.end(), [](char c) { return c == ',' || c == '[' || c == ']'; }, ' ');
    std::istringstream in(cleaned);
    std::vector<std::string> items;
    for (std::string item; in >> item;)
        items.push_back(item);
    return items;
}

// Why `value` is not acceptable for `f`, or "" when it is.
std::string fieldProblem(const JobField &f, const std::string &value)
{
    const std::string shown = "; got \"" + value + "\"";
    if (value.empty())
        return f.required ? "required: choose " + (f.type == T::Path ? std::string("a file") : "a value") : "";
    switch (f.type) {
    case T::Integer: {
        long long v = 0;
        if (!parseInteger(value, v) || double(v) < f.minimum || double(v) > f.maximum)
            return "expected a whole number " + rangeText(f) + shown;
        return {};
    }
    case T::Number: {
        double v = 0;
        if (!parseNumber(value, v) || v < f.minimum || v > f.maximum || (f.minimumExclusive && v <= f.minimum))
            return "expected a number " + rangeText(f) + shown;
        return {};
    }
    case T::Boolean:
        return value == "true" || value == "false" ? "" : "expected true or false" + shown;
    case T::Choice: {
        if (std::find(f.choices.begin(), f.choices.end(), value) != f.choices.end())
            return {};
        std::string list;
        for (const std::string &c : f.choices)
            list += (list.empty() ? "" : ", ") + (c.empty() ? std::string("(empty)") : c);
        return "expected one of " + list + shown;
    }
    case T::IntegerList: {
        const auto items = splitList(value);
        for (const std::string &item : items) {
            long long v = 0;
            if (!parseInteger(item, v) || double(v) < f.minimum || double(v) > f.maximum)
                return "expected whole numbers " + rangeText(f) + ", separated by commas" + shown;
        }
        return items.empty() ? "expected at least one size" + shown : "";
    }
    case T::Path: {
        std::error_code error;
        if (!fs::exists(fileutil::expandUser(value), error) && f.key != "output_dir")
            return value + " does not exist";
        return {};
    }
    case T::Text:
        if (f.key == "training.resume" && value != "auto" && value != "none") {
            std::error_code error;
            if (!fs::is_directory(fileutil::expandUser(value), error))
                return "expected auto, none or an existing checkpoint folder" + shown;
        }
        return {};
    }
    return {};
}

void flatten(const YAML::Node &node, const std::string &prefix, std::map<std::string, std::string> &out)
{
    if (node.IsMap()) {
        for (const auto &item : node) {
            const std::string key = item.first.as<std::string>();
            flatten(item.second, prefix.empty() ? key : prefix + "." + key, out);
        }
    } else if (node.IsSequence()) {
        YAML::Emitter emitter;
        emitter << YAML::Flow << node;
        out[prefix] = emitter.c_str();
    } else if (node.IsScalar()) {
        out[prefix] = node.as<std::string>();
    } else {
        out[prefix] = "";
    }
}

bool isPlainSafe(const std::string &text)
{
    if (text.empty())
        return false;
    static const char *reserved[] = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"};
    for (const char *word : reserved) {
        if (lower(text) == word)
            return false;
    }
    double number = 0;
    if (parseNumber(text, number))
        return false;
    return std::all_of(text.begin(), text.end(),
                       [](unsigned char c) {
                           return std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == '+';
                       }) &&
           text.front() != '-';
}

std::string quoted(const std::string &text)
{
    if (isPlainSafe(text))
        return text;
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\')
            out += '\\';
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else
            out += c;
    }
    return out + "\"";
}

// The YAML scalar for one value: numbers and booleans plain, text quoted when needed.
std::string scalarFor(const JobField *f, const std::string &value)
{
    if (!f) { // a key the schema does not know: keep numbers, booleans and sequences as they were
        long long i = 0;
        double d = 0;
        const std::string l = lower(value);
        if (parseInteger(value, i) || parseNumber(value, d) || l == "true" || l == "false" ||
            (!value.empty() && (value.front() == '[' || value.front() == '{')))
            return value;
        return quoted(value);
    }
    switch (f->type) {
    case T::Integer:
    case T::Number:
    case T::Boolean:
        return value;
    case T::IntegerList: {
        std::string list;
        for (const std::string &item : splitList(value))
            list += (list.empty() ? "" : ", ") + item;
        return "[" + list + "]";
    }
    case T::Path: {
        std::error_code error;
        const fs::path absolute = fs::absolute(fileutil::expandUser(value), error);
        return quoted(error ? value : absolute.lexically_normal().string());
    }
    case T::Text:
    case T::Choice:
        return quoted(value);
    }
    return quoted(value);
}

} // namespace

const std::vector<std::string> &JobFile::formRecipes()
{
    static const std::vector<std::string> recipes{"gpt", "mlp"};
    return recipes;
}

const std::vector<JobField> &JobFile::fields(const std::string &recipe)
{
    static const std::vector<JobField> gpt = gptFields();
    static const std::vector<JobField> mlp = mlpFields();
    static const std::vector<JobField> none;
    return recipe == "gpt" ? gpt : recipe == "mlp" ? mlp : none;
}

const JobField *JobFile::field(const std::string &recipe, const std::string &key)
{
    for (const JobField &f : fields(recipe)) {
        if (f.key == key)
            return &f;
    }
    return nullptr;
}

JobFile JobFile::defaults(const std::string &recipe)
{
    JobFile job;
    job.m_recipe = recipe;
    for (const JobField &f : fields(recipe)) {
        if (!f.defaultValue.empty())
            job.m_values[f.key] = f.defaultValue;
    }
    return job;
}

void JobFile::setRecipe(const std::string &recipe)
{
    if (recipe == m_recipe)
        return;
    JobFile next = defaults(recipe);
    for (const auto &[key, value] : m_values) {
        if (field(recipe, key) && field(m_recipe, key))
            next.m_values[key] = value;
    }
    *this = std::move(next);
}

std::string JobFile::value(const std::string &key) const
{
    auto it = m_values.find(key);
    return it == m_values.end() ? std::string() : it->second;
}

void JobFile::setValue(const std::string &key, const std::string &value)
{
    const std::string clean = trim(value);
    const JobField *f = field(m_recipe, key);
    if (clean.empty())
        m_values.erase(key);
    else
        m_values[key] = f && f->type == T::Text ? value : clean;
}

Result<JobFile> JobFile::parse(const std::string &yamlText, const std::string &path)
{
    std::map<std::string, std::string> values;
    try {
        const YAML::Node root = YAML::Load(yamlText);
        if (!root.IsMap())
            return makeError(ErrorCode::InvalidInput, "a job file must be a YAML mapping with at least `recipe:`",
                             path);
        flatten(root, "", values);
    } catch (const YAML::Exception &e) {
        return makeError(ErrorCode::InvalidInput, "line " + std::to_string(e.mark.line + 1) + ": " + e.msg, path);
    }
    const std::string recipe = values.count("recipe") ? values["recipe"] : std::string();
    const auto &recipes = formRecipes();
    if (std::find(recipes.begin(), recipes.end(), recipe) == recipes.end())
        return makeError(ErrorCode::Unsupported,
                         "recipe: the recipe form edits gpt and mlp jobs; got \"" + recipe +
                             "\" (run torchscript and plugin jobs as job files)",
                         path);
    values.erase("recipe");
    JobFile job = defaults(recipe);
    std::error_code error;
    const fs::path folder = fs::absolute(path, error).parent_path();
    for (auto [key, value] : values) {
        const JobField *f = field(recipe, key);
        if (f && f->type == T::Path && !value.empty()) {
            const fs::path p(fileutil::expandUser(value));
            value = (p.is_absolute() ? p : folder / p).lexically_normal().string();
        } else if (f && f->type == T::IntegerList) {
            auto items = splitList(value);
            value.clear();
            for (const std::string &item : items)
                value += (value.empty() ? "" : ", ") + item;
        } else if (f && f->type == T::Boolean) {
            const std::string l = lower(value);
            value = (l == "yes" || l == "on" || l == "1")   ? "true"
                    : (l == "no" || l == "off" || l == "0") ? "false"
                                                            : l;
        } else if (key == "training.mixed_precision") {
            value = lower(value);
        }
        job.m_values[key] = value;
    }
    return job;
}

Result<JobFile> JobFile::load(const std::string &path)
{
    auto text = fileutil::readFile(path);
    if (!text)
        return tl::unexpected(text.error());
    return parse(*text, path);
}

std::vector<FieldIssue> JobFile::validate() const
{
    std::vector<FieldIssue> issues;
    if (fields(m_recipe).empty()) {
        issues.push_back({"recipe", "expected gpt or mlp; got \"" + m_recipe + "\""});
        return issues;
    }
    for (const JobField &f : fields(m_recipe)) {
        if (std::string problem = fieldProblem(f, value(f.key)); !problem.empty())
            issues.push_back({f.key, problem});
    }
    auto hasIssue = [&](const std::string &key) {
        return std::any_of(issues.begin(), issues.end(), [&](const FieldIssue &i) { return i.key == key; });
    };
    if (m_recipe == "gpt" && !hasIssue("model.n_embd") && !hasIssue("model.n_head")) {
        long long embd = 0, head = 1;
        parseInteger(value("model.n_embd"), embd);
        parseInteger(value("model.n_head"), head);
        if (head > 0 && embd % head != 0)
            issues.push_back({"model.n_embd", "must be divisible by model.n_head (" + std::to_string(head) + "); got " +
                                                  std::to_string(embd)});
    }
    return issues;
}

Result<void> JobFile::check(const std::string &context) const
{
    const auto issues = validate();
    if (issues.empty())
        return {};
    return makeError(ErrorCode::InvalidInput, issues.front().key + ": " + issues.front().message, context);
}

std::string JobFile::toYaml() const
{
    // A tree of sections in schema order, then keys the schema does not know (sorted).
    struct Node {
        std::string name;
        std::string scalar;
        bool leaf = false;
        std::vector<Node> children;
    };
    Node root;
    auto insert = [&root](const std::string &key, const std::string &scalar) {
        Node *node = &root;
        std::istringstream parts(key);
        std::vector<std::string> names;
        for (std::string part; std::getline(parts, part, '.');)
            names.push_back(part);
        for (size_t i = 0; i < names.size(); ++i) {
            auto it = std::find_if(node->children.begin(), node->children.end(),
                                   [&](const Node &n) { return n.name == names[i]; });
            if (it == node->children.end()) {
                node->children.push_back(Node{names[i], {}, false, {}});
                it = node->children.end() - 1;
            }
            node = &*it;
        }
        node->leaf = true;
        node->scalar = scalar;
    };
    insert("recipe", m_recipe);
    for (const JobField &f : fields(m_recipe)) {
        const std::string v = value(f.key);
        if (!v.empty())
            insert(f.key, scalarFor(&f, v));
    }
    for (const auto &[key, v] : m_values) {
        if (!field(m_recipe, key))
            insert(key, scalarFor(nullptr, v));
    }
    std::string out = "# Job for accel-worker (docs/jobs.md), written by Accel Studio.\n";
    std::function<void(const Node &, int)> emit = [&](const Node &node, int depth) {
        for (const Node &child : node.children) {
            out += std::string(size_t(depth) * 2, ' ') + child.name + ":";
            if (child.leaf) {
                out += " " + child.scalar + "\n";
            } else {
                out += "\n";
                emit(child, depth + 1);
            }
        }
    };
    emit(root, 0);
    return out;
}

Result<void> JobFile::save(const std::string &path) const
{
    if (auto ok = check(path); !ok)
        return ok;
    return fileutil::writeFileAtomic(path, toYaml());
}

} // namespace accel::launcher
