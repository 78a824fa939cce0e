#include "core/common/loopbacksocket.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace accel {

bool isLoopbackAddress(const std::string &address)
{
    return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

int listenOnLoopback(uint16_t port, bool ipv6)
{
    const int fd = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc = -1;
    if (ipv6) {
        sockaddr_in6 in{};
        in.sin6_family = AF_INET6;
        in.sin6_port = htons(port);
        in.sin6_addr = in6addr_loopback;
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&in), sizeof(in));
    } else {
        sockaddr_in in{};
        in.sin_family = AF_INET;
        in.sin_port = htons(port);
        in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = ::bind(fd, reinterpret_cast<sockaddr *>(&in), sizeof(in));
    }
    if (rc != 0 || ::listen(fd, SOMAXCONN) != 0) {
        const int saved = errno;
        ::close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int loopbackListeningPort(int fd)
{
    int listening = 0;
    socklen_t size = sizeof(listening);
    if (fd < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening)
        return -1;
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0)
        return -1;
    if (address.ss_family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(&address);
        if ((ntohl(in->sin_addr.s_addr) >> 24) != 127)
            return -1;
        return ntohs(in->sin_port);
    }
    if (address.ss_family == AF_INET6) {
        const auto *in = reinterpret_cast<const sockaddr_in6 *>(&address);
        if (std::memcmp(&in->sin6_addr, &in6addr_loopback, sizeof(in6addr_loopback)) != 0)
            return -1;
        return ntohs(in->sin6_port);
    }
    return -1;
}

} // namespace accel
