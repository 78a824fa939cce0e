// The stable JSON form of a HardwareReport ({"schema": "accel.env", "version": 1, ...}),
// documented in docs/env-json.md. `accel env --json` writes it; the studio reads other hosts'
// reports back with reportFromJson.
#pragma once

#include "core/common/result.h"
#include "core/hardware/hardwarereport.h"

#include <string>

namespace accel::hardware {

constexpr const char *EnvSchema = "accel.env";
constexpr int EnvSchemaVersion = 1;

// Pretty-printed with `indent` spaces (-1: one line), keys in a fixed order, "schema" and
// "version" first, trailing newline.
std::string reportToJson(const HardwareReport &report, int indent = 2);

// Accepts what reportToJson writes; absent keys keep their defaults (older writers), keys of the
// wrong type are errors that name the key. Rejects another schema or a newer version.
Result<HardwareReport> reportFromJson(const std::string &text);

} // namespace accel::hardware
