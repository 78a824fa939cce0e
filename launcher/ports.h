// Rendezvous ports: rank 0 hosts the c10d TCPStore on MASTER_PORT. These helpers pick a free
// port for main_process_port 0, tell whether a port is taken, and find which process holds it
// (/proc/net/tcp{,6} socket inode → /proc/<pid>/fd) so the error names the culprit.
#pragma once

#include "core/common/result.h"

#include <optional>
#include <string>

namespace accel::launcher {

struct PortHolder {
    int pid = 0;
    std::string command; // /proc/<pid>/cmdline, arguments joined by spaces
};

// True when binding 0.0.0.0:port fails because the address is in use.
bool isPortInUse(int port);

// A port the kernel reports free right now (bind to port 0).
Result<int> pickFreePort();

// The listening process of a TCP port, when /proc lets us see it (other users' fds are hidden).
std::optional<PortHolder> findPortHolder(int port);

// "port 29500 is in use by pid 1234 (python3 -m http.server 29500)" or "... by another process".
std::string describeBusyPort(int port);

} // namespace accel::launcher
