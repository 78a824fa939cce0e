// The sections of the report that come from the Linux kernel: /etc/os-release, uname, /proc,
// /sys, statvfs and getifaddrs. Parsing lives in procparsers.cpp; this file only reads.
#include "core/hardware/hardwaredetector.h"
#include "core/hardware/procparsers.h"

#include "core/common/fileutil.h"
#include "core/common/huggingfacehome.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gnu/libc-version.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

namespace accel::hardware {

namespace {

std::string readText(const std::string &root, const std::string &path)
{
    auto content = fileutil::readFile(root + path);
    return content ? *content : std::string();
}

int bitCount(unsigned int value)
{
    int count = 0;
    for (; value; value &= value - 1)
        ++count;
    return count;
}

int prefixLength(const sockaddr *mask)
{
    if (!mask)
        return 0;
    int bits = 0;
    if (mask->sa_family == AF_INET) {
        bits = bitCount(ntohl(reinterpret_cast<const sockaddr_in *>(mask)->sin_addr.s_addr));
    } else if (mask->sa_family == AF_INET6) {
        const auto *bytes = reinterpret_cast<const sockaddr_in6 *>(mask)->sin6_addr.s6_addr;
        for (int i = 0; i < 16; ++i)
            bits += bitCount(bytes[i]);
    }
    return bits;
}

} // namespace

bool CpuInfo::hasFlag(const std::string &flag) const
{
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

SystemInfo detectSystem(const std::string &root)
{
    SystemInfo system;
    auto osRelease = parseOsRelease(readText(root, "/etc/os-release"));
    if (osRelease.empty())
        osRelease = parseOsRelease(readText(root, "/usr/lib/os-release"));
    system.osName = osRelease.count("PRETTY_NAME") ? osRelease["PRETTY_NAME"] : osRelease["NAME"];
    system.osId = osRelease["ID"];
    system.osVersionId = osRelease["VERSION_ID"];
    utsname names{};
    if (::uname(&names) == 0) {
        system.kernelName = names.sysname;
        system.kernelRelease = names.release;
        system.kernelVersion = names.version;
        system.machine = names.machine;
    }
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0)
        system.hostname = host;
    system.libcVersion = gnu_get_libc_version();
    system.platform =
        system.kernelName + "-" + system.kernelRelease + "-" + system.machine + "-with-glibc" + system.libcVersion;
    return system;
}

CpuInfo detectCpu(const std::string &root)
{
    CpuInfo cpu = parseCpuInfo(readText(root, "/proc/cpuinfo"));
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0)
        cpu.availableCpus = CPU_COUNT(&set);
    if (cpu.logicalCpus == 0) {
        const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
        cpu.logicalCpus = online > 0 ? static_cast<int>(online) : cpu.availableCpus;
        cpu.physicalCores = cpu.logicalCpus;
        cpu.sockets = 1;
    }
    return cpu;
}

std::vector<NumaNode> detectNumaNodes(const std::string &root)
{
    std::vector<NumaNode> nodes;
    const std::string base = root + "/sys/devices/system/node";
    DIR *folder = ::opendir(base.c_str());
    if (!folder)
        return nodes;
    while (const dirent *entry = ::readdir(folder)) {
        const std::string name = entry->d_name;
        if (name.size() <= 4 || name.compare(0, 4, "node") != 0 ||
            !std::all_of(name.begin() + 4, name.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
            continue;
        NumaNode node;
        node.id = std::atoi(name.c_str() + 4);
        const std::string path = "/sys/devices/system/node/" + name;
        parseCpuList(readText(root, path + "/cpulist"), node.cpus);
        node.memoryTotalBytes = parseNodeMemTotal(readText(root, path + "/meminfo"));
        nodes.push_back(std::move(node));
    }
    ::closedir(folder);
    std::sort(nodes.begin(), nodes.end(), [](const NumaNode &a, const NumaNode &b) { return a.id < b.id; });
    return nodes;
}

MemoryInfo detectMemory(const std::string &root)
{
    return parseMemInfo(readText(root, "/proc/meminfo"));
}

int driverGpuCount()
{
    int count = 0;
    if (DIR *dir = ::opendir("/proc/driver/nvidia/gpus")) {
        while (dirent *entry = ::readdir(dir)) {
            if (entry->d_name[0] != '.')
                ++count;
        }
        ::closedir(dir);
    }
    return count;
}

std::vector<std::string> defaultDiskPaths()
{
    std::vector<std::string> paths;
    char cwd[4096] = {};
    if (::getcwd(cwd, sizeof cwd - 1))
        paths.emplace_back(cwd);
    const std::string cache = huggingFaceHome();
    if (std::find(paths.begin(), paths.end(), cache) == paths.end())
        paths.push_back(cache);
    return paths;
}

std::vector<DiskInfo> detectDisks(const std::vector<std::string> &paths)
{
    std::vector<DiskInfo> disks;
    for (const std::string &path : paths) {
        DiskInfo disk;
        disk.path = path;
        // A folder that does not exist yet (an empty cache) lives on its nearest existing parent.
        std::string probe = path.empty() ? "." : path;
        struct statvfs st {};
        while (::statvfs(probe.c_str(), &st) != 0) {
            const auto slash = probe.find_last_of('/');
            if (errno != ENOENT || slash == std::string::npos || probe == "/") {
                disk.error = "statvfs failed: " + std::string(std::strerror(errno));
                break;
            }
            probe = slash == 0 ? "/" : probe.substr(0, slash);
        }
        if (disk.error.empty()) {
            disk.totalBytes = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
            disk.freeBytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
        }
        disks.push_back(std::move(disk));
    }
    return disks;
}

std::vector<NetworkInterface> detectNetwork(const std::string &root)
{
    std::map<std::string, NetworkInterface> byName;
    ifaddrs *list = nullptr;
    if (::getifaddrs(&list) == 0) {
        for (const ifaddrs *entry = list; entry; entry = entry->ifa_next) {
            if (!entry->ifa_name)
                continue;
            NetworkInterface &interface = byName[entry->ifa_name];
            interface.name = entry->ifa_name;
            interface.up = (entry->ifa_flags & IFF_UP) != 0;
            interface.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0;
            if (!entry->ifa_addr)
                continue;
            char text[INET6_ADDRSTRLEN] = {};
            InterfaceAddress address;
            if (entry->ifa_addr->sa_family == AF_INET) {
                ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(entry->ifa_addr)->sin_addr, text,
                            sizeof text);
                address.family = "ipv4";
            } else if (entry->ifa_addr->sa_family == AF_INET6) {
                ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(entry->ifa_addr)->sin6_addr, text,
                            sizeof text);
                address.family = "ipv6";
            } else {
                continue;
            }
            address.address = text;
            address.prefixLength = prefixLength(entry->ifa_netmask);
            interface.addresses.push_back(std::move(address));
        }
        ::freeifaddrs(list);
    }
    const auto ipv4Default = parseIpv4DefaultRoutes(readText(root, "/proc/net/route"));
    const auto ipv6Default = parseIpv6DefaultRoutes(readText(root, "/proc/net/ipv6_route"));
    std::vector<NetworkInterface> interfaces;
    for (auto &[name, interface] : byName) {
        const std::string sys = "/sys/class/net/" + name;
        interface.mtu = std::atoi(trim(readText(root, sys + "/mtu")).c_str());
        const int speed = std::atoi(trim(readText(root, sys + "/speed")).c_str());
        interface.speedMbps = speed > 0 ? speed : 0;
        interface.defaultRouteIpv4 = ipv4Default.count(name) > 0;
        interface.defaultRouteIpv6 = ipv6Default.count(name) > 0;
        interfaces.push_back(std::move(interface));
    }
    return interfaces;
}

} // namespace accel::hardware
