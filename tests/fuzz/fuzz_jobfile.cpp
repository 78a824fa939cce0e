// Fuzz target: a job file (docs/jobs.md) through both of its readers, accel-worker's JobSpec and
// the studio's JobFile. Each refuses with a message, or accepts: JobSpec's recipe is a known one,
// and a JobFile written back (toYaml) reads back with the same value for every schema field whose
// value is valid (the form keeps invalid text for the user to correct, without a promise).
#include "core/common/jobschema.h"
#include "core/worker/jobspec.h"
#include "launcher/jobfile.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace accel;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string text(reinterpret_cast<const char *>(data), size);
    auto spec = worker::JobSpec::parse(text, "fuzz/job.yaml");
    if (!spec) {
        if (spec.error().message.empty())
            std::abort();
    } else {
        const auto &recipes = jobs::knownRecipes();
        if (std::find(recipes.begin(), recipes.end(), spec->recipe) == recipes.end())
            std::abort();
    }
    auto form = launcher::JobFile::parse(text, "fuzz/job.yaml");
    if (!form) {
        if (form.error().message.empty())
            std::abort();
        return 0;
    }
    auto again = launcher::JobFile::parse(form->toYaml(), "fuzz/job.yaml");
    if (!again)
        std::abort();
    for (const auto &[key, value] : form->values()) {
        const jobs::JobField *f = launcher::JobFile::field(form->recipe(), key);
        if (f && jobs::valueProblem(*f, value).empty() && again->value(key) != value)
            std::abort();
    }
    return 0;
}
