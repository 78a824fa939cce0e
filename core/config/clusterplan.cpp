// Cluster form -> one config per node, with the lint that runs before anything is written.
#include "core/config/clusterplan.h"

#include "core/common/fileutil.h"
#include "core/common/text.h"
#include "core/config/configio.h"
#include "core/config/configschema.h"
#include "core/config/validation.h"
#include "core/hardware/hardwaredetector.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace accel::config {

namespace {

using text::lower;

bool isIpLiteral(const std::string &text)
{
    unsigned char buffer[sizeof(in6_addr)];
    return inet_pton(AF_INET, text.c_str(), buffer) == 1 || inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

bool isIpv4(const std::string &text)
{
    in_addr address{};
    return inet_pton(AF_INET, text.c_str(), &address) == 1;
}

bool isLoopback(const std::string &address)
{
    return address.rfind("127.", 0) == 0 || address == "::1";
}

std::vector<std::string> resolveWithSystem(const std::string &name)
{
    std::vector<std::string> addresses;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *list = nullptr;
    if (getaddrinfo(name.c_str(), nullptr, &hints, &list) != 0)
        return addresses;
    for (addrinfo *entry = list; entry; entry = entry->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        const void *raw = entry->ai_family == AF_INET
                              ? static_cast<const void *>(&reinterpret_cast<sockaddr_in *>(entry->ai_addr)->sin_addr)
                              : static_cast<const void *>(&reinterpret_cast<sockaddr_in6 *>(entry->ai_addr)->sin6_addr);
        if (inet_ntop(entry->ai_family, raw, text, sizeof text) &&
            std::find(addresses.begin(), addresses.end(), text) == addresses.end())
            addresses.push_back(text);
    }
    freeaddrinfo(list);
    return addresses;
}

std::string bindProblem(int port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return std::string("cannot open a socket to check the port: ") + std::strerror(errno);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    std::string problem;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0)
        problem = errno == EADDRINUSE ? "port " + std::to_string(port) + " is already in use on this machine"
                                      : "cannot bind port " + std::to_string(port) + " here: " + std::strerror(errno);
    ::close(fd);
    return problem;
}

using schema::joined;

Diagnostic message(Severity severity, const std::string &key, const std::string &text)
{
    Diagnostic d;
    d.severity = severity;
    d.key = key;
    d.message = text;
    return d;
}

bool canRunOnSeveralMachines(const ClusterConfig &config)
{
    if (config.isSageMaker())
        return false;
    return config.distributedType != DistributedType::No && config.distributedType != DistributedType::Xla;
}

} // namespace

LocalMachine localMachine()
{
    LocalMachine local;
    local.names.push_back("localhost");
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0 && name[0]) {
        const std::string full = name;
        local.names.push_back(full);
        const auto dot = full.find('.');
        if (dot != std::string::npos && dot > 0)
            local.names.push_back(full.substr(0, dot));
    }
    for (const hardware::NetworkInterface &interface : hardware::detectNetwork())
        for (const hardware::InterfaceAddress &address : interface.addresses)
            local.addresses.push_back(address.address);
    local.portProblem = bindProblem;
    return local;
}

std::string nodeFileName(int rank)
{
    return "node-" + std::to_string(rank) + ".yaml";
}

std::vector<std::string> splitHostList(const std::string &text)
{
    return accel::text::splitTrimmed(text, ",\n");
}

ClusterPlan planCluster(const ClusterPlanInput &input, const LocalMachine &local)
{
    ClusterPlan plan;
    auto error = [&](const std::string &key, const std::string &text) {
        plan.messages.push_back(message(Severity::Error, key, text));
    };
    auto warning = [&](const std::string &key, const std::string &text) {
        plan.messages.push_back(message(Severity::Warning, key, text));
    };

    std::vector<std::string> names;
    if (input.hosts.empty())
        error("hosts", "at least one host is required");
    for (size_t i = 0; i < input.hosts.size(); ++i) {
        const std::string &name = input.hosts[i].name;
        if (name.empty()) {
            error("hosts", "host " + std::to_string(i + 1) + " has no name or address");
            continue;
        }
        for (size_t j = 0; j < i; ++j)
            if (lower(input.hosts[j].name) == lower(name))
                error("hosts", "host '" + name + "' is listed twice (positions " + std::to_string(j + 1) + " and " +
                                   std::to_string(i + 1) + "); each node needs its own host");
        names.push_back(name);
    }
    if (input.processesPerHost < 1)
        error("procs_per_host", "expected at least 1 process per host; got " + std::to_string(input.processesPerHost));
    for (const ClusterHost &host : input.hosts)
        if (host.devices && input.processesPerHost > *host.devices)
            error("procs_per_host", "host '" + host.name + "' has " + std::to_string(*host.devices) +
                                        " device(s) but " + std::to_string(input.processesPerHost) +
                                        " processes per host were asked");
    if (input.port < 1 || input.port > 65535)
        error("port", "expected a port from 1 to 65535; got " + std::to_string(input.port));
    if (!canRunOnSeveralMachines(input.base))
        error("distributed_type",
              std::string("the base config's distributed_type ") +
                  (input.base.isSageMaker() ? "(SageMaker)" : toString(input.base.distributedType)) +
                  " cannot run on a cluster; use MULTI_CPU, MULTI_GPU (or another MULTI_ type), "
                  "DEEPSPEED, FSDP or MEGATRON_LM");

    // The main host and the address every node dials.
    auto mainIt = std::find_if(input.hosts.begin(), input.hosts.end(),
                               [&](const ClusterHost &host) { return lower(host.name) == lower(input.mainHost); });
    if (input.mainHost.empty() || mainIt == input.hosts.end()) {
        error("main_host", "'" + input.mainHost + "' is not one of the hosts (" + joined(names) + ")");
    } else {
        const std::string &main = input.mainHost;
        const bool literal = isIpLiteral(main);
        auto inList = [](const std::vector<std::string> &list, const std::string &item) {
            return std::any_of(list.begin(), list.end(), [&](const std::string &x) { return lower(x) == lower(item); });
        };
        plan.mainIsLocal = inList(local.names, main) || (literal && inList(local.addresses, main));
        std::vector<std::string> resolved;
        if (literal)
            resolved = {main};
        else
            resolved = local.resolve ? local.resolve(main) : resolveWithSystem(main);
        if (plan.mainIsLocal) {
            std::vector<std::string> matching;
            for (const std::string &address : resolved)
                if (inList(local.addresses, address))
                    matching.push_back(address);
            if (resolved.empty())
                error("main_host", "'" + main + "' does not resolve to an address on this machine");
            else if (matching.empty())
                error("main_host", "'" + main + "' resolves to " + joined(resolved) +
                                       ", which is none of this machine's interface addresses (" +
                                       joined(local.addresses) + ")");
            else
                plan.mainAddress = matching.front();
            // An IPv4 address reads best in the file; keep the first matching one.
            for (const std::string &address : matching)
                if (isIpv4(address)) {
                    plan.mainAddress = address;
                    break;
                }
        } else if (resolved.empty()) {
            plan.mainAddress = main;
            warning("main_host", "'" + main + "' does not resolve here; the nodes will use the name as given");
        } else {
            plan.mainAddress = resolved.front();
            for (const std::string &address : resolved)
                if (isIpv4(address)) {
                    plan.mainAddress = address;
                    break;
                }
        }
        if (!plan.mainAddress.empty() && isLoopback(plan.mainAddress) && input.hosts.size() > 1)
            error("main_host", "the main host's address " + plan.mainAddress +
                                   " is a loopback address; the other nodes cannot reach it");
        if (input.port >= 1 && input.port <= 65535) {
            if (!plan.mainIsLocal)
                warning("port", "port " + std::to_string(input.port) + " will be checked on " + main +
                                    " at launch (the main host is not this machine)");
            else if (local.portProblem) {
                const std::string problem = local.portProblem(input.port);
                if (!problem.empty())
                    error("port", problem);
            }
        }
    }
    if (!plan.ok())
        return plan;

    // One config per node; ranks and totals checked by the same rules as any config file.
    const auto machines = static_cast<std::int64_t>(input.hosts.size());
    for (std::int64_t rank = 0; rank < machines; ++rank) {
        ClusterConfig node = input.base;
        node.source = {};
        node.numMachines = machines;
        node.machineRank = rank;
        node.numProcesses = machines * input.processesPerHost;
        node.mainProcessIp = plan.mainAddress;
        node.mainProcessPort = input.port;
        if (!node.sameNetwork)
            node.sameNetwork = true;
        if (!node.rdzvBackend)
            node.rdzvBackend = "static";
        applyDefaults(node);
        for (Diagnostic d : validate(node)) {
            if (d.severity != Severity::Error)
                continue;
            d.file = nodeFileName(static_cast<int>(rank));
            plan.messages.push_back(d);
        }
        plan.nodes.push_back(std::move(node));
    }
    if (!plan.ok())
        plan.nodes.clear();
    return plan;
}

Result<std::vector<std::string>> writeClusterPlan(const ClusterPlan &plan, const std::string &folder)
{
    if (!plan.ok() || plan.nodes.empty()) {
        size_t errors = 0;
        std::string first;
        for (const Diagnostic &d : plan.messages)
            if (d.severity == Severity::Error && errors++ == 0)
                first = d.toString();
        return makeError(ErrorCode::InvalidInput,
                         errors
                             ? "the cluster plan has " + std::to_string(errors) + " error(s), nothing written: " + first
                             : std::string("the cluster plan has no nodes, nothing written"),
                         folder);
    }
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec)
        return makeError(ErrorCode::Io, "cannot create the folder: " + ec.message(), folder);
    std::vector<std::string> written;
    for (size_t rank = 0; rank < plan.nodes.size(); ++rank) {
        const std::string path = (std::filesystem::path(folder) / nodeFileName(static_cast<int>(rank))).string();
        if (auto saved = fileutil::writeFileAtomic(path, serializeConfig(plan.nodes[rank], ConfigFormat::Yaml)); !saved)
            return tl::make_unexpected(saved.error());
        written.push_back(path);
    }
    return written;
}

} // namespace accel::config
