// Problems found while reading or checking a config file, each one a person can act on:
// "config.yaml: line 12: fsdp_sharding_strategy: expected one of FULL_SHARD, ...; got FULL".
#pragma once

#include <string>
#include <vector>

namespace accel::config {

enum class Severity { Error, Warning };

struct Diagnostic {
    Severity severity = Severity::Error;
    std::string file;    // as given to the parser ("" when the config did not come from a file)
    int line = 0;        // 1-based; 0 when unknown
    std::string key;     // key path, "fsdp_config.fsdp_version"; "" for the whole file
    std::string message; // "expected one of ...; got FULL"

    // "<file>: line <n>: <last key segment>: <message>", leaving out the parts that are unknown.
    std::string toString() const;
};

using Diagnostics = std::vector<Diagnostic>;

bool hasErrors(const Diagnostics &diagnostics);

} // namespace accel::config
