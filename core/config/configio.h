// Reading and writing Accelerate config files exactly as Accelerate does: YAML (PyYAML safe_dump
// style: block style, keys sorted, 'no' quoted) or JSON (2-space indent, sorted keys, trailing
// newline), chosen by the file extension. A file Accelerate wrote comes back byte-identical after
// loadConfigFile() + saveConfigFile().
#pragma once

#include "core/common/result.h"
#include "core/config/clusterconfig.h"
#include "core/config/configvalue.h"
#include "core/config/diagnostic.h"

#include <string>

namespace accel::config {

enum class ConfigFormat { Yaml, Json };

// ".json" (case-sensitive, like Accelerate) -> Json, anything else -> Yaml.
ConfigFormat formatForPath(const std::string &path);

// $HF_HOME/accelerate when HF_HOME is set and not empty, else
// ${XDG_CACHE_HOME:-~/.cache}/huggingface/accelerate ("~" expanded).
std::string defaultCacheDir();
// <defaultCacheDir()>/default_config.yaml
std::string defaultConfigPath();

// Parses a config. Applies Accelerate's load fix-ups (missing compute_environment -> LOCAL_MACHINE,
// legacy fp16 -> mixed_precision, top-level dynamo_backend -> dynamo_config, ...) and then
// applyDefaults(). Strict: unknown keys, wrong types and bad enum values are errors. Every problem
// found (errors and warnings, with line numbers) is appended to `diagnostics` when given; the
// returned Error (InvalidInput) carries the first error and how many more there were.
// A YAML file may hold JSON text (what `accelerate config default` writes). Text longer than
// kMaxConfigBytes is refused before parsing.
constexpr size_t kMaxConfigBytes = size_t(1) << 20;
Result<ClusterConfig> parseConfig(const std::string &text, ConfigFormat format, const std::string &fileName,
                                  Diagnostics *diagnostics = nullptr);
// Reads `path` (NotFound / Io errors name it) and parses it with the format of its extension.
Result<ClusterConfig> loadConfigFile(const std::string &path, Diagnostics *diagnostics = nullptr);

// The dict Accelerate's to_dict() gives for this config (what serializeConfig writes), as a tree:
// for code that walks keys generically (the launcher's flag merging).
ConfigValue toDocument(const ClusterConfig &config);

// The text Accelerate would write for this config: null top-level keys and empty blocks dropped.
std::string serializeConfig(const ClusterConfig &config, ConfigFormat format);
// Writes atomically in the format of the extension, creating missing parent folders.
Result<void> saveConfigFile(const ClusterConfig &config, const std::string &path);

} // namespace accel::config
