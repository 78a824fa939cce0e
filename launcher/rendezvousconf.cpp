#include "launcher/rendezvousconf.h"

#include "core/common/text.h"
#include "launcher/launchflags.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace accel::launcher {

namespace {

using text::lower;
using text::trim;

Error confError(const std::string &message)
{
    return Error{ErrorCode::InvalidInput, message, "--rdzv_conf"};
}

// torchrun's KEY=VALUE,KEY=VALUE (torch.distributed.elastic.rendezvous.utils._parse_rendezvous_config).
Result<std::map<std::string, std::string>> parseConf(const std::string &text)
{
    std::map<std::string, std::string> values;
    if (trim(text).empty())
        return values;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string pair = text.substr(start, comma - start);
        const size_t equals = pair.find('=');
        const std::string key = trim(pair.substr(0, equals));
        const std::string value = equals == std::string::npos ? std::string() : trim(pair.substr(equals + 1));
        if (key.empty())
            return tl::unexpected(confError("expected KEY=VALUE,KEY=VALUE, got '" + text + "'"));
        if (value.empty())
            return tl::unexpected(confError(key + " has no value"));
        values[key] = value;
        start = comma + 1;
    }
    return values;
}

Result<int> positiveSeconds(const std::string &key, const std::string &value)
{
    if (auto seconds = wholeNumberAtLeast(value, 1))
        return *seconds;
    return tl::unexpected(confError(key + ": expected a whole number of seconds above 0, got '" + value + "'"));
}

// Splits HOST[:PORT] ([V6]:PORT too); a missing port is torchrun's 29400.
Result<std::pair<std::string, int>> splitEndpoint(const std::string &text)
{
    std::string host = text;
    std::string port;
    if (!text.empty() && text.front() == '[') {
        const size_t close = text.find(']');
        if (close == std::string::npos)
            return makeError(ErrorCode::InvalidInput, "expected HOST[:PORT], got '" + text + "'", "--rdzv_endpoint");
        host = text.substr(1, close - 1);
        if (close + 1 < text.size() && text[close + 1] == ':')
            port = text.substr(close + 2);
    } else if (const size_t colon = text.rfind(':'); colon != std::string::npos && text.find(':') == colon) {
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    if (host.empty())
        return makeError(ErrorCode::InvalidInput, "expected HOST[:PORT], got '" + text + "'", "--rdzv_endpoint");
    if (port.empty())
        return std::make_pair(host, kDefaultRendezvousPort);
    if (auto value = wholeNumberAtLeast(port, 1); value && *value <= 65535)
        return std::make_pair(host, *value);
    return makeError(ErrorCode::InvalidInput, "port: expected 1-65535, got '" + port + "'", "--rdzv_endpoint");
}

const char *const kKnownKeys = "join_timeout, read_timeout, is_host, last_call_timeout, close_timeout, "
                               "heartbeat_timeout, keep_alive_interval, keep_alive_max_attempt, store_type";

} // namespace

Result<void> decideRendezvous(LaunchSettings &settings, const RendezvousRequest &request)
{
    const std::string backend = request.backend.value_or("static");
    if (backend == "etcd" || backend == "etcd-v2")
        return makeError(ErrorCode::InvalidInput,
                         backend + " needs an etcd server, which accel launch does not talk to; use c10d (the "
                                   "machines meet at --rdzv_endpoint or main_process_ip:main_process_port) or static",
                         "rdzv_backend");
    if (backend != "static" && backend != "c10d")
        return makeError(ErrorCode::InvalidInput, "expected static or c10d, got '" + backend + "'", "rdzv_backend");
    settings.rdzvBackend = backend;
    if (request.backendFromConfig && backend == "c10d")
        settings.notes.push_back("config rdzv_backend: c10d is applied (accelerate launch ignores it)");

    std::optional<std::pair<std::string, int>> endpoint;
    if (request.endpoint) {
        auto split = splitEndpoint(*request.endpoint);
        if (!split)
            return tl::unexpected(split.error());
        endpoint = *split;
    }
    auto conf = parseConf(request.conf.value_or(""));
    if (!conf)
        return tl::unexpected(conf.error());

    if (backend == "static") {
        if (endpoint) {
            // torchrun's static rendezvous: machine 0's store at the endpoint.
            settings.mainProcessIp = endpoint->first;
            settings.mainProcessPort = endpoint->second;
            settings.mainProcessPortExplicit = true;
        }
        if (!conf->empty())
            settings.notes.push_back("rdzv_conf " + *request.conf +
                                     " is not used with rdzv_backend static: every machine knows its machine_rank, "
                                     "and the ranks wait for each other as long as the job's rendezvous timeout");
        return {};
    }

    RendezvousOptions &options = settings.rendezvous;
    options.host = endpoint ? endpoint->first : settings.mainProcessIp;
    options.port = endpoint ? endpoint->second : settings.mainProcessPort;
    for (const auto &[key, value] : *conf) {
        if (key == "join_timeout" || key == "read_timeout") {
            auto seconds = positiveSeconds(key, value);
            if (!seconds)
                return tl::unexpected(seconds.error());
            (key == "join_timeout" ? options.joinTimeoutS : options.readTimeoutS) = *seconds;
        } else if (key == "is_host") {
            const std::string text = lower(value);
            if (text == "1" || text == "true" || text == "t" || text == "yes" || text == "y")
                options.isHost = 1;
            else if (text == "0" || text == "false" || text == "f" || text == "no" || text == "n")
                options.isHost = 0;
            else
                return tl::unexpected(confError("is_host: expected true or false, got '" + value + "'"));
        } else if (key == "last_call_timeout") {
            if (auto seconds = positiveSeconds(key, value); !seconds)
                return tl::unexpected(seconds.error());
            settings.notes.push_back("rdzv_conf last_call_timeout is not used: num_machines is fixed, so the "
                                     "rendezvous completes when the last machine joins (no extra wait)");
        } else if (key == "close_timeout" || key == "heartbeat_timeout" || key == "keep_alive_interval" ||
                   key == "keep_alive_max_attempt") {
            if (auto seconds = positiveSeconds(key, value); !seconds)
                return tl::unexpected(seconds.error());
            settings.notes.push_back("rdzv_conf " + key +
                                     " is not used: accel's rendezvous ends once the machine ranks are agreed and "
                                     "keeps no heartbeat; a machine whose ranks fail ends the attempt on all");
        } else if (key == "store_type") {
            if (lower(value) != "tcp")
                return tl::unexpected(
                    confError("store_type: accel's rendezvous is TCP only; expected tcp, got '" + value + "'"));
        } else if (key == "timeout") {
            return tl::unexpected(confError("timeout is the static backend's; with c10d the wait for every machine "
                                            "is join_timeout (seconds)"));
        } else {
            return tl::unexpected(confError("unknown key '" + key + "'; c10d takes " + kKnownKeys));
        }
    }
    if (settings.numMachines <= 1) {
        settings.notes.push_back("rdzv_backend c10d on one machine: it is machine 0 (nothing to agree on)");
        return {};
    }
    if (options.host.empty())
        return makeError(ErrorCode::InvalidInput,
                         "c10d on " + std::to_string(settings.numMachines) +
                             " machines needs the rendezvous address: --rdzv_endpoint HOST:PORT or "
                             "--main_process_ip (with --main_process_port)",
                         "rdzv_backend");
    if (options.port == 0)
        return makeError(ErrorCode::InvalidInput,
                         "main_process_port 0 cannot be the rendezvous port of several machines; give every "
                         "machine the same port",
                         "rdzv_backend");
    if (request.machineRankGiven)
        settings.notes.push_back("machine_rank " + std::to_string(settings.machineRank) +
                                 " is not used: with rdzv_backend c10d the machines agree on machine ranks at "
                                 "rendezvous (as torchrun does)");
    settings.machineRank = 0;
    settings.notes.push_back(
        "rdzv_backend c10d: the " + std::to_string(settings.numMachines) + " machines agree on machine ranks at " +
        options.host + ":" + std::to_string(options.port) + " (join_timeout " +
        std::to_string(int(options.joinTimeoutS)) + " s); each machine learns its machine rank there");
    return {};
}

} // namespace accel::launcher
