#include "launcher/hostfile.h"

#include "launcher/launchflags.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace accel::launcher {

namespace {

std::vector<std::string> split(const std::string &text, char separator)
{
    std::vector<std::string> parts;
    std::string part;
    std::istringstream stream(text);
    while (std::getline(stream, part, separator))
        parts.push_back(part);
    if (!text.empty() && text.back() == separator)
        parts.emplace_back();
    return parts;
}

} // namespace

Result<std::vector<HostfileEntry>> parseHostfile(const std::string &text, const std::string &path, HostfileKind kind)
{
    std::vector<HostfileEntry> hosts;
    std::istringstream lines(text);
    std::string line;
    int number = 0;
    const std::string expected = kind == HostfileKind::DeepSpeed
                                     ? "expected 'HOST slots=N' (DeepSpeed's hostfile)"
                                     : "expected 'HOST [slots=N] [max_slots=M]' (Open MPI) or 'HOST[:N]' (MPICH)";
    while (std::getline(lines, line)) {
        ++number;
        const std::string where = path + ": line " + std::to_string(number);
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        std::vector<std::string> fields;
        for (std::string word; words >> word;)
            fields.push_back(word);
        if (fields.empty())
            continue;
        HostfileEntry entry;
        entry.line = number;
        entry.host = fields[0];
        bool slotsGiven = false;
        if (kind == HostfileKind::Mpi && fields.size() == 1 && entry.host.find(':') != std::string::npos &&
            entry.host.find('@') == std::string::npos) {
            const size_t colon = entry.host.rfind(':');
            auto count = wholeNumberAtLeast(entry.host.substr(colon + 1), 1);
            if (!count)
                return makeError(ErrorCode::InvalidInput,
                                 "'" + line + "': the process count after ':' must be a number above 0", where);
            entry.slots = *count;
            entry.host = entry.host.substr(0, colon);
            slotsGiven = true;
        }
        for (size_t i = 1; i < fields.size(); ++i) {
            const size_t equals = fields[i].find('=');
            const std::string key = fields[i].substr(0, equals);
            const std::string value = equals == std::string::npos ? std::string() : fields[i].substr(equals + 1);
            if (key == "slots" && !slotsGiven) {
                auto count = wholeNumberAtLeast(value, 1);
                if (!count)
                    return makeError(ErrorCode::InvalidInput,
                                     "'" + line + "': slots must be a number above 0, got '" + value + "'", where);
                entry.slots = *count;
                slotsGiven = true;
            } else if (kind == HostfileKind::Mpi && key == "max_slots" && wholeNumberAtLeast(value, 1).has_value()) {
                // The most ranks Open MPI may oversubscribe onto the host: accel starts slots ranks.
            } else {
                return makeError(ErrorCode::InvalidInput, "'" + line + "': " + expected, where);
            }
        }
        if (kind == HostfileKind::DeepSpeed && !slotsGiven)
            return makeError(ErrorCode::InvalidInput, "'" + line + "': " + expected, where);
        for (const HostfileEntry &earlier : hosts) {
            if (earlier.host == entry.host)
                return makeError(ErrorCode::InvalidInput,
                                 "host " + entry.host + " is listed again (first on line " +
                                     std::to_string(earlier.line) + ")",
                                 where);
        }
        for (int slot = 0; slot < entry.slots; ++slot)
            entry.chosen.push_back(slot);
        hosts.push_back(entry);
    }
    if (hosts.empty())
        return makeError(ErrorCode::InvalidInput, "lists no host", path);
    return hosts;
}

Result<std::vector<HostfileEntry>> readHostfile(const std::string &path, HostfileKind kind)
{
    std::ifstream file(path);
    if (!file)
        return makeError(ErrorCode::InvalidInput, "cannot read the hostfile", path);
    std::ostringstream text;
    text << file.rdbuf();
    return parseHostfile(text.str(), path, kind);
}

Result<std::vector<HostfileEntry>> filterHosts(std::vector<HostfileEntry> hosts, const std::string &include,
                                               const std::string &exclude)
{
    if (!include.empty() && !exclude.empty())
        return makeError(ErrorCode::InvalidInput,
                         "deepspeed_inclusion_filter and deepspeed_exclusion_filter are mutually exclusive (as in "
                         "DeepSpeed's runner); give one");
    if (include.empty() && exclude.empty())
        return hosts;
    const bool including = !include.empty();
    const std::string name = including ? "deepspeed_inclusion_filter" : "deepspeed_exclusion_filter";
    const std::string &filter = including ? include : exclude;
    std::map<std::string, std::vector<int>> named; // host -> slots named (empty: the whole host)
    for (const std::string &part : split(filter, '@')) {
        const size_t colon = part.find(':');
        const std::string host = part.substr(0, colon);
        auto entry = std::find_if(hosts.begin(), hosts.end(), [&](const HostfileEntry &e) { return e.host == host; });
        if (host.empty())
            return makeError(ErrorCode::InvalidInput, "'" + filter + "': an empty host between '@'", name);
        if (entry == hosts.end())
            return makeError(ErrorCode::InvalidInput, "host " + host + " is not in the hostfile", name);
        std::vector<int> &slots = named[host];
        if (colon == std::string::npos)
            continue;
        for (const std::string &text : split(part.substr(colon + 1), ',')) {
            auto slot = wholeNumberAtLeast(text, 0);
            if (!slot || *slot >= entry->slots)
                return makeError(ErrorCode::InvalidInput,
                                 "host " + host + ": slot '" + text + "' is not one of its slots 0-" +
                                     std::to_string(entry->slots - 1),
                                 name);
            slots.push_back(*slot);
        }
    }
    std::vector<HostfileEntry> kept;
    for (HostfileEntry &entry : hosts) {
        auto it = named.find(entry.host);
        std::vector<int> chosen;
        for (int slot : entry.chosen) {
            const bool mentioned =
                it != named.end() &&
                (it->second.empty() || std::find(it->second.begin(), it->second.end(), slot) != it->second.end());
            if (mentioned == including)
                chosen.push_back(slot);
        }
        entry.chosen = chosen;
        if (!entry.chosen.empty())
            kept.push_back(entry);
    }
    if (kept.empty())
        return makeError(ErrorCode::InvalidInput, "'" + filter + "' leaves no host to launch on", name);
    return kept;
}

Result<HostfileLaunch> planHostfileLaunch(const std::string &path, HostfileKind kind, const std::string &include,
                                          const std::string &exclude, bool numProcessesGiven)
{
    const std::string flag = kind == HostfileKind::DeepSpeed ? "deepspeed_hostfile" : "mpirun_hostfile";
    if (kind == HostfileKind::Mpi && (!include.empty() || !exclude.empty()))
        return makeError(ErrorCode::InvalidInput,
                         "deepspeed_inclusion_filter / deepspeed_exclusion_filter apply to --deepspeed_hostfile, not "
                         "--mpirun_hostfile",
                         flag);
    auto listed = readHostfile(path, kind);
    if (!listed)
        return tl::unexpected(listed.error());
    const size_t inFile = listed->size();
    auto kept = filterHosts(*listed, include, exclude);
    if (!kept)
        return tl::unexpected(kept.error());
    HostfileLaunch launch;
    std::string counts;
    bool sameCount = true;
    bool sameSlots = true;
    bool allSlots = true;
    for (const HostfileEntry &entry : *kept) {
        launch.hosts.push_back(entry.host);
        counts += (counts.empty() ? "" : ", ") + entry.host + ": " + std::to_string(entry.chosen.size());
        sameCount = sameCount && entry.chosen.size() == kept->front().chosen.size();
        sameSlots = sameSlots && entry.chosen == kept->front().chosen;
        allSlots = allSlots && int(entry.chosen.size()) == entry.slots;
    }
    if (!allSlots) {
        if (!sameSlots)
            return makeError(ErrorCode::InvalidInput,
                             "the filter keeps different slots on different hosts; accel launch starts the same ranks "
                             "(one gpu_ids list) on every machine",
                             include.empty() ? "deepspeed_exclusion_filter" : "deepspeed_inclusion_filter");
        for (int slot : kept->front().chosen)
            launch.gpuIds += (launch.gpuIds.empty() ? "" : ",") + std::to_string(slot);
    }
    if (!numProcessesGiven) {
        if (!sameCount)
            return makeError(ErrorCode::InvalidInput,
                             "the hosts have different numbers of slots (" + counts +
                                 "); accel launch starts the same number of ranks on every machine: give "
                                 "--num_processes",
                             flag);
        launch.numProcesses = int(kept->front().chosen.size() * kept->size());
    }
    std::string hosts;
    for (const std::string &host : launch.hosts)
        hosts += (hosts.empty() ? "" : ", ") + host;
    launch.note = flag + " " + path + ": launching on " + hosts + " (" + std::to_string(kept->size()) + " of " +
                  std::to_string(inFile) + " host(s)" +
                  (include.empty() ? "" : "; deepspeed_inclusion_filter " + include) +
                  (exclude.empty() ? "" : "; deepspeed_exclusion_filter " + exclude) + ")" +
                  (launch.numProcesses ? ", " + std::to_string(launch.numProcesses) + " rank(s) from the slots" : "") +
                  (launch.gpuIds.empty() ? "" : ", gpu_ids " + launch.gpuIds);
    return launch;
}

} // namespace accel::launcher
