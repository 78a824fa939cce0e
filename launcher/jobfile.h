// Job files of the built-in recipes (docs/jobs.md) for editors: the `gpt`, `mlp` and `causal_lm` fields of
// the one job schema (core/common/jobschema.h, which accel-worker reads too, so form and worker
// agree on every default and range); validation of a set of values with one message per field
// (plus cross-field rules such as n_embd divisible by n_head and paths that must exist); and YAML
// read/write of job files that accel-worker accepts. No Qt; yaml-cpp stays in jobfile.cpp.
#pragma once

#include "core/common/jobschema.h"
#include "core/common/result.h"

#include <map>
#include <string>
#include <vector>

namespace accel::launcher {

using JobField = jobs::JobField; // core/common/jobschema.h: the one table

struct FieldIssue {
    std::string key;
    std::string message;
};

class JobFile {
public:
    // Recipes the form edits (torchscript and plugin jobs stay plain job files).
    static const std::vector<std::string> &formRecipes();
    // Every field of `recipe` in form order: job settings, the recipe's own sections, training.
    static const std::vector<JobField> &fields(const std::string &recipe);
    static const JobField *field(const std::string &recipe, const std::string &key);

    // A job with every field at its default.
    static JobFile defaults(const std::string &recipe);
    // Reads a gpt, mlp or causal_lm job; relative paths become absolute against the file's folder; keys the
    // schema does not know are kept and written back unchanged.
    static Result<JobFile> parse(const std::string &yamlText, const std::string &path);
    static Result<JobFile> load(const std::string &path);

    const std::string &recipe() const { return m_recipe; }
    // Switches recipe, keeping the shared fields (name, seed, training.*).
    void setRecipe(const std::string &recipe);
    std::string value(const std::string &key) const;
    void setValue(const std::string &key, const std::string &value); // "" removes the key
    const std::map<std::string, std::string> &values() const { return m_values; }

    // One issue per bad field, in form order; empty when accel-worker will accept the job.
    std::vector<FieldIssue> validate() const;
    // The first issue as an error naming the key, the value and what is valid.
    Result<void> check(const std::string &context = {}) const;
    // YAML text: `recipe` first, then sections in schema order; empty values left out.
    std::string toYaml() const;
    // Validates, then writes atomically.
    Result<void> save(const std::string &path) const;

    bool operator==(const JobFile &other) const { return m_recipe == other.m_recipe && m_values == other.m_values; }

private:
    std::string m_recipe;
    std::map<std::string, std::string> m_values;
};

} // namespace accel::launcher
