// The multi-node cluster form's engine: one description of the whole cluster (hosts, processes
// per host, main host, port, plus a base config for the training settings) becomes one
// Accelerate config per node (node-<rank>.yaml), linted before anything is written: duplicate
// hosts, ranks and totals, processes per host against the devices a host is known to have, the
// port (free on this machine when the main host is this machine), and the main host's address
// among this machine's interface addresses.
#pragma once

#include "core/common/distributeddefaults.h"

#include "core/common/result.h"
#include "core/config/clusterconfig.h"
#include "core/config/diagnostic.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace accel::config {

struct ClusterHost {
    std::string name;           // host name or address, as typed
    std::optional<int> devices; // processes it can run (GPUs, CPU sockets, ...) when known
};

struct ClusterPlanInput {
    std::vector<ClusterHost> hosts; // machine_rank = index
    int processesPerHost = 1;
    std::string mainHost; // one of hosts[].name
    int port = kDefaultMainProcessPort;
    ClusterConfig base; // distributed type, mixed precision, ... shared by every node
};

// What the planner knows about the machine it runs on. localMachine() probes it (core/hardware's
// network probe, a bind() for the port); tests describe one by hand.
struct LocalMachine {
    std::vector<std::string> names;     // "localhost", the host name and its short form
    std::vector<std::string> addresses; // every interface's addresses ("127.0.0.1", "10.0.0.5", "::1")
    // Host name -> its addresses (getaddrinfo when empty).
    std::function<std::vector<std::string>(const std::string &)> resolve;
    // "" when the port can be bound here, else why not (not checked when empty).
    std::function<std::string(int)> portProblem;
};

LocalMachine localMachine();

struct ClusterPlan {
    std::vector<ClusterConfig> nodes; // one per host, machine_rank = index; empty on errors
    std::string mainAddress;          // main_process_ip written in every node's file
    bool mainIsLocal = false;         // the main host is this machine
    Diagnostics messages;             // errors and warnings (key: hosts, procs_per_host, main_host, port, ...)

    bool ok() const { return !hasErrors(messages); }
};

ClusterPlan planCluster(const ClusterPlanInput &input, const LocalMachine &local);

// "node-<rank>.yaml"
std::string nodeFileName(int rank);

// Writes every node's config atomically as <folder>/node-<rank>.yaml (creating the folder).
// Refuses (InvalidInput, nothing written) when the plan has errors. Returns the paths written.
Result<std::vector<std::string>> writeClusterPlan(const ClusterPlan &plan, const std::string &folder);

// Splits "a, b,,c" into {"a","b","c"}.
std::vector<std::string> splitHostList(const std::string &text);

} // namespace accel::config
