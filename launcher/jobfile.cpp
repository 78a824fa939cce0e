#include "launcher/jobfile.h"

#include "core/common/fileutil.h"
#include "core/common/jobfilelimits.h"
#include "core/common/text.h"
#include "core/common/utf8.h"
#include "core/common/yamldocument.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>

namespace accel::launcher {

namespace fs = std::filesystem;

namespace {

using T = JobField::Type;
using jobs::lowered;
using jobs::parseInteger;
using jobs::parseNumber;
using jobs::splitList;

using text::trim;

// Why `value` is not acceptable for `f`, or "" when it is: the schema's type, range and choice
// rules, plus what only a file on this machine can tell (required values present, paths exist).
std::string fieldProblem(const JobField &f, const std::string &value)
{
    if (value.empty())
        return f.required ? "required: choose " + (f.type == T::Path ? std::string("a file") : "a value") : "";
    if (std::string problem = jobs::valueProblem(f, value); !problem.empty())
        return problem;
    std::error_code error;
    if (f.type == T::Path && f.key != "output_dir" && !fs::exists(fileutil::expandUser(value), error))
        return value + " does not exist";
    if (f.key == "training.resume" && value != "auto" && value != "none" &&
        !fs::is_directory(fileutil::expandUser(value), error))
        return "expected auto, none or an existing checkpoint folder; got \"" + value + "\"";
    return {};
}

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
        if (lowered(text) == word)
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
    // Double-quoted YAML: every control character and every byte outside valid UTF-8 escaped, so
    // the file reads back through the input guard (which refuses both raw) to the same bytes.
    std::string out = "\"";
    for (size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        const size_t length = utf8::validCharLength(text, i);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (length == 0 || c < 0x20 || c == 0x7F) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\x%02X", c);
            out += escape;
        } else if (const uint32_t point = utf8::decodeAt(text, i, length);
                   point == 0x85 || point == 0x2028 || point == 0x2029 || point == 0xFEFF) {
            // Line breaks to YAML (NEL, line and paragraph separators) and the byte-order mark.
            char escape[12];
            std::snprintf(escape, sizeof escape, "\\u%04X", static_cast<unsigned>(point));
            out += escape;
            i += length;
            continue;
        } else {
            out.append(text, i, length);
            i += length;
            continue;
        }
        ++i;
    }
    return out + "\"";
}

// The YAML scalar for one value: numbers and booleans plain, text quoted when needed.
std::string scalarFor(const JobField *f, const std::string &value)
{
    if (!f) { // a key the schema does not know: keep numbers, booleans and sequences as they were
        long long i = 0;
        double d = 0;
        const std::string l = lowered(value);
        if (parseInteger(value, i) || parseNumber(value, d) || l == "true" || l == "false")
            return value;
        // A sequence as the reader emitted it; text that only starts with '[' stays text.
        if (!value.empty() && (value.front() == '[' || value.front() == '{')) {
            auto collection = yamlutil::parseYaml(value, "value", jobs::jobFileLimits());
            if (collection && (collection->IsSequence() || collection->IsMap()))
                return value;
        }
        return quoted(value);
    }
    // A value the form holds but the schema refuses is written as text, so the file still reads
    // back and the user sees what they typed (found by fuzz_jobfile: an integer field holding a
    // line break was written raw and the file no longer parsed).
    if (!jobs::valueProblem(*f, value).empty())
        return quoted(value);
    switch (f->type) {
    case T::Integer:
    case T::Number:
    case T::Boolean:
        return value;
    case T::IntegerList:
    case T::TextList: {
        std::string list;
        for (const std::string &item : splitList(value))
            list += (list.empty() ? "" : ", ") + (f->type == T::TextList ? quoted(item) : item);
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
    return jobs::formRecipes();
}

const std::vector<JobField> &JobFile::fields(const std::string &recipe)
{
    static const std::vector<JobField> none;
    const auto &recipes = formRecipes();
    return std::find(recipes.begin(), recipes.end(), recipe) == recipes.end() ? none : jobs::fields(recipe);
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
        // causal_lm's lora section applies only with lora.r (LoRA), and any lora key without it is
        // refused: its defaults stay the worker's, not written.
        if (!f.defaultValue.empty() && f.key.rfind("lora.", 0) != 0)
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
    // The input guard bounds the document (size, depth, aliases expanded) before flatten walks it.
    auto document = yamlutil::parseYaml(yamlText, path, jobs::jobFileLimits());
    if (!document)
        return tl::unexpected(document.error());
    try {
        const YAML::Node &root = *document;
        if (!root.IsMap())
            return makeError(ErrorCode::InvalidInput, "a job file must be a YAML mapping with at least `recipe:`",
                             path);
        flatten(root, "", values);
    } catch (const YAML::Exception &e) {
        return makeError(ErrorCode::InvalidInput, e.msg,
                         e.mark.is_null() ? path : path + ": line " + std::to_string(e.mark.line + 1));
    }
    const std::string recipe = values.count("recipe") ? values["recipe"] : std::string();
    const auto &recipes = formRecipes();
    if (std::find(recipes.begin(), recipes.end(), recipe) == recipes.end())
        return makeError(ErrorCode::Unsupported,
                         "recipe: the studio's forms edit gpt, mlp and causal_lm jobs; got \"" + recipe +
                             "\" (run torchscript and plugin jobs as job files)",
                         path);
    values.erase("recipe");
    JobFile job = defaults(recipe);
    std::error_code error;
    const fs::path folder = fs::absolute(path, error).parent_path();
    for (auto [key, value] : values) {
        // An empty value ("dropout:" with nothing after it) is an absent one, as accel-worker reads
        // it: the default stays (it replaced the default with "", which the form then wrote back as
        // nothing, and the file read again had the default: found by fuzz_jobfile).
        if (value.empty())
            continue;
        const JobField *f = field(recipe, key);
        if (f && f->type == T::Path) {
            const fs::path p(fileutil::expandUser(value));
            value = (p.is_absolute() ? p : folder / p).lexically_normal().string();
        } else if (f && (f->type == T::IntegerList || f->type == T::TextList)) {
            auto items = splitList(value);
            value.clear();
            for (const std::string &item : items)
                value += (value.empty() ? "" : ", ") + item;
        } else if (f && f->type == T::Boolean) {
            const auto b = jobs::parseBoolean(value);
            value = b ? (*b ? "true" : "false") : lowered(value);
        } else if (f && f->lowercase) {
            value = lowered(value);
        }
        job.m_values[key] = value;
    }
    return job;
}

Result<JobFile> JobFile::load(const std::string &path)
{
    auto text = fileutil::readFile(path, jobs::kMaxJobFileBytes);
    if (!text)
        return tl::unexpected(text.error());
    return parse(*text, path);
}

std::vector<FieldIssue> JobFile::validate() const
{
    std::vector<FieldIssue> issues;
    if (fields(m_recipe).empty()) {
        issues.push_back({"recipe", "expected gpt, mlp or causal_lm; got \"" + m_recipe + "\""});
        return issues;
    }
    for (const JobField &f : fields(m_recipe)) {
        if (std::string problem = fieldProblem(f, value(f.key)); !problem.empty())
            issues.push_back({f.key, problem});
    }
    auto hasIssue = [&](const std::string &key) {
        return std::any_of(issues.begin(), issues.end(), [&](const FieldIssue &i) { return i.key == key; });
    };
    if (m_recipe == "causal_lm" && value("lora.r").empty()) {
        for (const auto &[key, v] : m_values) {
            if (key.rfind("lora.", 0) == 0 && !v.empty() && !hasIssue(key))
                issues.push_back({key, "is set but lora.r is not: set lora.r (the rank) to train a LoRA adapter, or "
                                       "remove the lora section for full fine-tuning"});
        }
    }
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
            // Keys come from the file too: quoted when they are not plain (found by fuzz_jobfile: a
            // key starting with '>' was written as YAML's block scalar indicator).
            out += std::string(size_t(depth) * 2, ' ') + quoted(child.name) + ":";
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
