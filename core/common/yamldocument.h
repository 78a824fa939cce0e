// Parsing YAML that comes from outside (Accelerate configs, job files) through yaml-cpp, the one
// place that calls it: the text must be UTF-8 without control characters (what PyYAML's reader
// refuses), one document, and within the limits of InputLimits (size; nesting; values and text
// once aliases are expanded). yaml-cpp 0.7's own faults are refused before they bite: a ',' that
// cannot start a value makes it start empty documents without end, and a quote never closed
// swallows the rest of the file when it ends with a line break. The node returned may be walked
// recursively, aliases and all: it expands to no more than the limits allow.
#pragma once

#include "core/common/inputlimits.h"
#include "core/common/result.h"

// yaml-cpp 0.7's node headers trip GCC 12's dangling-pointer analysis (a false positive in their
// iterator code); silence it for them only.
#pragma GCC diagnostic push
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop

#include <string>

namespace accel::yamlutil {

// Errors are InvalidInput with "source: line N" (or `source`) as their context: "invalid YAML:
// byte 0xF6 in a.b is not valid UTF-8 (YAML is UTF-8 text)", "invalid YAML: the file holds 2 YAML
// documents (the second from line 3); a job file is one", "more than 100000 values once YAML
// aliases (*name) are expanded (the limit for a job file)", "nested deeper than 64 levels (...)".
// An empty document is a Null node.
Result<YAML::Node> parseYaml(const std::string &text, const std::string &source, const InputLimits &limits);

// Reads a regular file of at most limits.maxBytes (fileutil::readFile) and parses it.
Result<YAML::Node> readYamlFile(const std::string &path, const InputLimits &limits);

} // namespace accel::yamlutil
