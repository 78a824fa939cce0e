// Parsing JSON that comes from outside (config.json, tokenizer.json, safetensors headers, index
// files, serve requests, --device_map): one linear pass that builds the document and refuses, with
// an error naming the source, text that is too large, nested deeper than a limit (serializing or
// destroying a hostile 100,000-deep value recursively would overflow the stack) or, when asked,
// holds the same key twice in one object. Every reader of such input goes through here.
#pragma once

#include "core/common/inputlimits.h"
#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace accel::jsonutil {

// Deeper than any file the project reads legitimately (tokenizer.json, the deepest, uses about 6).
constexpr int kDefaultMaxDepth = input::kDefaultMaxDepth;
// Whole-file inputs without a limit of their own.
constexpr uint64_t kDefaultMaxBytes = input::kDefaultMaxBytes;

// JSON readers take the limits every input guard takes (maxValues and maxTextBytes are YAML's).
using JsonLimits = InputLimits;

// Parses `text`; errors are InvalidInput with `source` as their context: "not valid JSON: parse
// error at line 1, column 8: ...", "JSON nested deeper than 64 levels", "duplicate key \"a\"",
// "too large: N bytes (limit M)".
Result<nlohmann::json> parseJson(std::string_view text, const std::string &source, const JsonLimits &limits = {});

// The same into an ordered_json, for documents whose key order means something (an offload folder's
// index.json is written back in its order).
Result<nlohmann::ordered_json> parseOrderedJson(std::string_view text, const std::string &source,
                                                const JsonLimits &limits = {});

// Reads a regular file of at most limits.maxBytes (fileutil::readFile) and parses it.
Result<nlohmann::json> readJsonFile(const std::string &path, const JsonLimits &limits = {});

// A JSON integer as int64: nothing for a float (2.0 included), a string or a number past the int64
// range (18446744073709551615 stays out instead of wrapping to -1, 4294967299 is not 3).
std::optional<int64_t> integerValue(const nlohmann::json &value);
// The same, and nothing below `minimum` either (counts, sizes, steps: minimum 0).
std::optional<int64_t> integerValue(const nlohmann::json &value, int64_t minimum);

// A value as compact JSON for an error message, cut to about `maxChars` ("..." appended).
std::string jsonExcerpt(const nlohmann::json &value, size_t maxChars = 120);

} // namespace accel::jsonutil
