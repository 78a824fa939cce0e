// Parsing JSON that comes from outside (config.json, tokenizer.json, safetensors headers, index
// files, serve requests, --device_map): one linear pass that builds the document and refuses, with
// an error naming the source, text that is too large, nested deeper than a limit (serializing or
// destroying a hostile 100,000-deep value recursively would overflow the stack) or, when asked,
// holds the same key twice in one object. Every reader of such input goes through here.
#pragma once

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace accel::jsonutil {

// Deeper than any file the project reads legitimately (tokenizer.json, the deepest, uses about 6).
constexpr int kDefaultMaxDepth = 64;
// Whole-file inputs without a limit of their own.
constexpr uint64_t kDefaultMaxBytes = uint64_t(64) << 20;

struct JsonLimits {
    uint64_t maxBytes = kDefaultMaxBytes;
    int maxDepth = kDefaultMaxDepth;
    bool rejectDuplicateKeys = false; // nlohmann would silently keep the last value
    // What the text is, for messages: "header" gives "header is not valid JSON: ...". Empty: the
    // messages speak of "JSON" only (the source is in the error's context either way).
    std::string subject;
};

// Parses `text`; errors are InvalidInput with `source` as their context: "not valid JSON: parse
// error at line 1, column 8: ...", "JSON nested deeper than 64 levels", "duplicate key \"a\"",
// "too large: N bytes (limit M)".
Result<nlohmann::json> parseJson(std::string_view text, const std::string &source, const JsonLimits &limits = {});

// Reads a regular file of at most limits.maxBytes (fileutil::readFile) and parses it.
Result<nlohmann::json> readJsonFile(const std::string &path, const JsonLimits &limits = {});

// A value as compact JSON for an error message, cut to about `maxChars` ("..." appended).
std::string jsonExcerpt(const nlohmann::json &value, size_t maxChars = 120);

} // namespace accel::jsonutil
