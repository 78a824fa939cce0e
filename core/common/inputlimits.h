// What a reader of outside input allows, stated the same way for every format. The guards of
// core/common take it: fileutil::readFile (regular files only, never blocking, at most maxBytes),
// jsonutil::parseJson / readJsonFile and yamlutil::parseYaml / readYamlFile. Every reader of a file
// or message from outside goes through one of those (tst_inputguards checks the sources for parser
// calls that do not), so a new reader states its limits here instead of forgetting them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace accel {

namespace input {
inline constexpr uint64_t kDefaultMaxBytes = uint64_t(64) << 20;
inline constexpr int kDefaultMaxDepth = 64;
inline constexpr size_t kDefaultMaxValues = 100000;
inline constexpr size_t kDefaultMaxTextBytes = size_t(16) << 20;
} // namespace input

struct InputLimits {
    // The whole text (a file's size, checked before it is read).
    uint64_t maxBytes = input::kDefaultMaxBytes;
    // Nesting of objects / arrays (JSON) or mappings / sequences (YAML). No file the project reads
    // nests deeper than about 6; a hostile 100,000-deep value overflowed the stack of every
    // recursive walk, dump() and destructor.
    int maxDepth = input::kDefaultMaxDepth;
    // YAML only: values and scalar text once aliases (*name) are expanded. An alias of an alias of
    // a list (a "billion laughs" file) expands without bound: 430 bytes to gigabytes. JSON has no
    // aliases, so its document is bounded by maxBytes already.
    size_t maxValues = input::kDefaultMaxValues;
    size_t maxTextBytes = input::kDefaultMaxTextBytes;
    // The same key twice in one object / mapping is an error (nlohmann and yaml-cpp would keep one
    // or both silently). YAML configs keep the last value with a warning, as PyYAML does.
    bool rejectDuplicateKeys = false;
    // What the text is, for messages. JSON: a noun ("header" gives "header is not valid JSON: ...",
    // "header nested deeper than 64 levels"). YAML: a noun with its article ("a job file" gives
    // "... (the limit for a job file)"). Empty: the messages speak of JSON / YAML only; the file is
    // in the error's context either way.
    std::string subject;
};

} // namespace accel
