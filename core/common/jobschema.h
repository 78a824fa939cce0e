// The job-file schema (docs/jobs.md), declared once: every key accel-worker reads from a job
// file, per recipe, with its type, default, range or choices, and the labels, groups and help the
// studio's recipe form shows. accel-worker's job reader (core/worker/jobspec), the launcher's job
// editor (launcher/jobfile), `accel estimate-memory` and the docs table all read this table, so
// a default or a range cannot differ between them. No Qt, no torch, no YAML.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace accel::jobs {

// An upper bound that means "no limit" (shown as "up").
inline constexpr double kUnbounded = 9.0e18;

struct JobField {
    enum class Type { Integer, Number, Boolean, Text, Path, IntegerList, Choice, TextList };
    std::string key;   // dotted, as in the YAML: "model.n_layer"
    std::string label; // for forms: "Layers"
    Type type = Type::Text;
    // What accel-worker uses when the key is absent ("" = nothing: the recipe decides, and the
    // docs say how, e.g. mlp.classes = max(targets) + 1).
    std::string defaultValue;
    std::string absent; // without a default: what applies instead, in words (for the docs)
    double minimum = 0; // Integer, Number and IntegerList items
    double maximum = 0;
    std::vector<std::string> choices; // Choice
    std::string group;                // "Job", "Model", "Data", "Training", "Advanced"
    std::string help;                 // one line for tooltips and the "missing" message
    bool required = false;            // must be present and non-empty (paths: must exist)
    bool minimumExclusive = false;    // Number: value > minimum (learning rate)
    bool lowercase = false;           // read case-insensitively (mixed_precision: BF16 = bf16)
    bool form = true;                 // the studio's recipe form shows it
};

// The recipes accel-worker runs (gpt, distill, causal_lm, mlp, torchscript, plugin, selftest): the one list
// the job check, error messages, --help and --capabilities use.
const std::vector<std::string> &knownRecipes();
// The recipes the studio edits field by field (gpt and mlp in the recipe form, causal_lm in the
// Launch page's Fine-tune flow).
const std::vector<std::string> &formRecipes();

// Every field of `recipe` in form order: job settings, the recipe's own sections, training.
// Empty for a recipe that is not known.
const std::vector<JobField> &fields(const std::string &recipe);
const JobField *field(const std::string &recipe, const std::string &key);

// Why `value` is not acceptable for `f` by its type, range or choices, or "" when it is. An empty
// value is acceptable here (absent: the default applies); whether a required value is present and
// whether a path exists are the caller's checks, since only it knows the folder paths resolve in.
std::string valueProblem(const JobField &f, const std::string &value);
// "from 1 to 1024", "greater than 0 and at most 10", "from 0 up".
std::string rangeText(const JobField &f);

bool parseInteger(const std::string &text, long long &out);
bool parseNumber(const std::string &text, double &out); // finite only
// YAML 1.1's spellings, any case: true/false, yes/no, on/off, 1/0.
std::optional<bool> parseBoolean(const std::string &text);
// "[64, 64]", "64, 64" or "64 64" -> {"64", "64"} (also names: "[q_proj, v_proj]").
std::vector<std::string> splitList(const std::string &text);
std::string lowered(std::string text);

// The "key | default | valid" table of docs/jobs.md for these recipes (each key once, in order).
std::string markdownTable(const std::vector<std::string> &recipes);

} // namespace accel::jobs
