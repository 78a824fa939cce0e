// What run.json must not record: the values of flags and environment variables whose names say
// they are secrets (the name holds "secret", "token", "password", "passwd" or "key", any case,
// e.g. --aws_secret_access_key, HF_TOKEN), and secrets recognised by their form whatever the name
// (--auth_header "Bearer ...", postgres://user:PASSWORD@host, hf_... tokens). They are replaced by
// "<redacted>".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace accel::rundir {

inline constexpr const char *kRedacted = "<redacted>";

bool isSecretName(std::string_view name);

// `value` with the secrets recognised by their form replaced, the rest kept:
//  - the credential after an HTTP authorization scheme, "Bearer <redacted>" or "Basic <redacted>"
//    (any case, at the start or after a space, ':' or '='; 8 characters or more);
//  - the password of a URL: "postgres://u:<redacted>@db:5432/x";
//  - tokens by their published prefixes: Hugging Face hf_, GitHub ghp_/gho_/ghu_/ghs_/ghr_/
//    github_pat_, GitLab glpat-, Slack xox?-, OpenAI sk-, AWS access key ids AKIA/ASIA, and JSON
//    web tokens (eyJ....eyJ....sig);
//  - a PEM private key: the whole value.
std::string redactValue(std::string_view value);

// "--name value", "--name=value", "-name=value" and "NAME=value" with a secret name get their value
// redacted. A flag followed by another flag (a switch) redacts nothing. Every other argument goes
// through redactValue().
std::vector<std::string> redactArguments(const std::vector<std::string> &arguments);

// An environment variable's value as run.json records it: redacted whole for a secret name, else
// through redactValue().
std::string redactEnvironmentValue(std::string_view name, std::string_view value);

} // namespace accel::rundir
