// What run.json must not record: the values of flags and environment variables whose names say
// they are secrets (the name holds "secret", "token", "password", "passwd" or "key", any case,
// e.g. --aws_secret_access_key, HF_TOKEN). They are replaced by "<redacted>".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace accel::rundir {

inline constexpr const char *kRedacted = "<redacted>";

bool isSecretName(std::string_view name);
// "--name value", "--name=value", "-name=value" and "NAME=value" with a secret name get their value
// redacted. A flag followed by another flag (a switch) redacts nothing.
std::vector<std::string> redactArguments(const std::vector<std::string> &arguments);

} // namespace accel::rundir
