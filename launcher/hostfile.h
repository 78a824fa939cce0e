// Hostfiles of `accel launch --deepspeed_hostfile FILE` (DeepSpeed's `HOST slots=N` lines) and
// `--mpirun_hostfile FILE` (Open MPI's `HOST [slots=N] [max_slots=M]`, MPICH's `HOST[:N]`), and
// DeepSpeed's inclusion / exclusion filters (`host1@host2:0,2`: whole hosts, or slots of a host,
// separated by @). The launch goes to the hosts that remain, over SSH (accel hosts launch,
// docs/remote.md). A bad line is an error naming the file and the line.
#pragma once

#include "core/common/result.h"

#include <string>
#include <vector>

namespace accel::launcher {

enum class HostfileKind { DeepSpeed, Mpi };

struct HostfileEntry {
    std::string host;
    int slots = 1;
    std::vector<int> chosen; // the slots a filter left (all of 0..slots-1 without one)
    int line = 0;            // 1-based, in the file
};

// Parses `text` (the contents of `path`, named in errors). Comments start with #; blank lines are
// skipped; a host listed twice is an error.
Result<std::vector<HostfileEntry>> parseHostfile(const std::string &text, const std::string &path, HostfileKind kind);

// Reads and parses the file.
Result<std::vector<HostfileEntry>> readHostfile(const std::string &path, HostfileKind kind);

// DeepSpeed's --include / --exclude on the parsed hosts (at most one of the two non-empty). Hosts
// and slots a filter names must be in the file. Hosts left with no slot are dropped.
Result<std::vector<HostfileEntry>> filterHosts(std::vector<HostfileEntry> hosts, const std::string &include,
                                               const std::string &exclude);

// What a launch on a hostfile's hosts amounts to: the hosts in file order (machine 0 first), and
// when --num_processes was not given, the ranks the slots left (the same number on every host).
// gpuIds is set when a filter keeps the same part of every host's slots ("0,2").
struct HostfileLaunch {
    std::vector<std::string> hosts;
    int numProcesses = 0; // 0: given on the command line
    std::string gpuIds;
    std::string note;
};

Result<HostfileLaunch> planHostfileLaunch(const std::string &path, HostfileKind kind, const std::string &include,
                                          const std::string &exclude, bool numProcessesGiven);

} // namespace accel::launcher
