#include "core/common/jobschema.h"

#include "core/common/accelerateenv.h"
#include "core/common/mixedprecision.h"
#include "core/common/text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>

namespace accel::jobs {

namespace {

using T = JobField::Type;

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

// training.mixed_precision: empty (the cluster config's) or one of Accelerate's names.
std::vector<std::string> precisionChoices()
{
    std::vector<std::string> choices{""};
    const std::vector<std::string> &names = mixedPrecisionNames();
    choices.insert(choices.end(), names.begin(), names.end());
    return choices;
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

JobField lowercase(JobField f)
{
    f.lowercase = true;
    return f;
}

JobField whenAbsent(JobField f, std::string text)
{
    f.absent = std::move(text);
    return f;
}

JobField notInForm(JobField f)
{
    f.form = false;
    return f;
}

void append(std::vector<JobField> &out, const std::vector<JobField> &more)
{
    out.insert(out.end(), more.begin(), more.end());
}

std::vector<JobField> jobFields()
{
    return {
        whenAbsent(make("name", "Name", T::Text, "", 0, 0, "Job", "run name; default: the job file's name"),
                   "the job file's name"),
        make("seed", "Seed", T::Integer, "42", 0, kUnbounded, "Job", "torch seed and data-order seed"),
        whenAbsent(make("output_dir", "Output folder", T::Path, "", 0, 0, "Job",
                        "where the model and checkpoints go; empty: the run directory"),
                   "`$ACCEL_RUN_DIR`, else `<job folder>/<name>-output`"),
    };
}

std::vector<JobField> trainingFields()
{
    const char *tr = "Training";
    const char *adv = "Advanced";
    return {
        make("training.max_steps", "Steps", T::Integer, "100", 0, kUnbounded, tr, "optimizer steps"),
        make("training.batch_size", "Batch size", T::Integer, "8", 1, kUnbounded, tr, "samples per process and step"),
        exclusiveMinimum(make("training.learning_rate", "Learning rate", T::Number, "3.0e-4", 0, 10, tr,
                              "peak learning rate (AdamW/SGD)")),
        make("training.warmup_steps", "Warm-up steps", T::Integer, "0", 0, kUnbounded, tr,
             "linear warm-up, then cosine decay"),
        make("training.weight_decay", "Weight decay", T::Number, "0.0", 0, 10, tr, "decoupled weight decay"),
        whenAbsent(lowercase(choice("training.mixed_precision", "Mixed precision", "", precisionChoices(), tr,
                                    "empty: from the cluster config; fp16 needs a CUDA build")),
                   std::string("`") + accelerateenv::kMixedPrecision + "`"),
        make("training.eval_every", "Evaluate every", T::Integer, "0", 0, kUnbounded, tr,
             "steps; 0 = never (gpt, distill, causal_lm)"),
        make("training.checkpoint_every", "Checkpoint every", T::Integer, "0", 0, kUnbounded, tr, "steps; 0 = never"),
        make("training.log_every", "Log every", T::Integer, "10", 1, kUnbounded, tr, "steps between metrics lines"),
        make("training.min_lr_ratio", "Final LR ratio", T::Number, "0.1", 0, 1, adv,
             "cosine decays to learning_rate * ratio"),
        make("training.grad_clip", "Gradient clip", T::Number, "0.0", 0, 1e9, adv, "global norm; 0 = off"),
        make("training.gradient_accumulation_steps", "Accumulation steps", T::Integer, "1", 1, 1 << 20, adv,
             "batches per optimizer step"),
        make("training.eval_batches", "Eval batches", T::Integer, "4", 1, kUnbounded, adv, "per process"),
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

// The gpt model's shape under `prefix`: the student's ("model.", with defaults) or the distill
// recipe's teacher ("teacher.model.": the student's shape when absent, dropout 0).
std::vector<JobField> gptModelFields(const std::string &prefix, bool student)
{
    auto d = [&](const char *value) { return student ? value : ""; };
    std::vector<JobField> out = {
        make("n_layer", "Layers", T::Integer, d("2"), 1, 1024, "Model", "transformer blocks"),
        make("n_head", "Heads", T::Integer, d("2"), 1, 1024, "Model", "attention heads; must divide n_embd"),
        make("n_embd", "Embedding size", T::Integer, d("64"), 1, 65536, "Model", "width (n_embd)"),
        make("block_size", "Context", T::Integer, d("64"), 2, 65536, "Model", "bytes per window (block_size)"),
        make("dropout", "Dropout", T::Number, "0.0", 0, 0.99, "Model", "0 = off"),
    };
    for (JobField &f : out) {
        f.key = prefix + f.key;
        if (f.defaultValue.empty())
            f.absent = "the student's";
    }
    return out;
}

std::vector<JobField> gptDataFields()
{
    return {
        required(make("data.corpus", "Corpus", T::Path, "", 0, 0, "Data", "a text file, or a folder of text files")),
        make("data.eval_fraction", "Eval fraction", T::Number, "0.05", 0, 0.5, "Data",
             "the last part of the bytes, for evaluation"),
        make("sample.prompt", "Sample prompt", T::Text, "The ", 0, 0, "Data", "rank 0 prints a sample at the end"),
        make("sample.length", "Sample length", T::Integer, "160", 0, 100000, "Data", "bytes to generate"),
    };
}

std::vector<JobField> gptFields()
{
    std::vector<JobField> out = jobFields();
    append(out, gptModelFields("model.", true));
    append(out, gptDataFields());
    append(out, trainingFields());
    return out;
}

std::vector<JobField> distillFields()
{
    std::vector<JobField> out = jobFields();
    append(out, gptModelFields("model.", true));
    append(out, gptDataFields());
    out.push_back(required(make("teacher.weights", "Teacher weights", T::Path, "", 0, 0, "Teacher",
                                "the model.safetensors a gpt run wrote in its output_dir")));
    // The teacher's shape defaults to the student's (dropout 0); its block_size must equal the student's.
    append(out, gptModelFields("teacher.model.", false));
    out.push_back(make("distill.alpha", "Distillation weight", T::Number, "0.5", 0, 1, "Teacher",
                       "1: distillation only, 0: cross entropy only"));
    out.push_back(exclusiveMinimum(
        make("distill.temperature", "Temperature", T::Number, "2.0", 0, 1e6, "Teacher", "softens both distributions")));
    append(out, trainingFields());
    return out;
}

std::vector<JobField> mlpFields()
{
    std::vector<JobField> out = jobFields();
    append(
        out,
        {
            required(make("mlp.data", "Data", T::Path, "", 0, 0, "Data",
                          "safetensors with `inputs` [N, features] and `targets` [N]")),
            whenAbsent(make("mlp.init", "Initial weights", T::Path, "", 0, 0, "Data",
                            "optional safetensors (0.weight, 0.bias, ...)"),
                       "seeded random weights"),
            make("mlp.hidden", "Hidden sizes", T::IntegerList, "64, 64", 1, 1 << 24, "Model",
                 "hidden layer widths, comma separated"),
            whenAbsent(make("mlp.classes", "Classes", T::Integer, "", 2, 1 << 24, "Model", "empty: max(targets) + 1"),
                       "max(targets) + 1"),
            choice("mlp.optimizer", "Optimizer", "sgd", {"sgd", "adamw"}, "Model", "SGD with momentum, or AdamW"),
            make("mlp.momentum", "Momentum", T::Number, "0.9", 0, 1, "Model", "SGD only"),
        });
    append(out, trainingFields());
    return out;
}

std::vector<JobField> torchScriptFields()
{
    std::vector<JobField> out = jobFields();
    append(out, {
                    required(make("torchscript.module", "Module", T::Path, "", 0, 0, "Model",
                                  "a module saved with torch.jit.save")),
                    required(make("torchscript.data", "Data", T::Path, "", 0, 0, "Data",
                                  "safetensors with the sample dimension first")),
                    whenAbsent(notInForm(make("torchscript.inputs", "Inputs", T::Text, "", 0, 0, "Data",
                                              "forward's arguments in order, a list of tensor names")),
                               "every tensor, names sorted"),
                });
    append(out, trainingFields());
    return out;
}

std::vector<JobField> pluginFields()
{
    std::vector<JobField> out = jobFields();
    out.push_back(required(
        make("plugin.library", "Library", T::Path, "", 0, 0, "Model", "a shared library exporting accel_plugin_run")));
    append(out, trainingFields());
    return out;
}

// causal_lm (docs/finetune.md): a Hugging Face model folder fine-tuned whole or with LoRA.
std::vector<JobField> causalLmFields()
{
    std::vector<JobField> out = jobFields();
    const char *lora = "LoRA";
    append(out,
           {
               required(make("model.path", "Model folder", T::Path, "", 0, 0, "Model",
                             "a Hugging Face folder: config.json, safetensors weights, tokenizer.json")),
               required(make("data.train", "Training data", T::Path, "", 0, 0, "Data",
                             "a .txt file (blank-line-separated documents), a .jsonl file, or a folder of them")),
               whenAbsent(make("data.eval", "Evaluation data", T::Path, "", 0, 0, "Data",
                               "optional; the same formats; eval_loss and eval_perplexity"),
                          "no evaluation"),
               make("data.block_size", "Block size", T::Integer, "512", 2, 1 << 20, "Data",
                    "tokens per window (text) or at most per example (instruction)"),
               make("data.text_key", "Text field", T::Text, "text", 0, 0, "Data", "the field of a .jsonl document"),
               lowercase(choice("data.format", "Format", "auto", {"auto", "text", "instruction"}, "Data",
                                "auto: instruction when .jsonl records hold prompt and completion")),
               whenAbsent(make("lora.r", "LoRA rank", T::Integer, "", 1, 65536, lora,
                               "set to train a LoRA adapter; absent: full fine-tuning"),
                          "full fine-tuning"),
               make("lora.alpha", "LoRA alpha", T::Number, "8", 0, 1e6, lora, "scaling = alpha / r"),
               make("lora.dropout", "LoRA dropout", T::Number, "0.0", 0, 0.99, lora,
                    "on the adapter's input while training"),
               whenAbsent(make("lora.target_modules", "Target modules", T::TextList, "", 0, 0, lora,
                               "layer names, e.g. [q_proj, v_proj], or all-linear"),
                          "(required with lora.r)"),
               make("lora.use_rslora", "rsLoRA", T::Boolean, "false", 0, 0, lora, "scaling = alpha / sqrt(r)"),
               make("training.gradient_checkpointing", "Gradient checkpointing", T::Boolean, "false", 0, 0, "Training",
                    "recompute each block in backward instead of keeping its activations"),
               make("training.vocab_parallel", "Vocabulary parallel", T::Boolean, "false", 0, 0, "Training",
                    "with tp_size 2 or more: embedding and LM head split over the vocabulary, the loss on the "
                    "split logits"),
               make("training.sequence_parallel", "Sequence parallel", T::Boolean, "false", 0, 0, "Training",
                    "with tp_size 2 or more: norms and dropout on 1/tp of the tokens between the split layers"),
               make("training.adam_beta1", "Adam beta1", T::Number, "0.9", 0, 0.999999, "Advanced", "AdamW"),
               make("training.adam_beta2", "Adam beta2", T::Number, "0.999", 0, 0.999999, "Advanced", "AdamW"),
               exclusiveMinimum(
                   make("training.adam_epsilon", "Adam epsilon", T::Number, "1e-8", 0, 1, "Advanced", "AdamW")),
               lowercase(choice("output.dtype", "Saved dtype", "auto", {"auto", "float32", "bfloat16", "float16"},
                                "Output", "the saved model's dtype; auto: the input checkpoint's")),
               make("output.max_shard_size", "Shard size", T::Text, "50GB", 0, 0, "Output",
                    "safetensors shards of at most this size (save_pretrained's max_shard_size)"),
           });
    append(out, trainingFields());
    return out;
}

std::vector<JobField> selftestFields()
{
    std::vector<JobField> out = jobFields();
    append(out, trainingFields());
    return out;
}

std::string formatBound(double value)
{
    if (value >= kUnbounded)
        return "up";
    std::ostringstream out;
    if (value == std::floor(value) && std::abs(value) < 1e15)
        out << static_cast<long long>(value); // 1048576, not 1.04858e+06
    else
        out << value;
    return out.str();
}

std::string choiceList(const JobField &f)
{
    std::string list;
    for (const std::string &c : f.choices)
        list += (list.empty() ? "" : ", ") + (c.empty() ? std::string("(empty)") : c);
    return list;
}

} // namespace

const std::vector<std::string> &knownRecipes()
{
    static const std::vector<std::string> recipes{"gpt",         "distill", "causal_lm", "mlp",
                                                  "torchscript", "plugin",  "selftest"};
    return recipes;
}

const std::vector<std::string> &formRecipes()
{
    static const std::vector<std::string> recipes{"gpt", "mlp", "causal_lm"};
    return recipes;
}

const std::vector<JobField> &fields(const std::string &recipe)
{
    static const std::vector<JobField> gpt = gptFields(), distill = distillFields(), mlp = mlpFields(),
                                       torchscript = torchScriptFields(), plugin = pluginFields(),
                                       selftest = selftestFields(), causalLm = causalLmFields(), none;
    if (recipe == "gpt")
        return gpt;
    if (recipe == "distill")
        return distill;
    if (recipe == "causal_lm")
        return causalLm;
    if (recipe == "mlp")
        return mlp;
    if (recipe == "torchscript")
        return torchscript;
    if (recipe == "plugin")
        return plugin;
    if (recipe == "selftest")
        return selftest;
    return none;
}

const JobField *field(const std::string &recipe, const std::string &key)
{
    for (const JobField &f : fields(recipe)) {
        if (f.key == key)
            return &f;
    }
    return nullptr;
}

std::string lowered(std::string text)
{
    return accel::text::lower(std::move(text));
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

std::optional<bool> parseBoolean(const std::string &text)
{
    const std::string l = lowered(text);
    if (l == "true" || l == "yes" || l == "on" || l == "1")
        return true;
    if (l == "false" || l == "no" || l == "off" || l == "0")
        return false;
    return std::nullopt;
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

std::string rangeText(const JobField &f)
{
    const std::string lo = formatBound(f.minimum);
    if (f.maximum >= kUnbounded)
        return (f.minimumExclusive ? "greater than " : "from ") + lo + (f.minimumExclusive ? "" : " up");
    return (f.minimumExclusive ? "greater than " + lo + " and at most " : "from " + lo + " to ") +
           formatBound(f.maximum);
}

std::string valueProblem(const JobField &f, const std::string &rawValue)
{
    if (rawValue.empty())
        return {};
    const std::string value = f.lowercase ? lowered(rawValue) : rawValue;
    const std::string shown = "; got \"" + rawValue + "\"";
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
        return parseBoolean(value) ? "" : "expected true or false" + shown;
    case T::Choice:
        if (std::find(f.choices.begin(), f.choices.end(), value) != f.choices.end())
            return {};
        return "expected one of " + choiceList(f) + shown;
    case T::IntegerList: {
        const auto items = splitList(value);
        for (const std::string &item : items) {
            long long v = 0;
            if (!parseInteger(item, v) || double(v) < f.minimum || double(v) > f.maximum)
                return "expected whole numbers " + rangeText(f) + ", separated by commas" + shown;
        }
        return items.empty() ? "expected at least one size" + shown : "";
    }
    case T::TextList:
        return splitList(value).empty() ? "expected a list of names, e.g. [q_proj, v_proj]" + shown : "";
    case T::Path:
    case T::Text:
        return {};
    }
    return {};
}

std::string markdownTable(const std::vector<std::string> &recipes)
{
    std::string out = "| key | default | valid |\n| --- | --- | --- |\n";
    std::vector<std::string> seen;
    for (const std::string &recipe : recipes) {
        for (const JobField &f : fields(recipe)) {
            if (std::find(seen.begin(), seen.end(), f.key) != seen.end())
                continue;
            seen.push_back(f.key);
            const std::string def = f.required                ? "(required)"
                                    : !f.defaultValue.empty() ? "`" + f.defaultValue + "`"
                                    : !f.absent.empty()       ? f.absent
                                                              : "(none)";
            std::string valid;
            switch (f.type) {
            case T::Integer:
                valid = "whole number " + rangeText(f);
                break;
            case T::Number:
                valid = "number " + rangeText(f);
                break;
            case T::Boolean:
                valid = "true or false";
                break;
            case T::Choice:
                valid = "one of " + choiceList(f) + (f.lowercase ? " (any case)" : "");
                break;
            case T::IntegerList:
                valid = "whole numbers " + rangeText(f);
                break;
            case T::TextList:
                valid = "a list of names";
                break;
            case T::Path:
                valid = f.required ? "an existing path" : "an existing path when set";
                break;
            case T::Text:
                valid = "text";
                break;
            }
            out += "| `" + f.key + "` | " + def + " | " + valid + "; " + f.help + " |\n";
        }
    }
    return out;
}

} // namespace accel::jobs
