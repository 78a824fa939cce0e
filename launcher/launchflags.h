// The flags of `accel launch`: Accelerate's launch flags (facts 3.1) plus Accel Studio's own.
// One table serves the CLI (which registers them with its argument parser) and the merge (which
// needs the defaults of the nested-block flags). Both spellings --a_b and --a-b are accepted
// by the parser; names here use underscores.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace accel::launcher {

struct LaunchFlag {
    enum class Kind {
        Switch,     // store_true: no value
        Value,      // takes a value
        BoolText,   // takes "true"/"false" text, kept as text (FSDP, DeepSpeed booleans)
        StrToBool,  // takes "true"/"false"/"yes"/"0"..., parsed to 1/0 (the FP8 AO booleans)
        PythonBool, // Accelerate parses it with Python's bool(): any non-empty text is true (Megatron-LM
                    // booleans, parallelism_config_sp_seq_length_is_variable)
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

// The Python type Accelerate's parser gives a flag's value: typed values are checked and printed
// the way Python prints them (int("010") -> 10, float("1") -> 1.0).
enum class FlagType { Text, Integer, Float };
FlagType flagType(const std::string &name);

// Flags of Accelerate 1.0 that later versions removed (--use_xpu, --ipex, --mpirun_ccl): accepted
// so old command lines keep working, and ignored with a note.
bool isRetiredFlag(const std::string &name);

// `text` as a whole decimal number of at least `minimum` (no sign-less junk, no trailing text).
std::optional<int> wholeNumberAtLeast(const std::string &text, int minimum);

} // namespace accel::launcher
