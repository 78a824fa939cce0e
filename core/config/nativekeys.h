// What a native job (`accel launch --job JOB.yaml` on accel-worker) does with every setting
// Accelerate has: each key of an Accelerate config file, each variable `accel launch` exports,
// each field of Accelerate's config dataclasses and each key of a DeepSpeed JSON file. One table
// (nativekeys.cpp): the ranks' start-up check and the launcher's job check refuse and note from
// it, docs/native-keys.md is its rendering (markdownTable), and tst_nativekeys holds it against
// the installed Accelerate package.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace accel::config::native {

enum class Verdict {
    Acted,       // the native job does what Accelerate does; the reader (`by`) refuses what it cannot honour
    Refused,     // refused by name when set to anything but an inert value
    Meaningless, // noted as meaningless for C++ when set to anything but an inert value
    PythonOnly,  // set only through Accelerate's Python API: no config key or variable carries it to a rank
};

// Who acts on the key, refuses it or prints its note.
enum class Actor {
    Startup,  // the rank's start-up check (accel-worker, core/worker/nativesettings), from this table
    Launcher, // accel launch (the ranks never see the key), from this table where it refuses or notes
    Runtime,  // the runtime's environment reader and Accelerator
    Plan,     // the sharding plan (FSDP_*, ACCELERATE_DEEPSPEED_*, the DeepSpeed file)
    Fp8,      // the FP8 settings (ACCELERATE_FP8_*)
    Nobody,   // PythonOnly rows
};

struct Key {
    const char *config;    // dotted config-file key ("fsdp_config.fsdp_version"); "" none
    const char *variables; // exported variables, space-separated; "" none
    const char *python;    // Accelerate dataclass fields ("FullyShardedDataParallelPlugin.fsdp_version"),
                           // space-separated; "" none
    const char *json;      // DeepSpeed JSON key ("zero_optimization.stage"); "" none
    Verdict verdict;
    Actor by;
    // Values that ask for nothing (comma-separated, compared without case): a Refused or
    // Meaningless key with one of them is neither refused nor noted. "*": every value (the key is
    // refused or noted together with another one, or is set by accel launch itself).
    const char *inert;
    const char *meaning; // what a native job does with it: the docs' text, the notes' and refusals' reason
};

struct Section {
    const char *title;
    std::vector<Key> keys;
};

// The table, in the docs' order.
const std::vector<Section> &sections();

const Key *findConfigKey(std::string_view dottedKey);
const Key *findVariable(std::string_view name);
const Key *findPythonField(std::string_view classDotField);
const Key *findDeepSpeedKey(std::string_view path);

// Whether `value` asks for nothing (one of the key's inert values).
bool isInert(const Key &key, std::string_view value);
// "fsdp_config.fsdp_version (FSDP_VERSION=2)": how a message names the key a value came from.
std::string keyName(const Key &key, std::string_view variable = {}, std::string_view value = {});

const char *actorName(Actor actor);

// docs/native-keys.md's tables: one per section.
std::string markdownTable();

} // namespace accel::config::native
