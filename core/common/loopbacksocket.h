// A listening TCP socket on the loopback address: the rendezvous store of a single-host job
// listens there only (c10d's TCPStore server would bind every interface by itself). The launcher
// opens it to hold the port from its choice until rank 0's store takes it over; rank 0 opens it
// itself when it was given none.
#pragma once

#include <cstdint>
#include <string>

namespace accel {

// The variable through which the launcher hands rank 0 the listening socket it holds on
// MASTER_PORT (a descriptor number inherited across exec).
inline constexpr const char *kStoreListenFdVariable = "ACCEL_STORE_LISTEN_FD";

// "localhost", 127.x.y.z or ::1: a MASTER_ADDR every rank reaches through loopback.
bool isLoopbackAddress(const std::string &address);

// Binds 127.0.0.1 (or ::1 when `ipv6`) on `port` (0: a free port the kernel chooses) with
// SO_REUSEADDR, as c10d's store does, and listens. Returns the descriptor (close-on-exec), or -1
// with errno set.
int listenOnLoopback(uint16_t port, bool ipv6 = false);

// The local port of a bound socket, or -1 when `fd` is not a listening TCP socket on a loopback
// address.
int loopbackListeningPort(int fd);

} // namespace accel
