// The flags of `accel launch`: Accelerate's launch flags (facts 3.1) plus Accel Studio's own.
// One table serves the CLI (which registers them with its argument parser) and the merge (which
// needs the defaults of the nested-block flags). Both spellings --a_b and --a-b are accepted
// by the parser; names here use underscores.
#pragma once

#include <string>
#include <vector>

namespace accel::launcher {

struct LaunchFlag {
    enum class Kind {
        Switch,   // store_true: no value
        Value,    // takes a value
        BoolText, // takes "true"/"false" text (FSDP, DeepSpeed, FP8 booleans)
    };
    const char *name;
    Kind kind;
    const char *valueName;
    const char *defaultValue; // nullptr: no default (Python None)
    const char *help;
    const char *group;
    char shortName = 0;
    bool repeatable = false;
    std::vector<std::string> choices = {};
};

const std::vector<LaunchFlag> &launchFlags();
const LaunchFlag *findLaunchFlag(const std::string &name);

} // namespace accel::launcher
