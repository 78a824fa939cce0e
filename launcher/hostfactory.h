// A destination as a person writes it, turned into the Host that runs `accel` there: "local" is
// this machine (LocalHost); anything else is an SSH destination (a ~/.ssh/config alias or
// [user@]host[:port], SshHost). The CLI and the studio make every host here.
#pragma once

#include "launcher/sshhost.h"

#include <memory>

namespace accel::launcher {

// The destination that names this machine.
inline constexpr const char *kLocalDestination = "local";

bool isLocalDestination(const QString &destination);

// `options.destination` says where; the other options apply to SSH destinations only, except
// accelProgram (the accel to run; empty: this accel here, $ACCEL_REMOTE_BIN or accel on the
// host's PATH over SSH).
std::unique_ptr<Host> makeHost(const SshHostOptions &options);

} // namespace accel::launcher
