// Rendezvous ports: rank 0 hosts the c10d TCPStore on MASTER_PORT. These helpers pick a free
// port for main_process_port 0, tell whether a port is taken, and find which process holds it
// (/proc/net/tcp{,6} socket inode → /proc/<pid>/fd) so the error names the culprit.
#pragma once

#include "core/common/result.h"
#include "launcher/launchsettings.h"

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

// Programs whose rank 0 takes over the held port (PortReservation): accel-worker jobs, and Python
// scripts and modules through the rendezvous hook (storehook.h). Other programs bind it themselves.
bool takesHeldPort(ProgramSpec::Kind kind);

// A listening socket on 127.0.0.1 held on a port from the launcher's choice of MASTER_PORT until
// rank 0's store takes it over (inherited, named by ACCEL_STORE_LISTEN_FD): two launches started
// together cannot both choose the same port while their ranks load. Closed on destruction.
class PortReservation {
public:
    PortReservation() = default;
    PortReservation(int fd, int port) : m_fd(fd), m_port(port) {}
    PortReservation(PortReservation &&other) noexcept;
    PortReservation &operator=(PortReservation &&other) noexcept;
    PortReservation(const PortReservation &) = delete;
    PortReservation &operator=(const PortReservation &) = delete;
    ~PortReservation();
    int fd() const { return m_fd; }
    int port() const { return m_port; }

private:
    int m_fd = -1;
    int m_port = 0;
};

// Listens on 127.0.0.1:port (0: a free port the kernel chooses). A busy port is an error that says
// who holds it (describeBusyPort).
Result<PortReservation> reserveLoopbackPort(int port);

// "port 29500 is in use by pid 1234 (python3 -m http.server 29500)" or "... by another process".
std::string describeBusyPort(int port);

} // namespace accel::launcher
