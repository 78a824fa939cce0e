// How the plan's readers see the process environment: a getenv-like lookup that returns null for
// an unset variable, so the CLI and tests can pass the variables `accel launch` would export
// without setting them in their own environment.
#pragma once

#include <functional>

namespace accel::runtime {

using EnvLookup = std::function<const char *(const char *)>;

} // namespace accel::runtime
