#include "launcher/ports.h"

#include "core/common/loopbacksocket.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <netinet/in.h>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace accel::launcher {

bool takesHeldPort(ProgramSpec::Kind kind)
{
    return kind == ProgramSpec::Kind::Job || kind == ProgramSpec::Kind::PythonScript ||
           kind == ProgramSpec::Kind::PythonModule;
}

namespace {

int bindProbe(int port, int *boundPort)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    // Same option as c10d's TCPStore server: sockets in TIME_WAIT do not count as busy.
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    int result = 0;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0) {
        result = errno;
    } else if (boundPort) {
        socklen_t length = sizeof(address);
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
        *boundPort = ntohs(address.sin_port);
    }
    ::close(fd);
    return result;
}

// Socket inodes of listening sockets on `port` from /proc/net/tcp and tcp6.
std::set<std::string> listeningInodes(int port)
{
    std::set<std::string> inodes;
    for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line); // header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
            const size_t colon = local.rfind(':');
            if (colon == std::string::npos || state != "0A") // 0A: LISTEN
                continue;
            if (std::stoi(local.substr(colon + 1), nullptr, 16) == port && inode != "0")
                inodes.insert(inode);
        }
    }
    return inodes;
}

std::string commandLineOf(int pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!raw.empty() && raw.back() == '\0')
        raw.pop_back();
    for (char &c : raw) {
        if (c == '\0')
            c = ' ';
    }
    return raw;
}

} // namespace

bool isPortInUse(int port)
{
    return bindProbe(port, nullptr) == EADDRINUSE;
}

Result<int> pickFreePort()
{
    int port = 0;
    if (const int error = bindProbe(0, &port); error != 0 || port == 0)
        return makeError(ErrorCode::Io, std::string("cannot find a free TCP port: ") + std::strerror(error));
    return port;
}

std::optional<PortHolder> findPortHolder(int port)
{
    const std::set<std::string> inodes = listeningInodes(port);
    if (inodes.empty())
        return std::nullopt;
    DIR *proc = ::opendir("/proc");
    if (!proc)
        return std::nullopt;
    std::optional<PortHolder> holder;
    while (dirent *entry = ::readdir(proc)) {
        const int pid = std::atoi(entry->d_name);
        if (pid <= 0)
            continue;
        const std::string fdDir = "/proc/" + std::to_string(pid) + "/fd";
        DIR *fds = ::opendir(fdDir.c_str());
        if (!fds)
            continue;
        while (dirent *fd = ::readdir(fds)) {
            char target[128] = {};
            const std::string link = fdDir + "/" + fd->d_name;
            const ssize_t length = ::readlink(link.c_str(), target, sizeof(target) - 1);
            if (length <= 0)
                continue;
            const std::string text(target, static_cast<size_t>(length));
            if (text.rfind("socket:[", 0) == 0 && inodes.count(text.substr(8, text.size() - 9))) {
                holder = PortHolder{pid, commandLineOf(pid)};
                break;
            }
        }
        ::closedir(fds);
        if (holder)
            break;
    }
    ::closedir(proc);
    return holder;
}

std::string describeBusyPort(int port)
{
    std::string text = "port " + std::to_string(port) + " is in use";
    if (auto holder = findPortHolder(port)) {
        // Another program's command line, on one line: control characters escaped, length capped.
        std::string command;
        for (const char c : holder->command.substr(0, 200)) {
            if (c == '\n')
                command += "\\n";
            else if (c == '\t')
                command += "\\t";
            else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                command += '?';
            else
                command += c;
        }
        if (holder->command.size() > 200)
            command += "...";
        text += " by pid " + std::to_string(holder->pid) + " (" + command + ")";
    } else
        text += " by a process this user cannot see";
    return text;
}

PortReservation::PortReservation(PortReservation &&other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)), m_port(std::exchange(other.m_port, 0))
{}

PortReservation &PortReservation::operator=(PortReservation &&other) noexcept
{
    if (this != &other) {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = std::exchange(other.m_fd, -1);
        m_port = std::exchange(other.m_port, 0);
    }
    return *this;
}

PortReservation::~PortReservation()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

Result<PortReservation> reserveLoopbackPort(int port)
{
    const int fd = listenOnLoopback(static_cast<uint16_t>(port));
    if (fd < 0) {
        const int error = errno;
        if (error == EADDRINUSE)
            return makeError(ErrorCode::Failed, describeBusyPort(port));
        return makeError(ErrorCode::Failed,
                         "cannot listen on 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(error));
    }
    return PortReservation(fd, loopbackListeningPort(fd));
}

} // namespace accel::launcher
