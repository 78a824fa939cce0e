// accel config cluster: one Accelerate config per node of a multi-node cluster, from one
// description (hosts, processes per host, main host, port, base config), linted before anything
// is written (core/config/clusterplan.h).
#include "app/cli/argparser.h"

#include "app/cli/command.h"

#include "core/common/distributeddefaults.h"
#include "core/config/clusterplan.h"
#include "core/config/configio.h"
#include "core/config/questionflow.h"
#include "core/hardware/hardwaredetector.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace accel::cli {

namespace {

using namespace accel::config;

int badInput(const std::string &message)
{
    std::fprintf(stderr, "accel config cluster: %s\n", message.c_str());
    return ExitBadInput;
}

bool parseInt(const std::string &text, int &out)
{
    char *end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || !end || *end != '\0' || value < -1000000 || value > 1000000)
        return false;
    out = static_cast<int>(value);
    return true;
}

// What the questionnaire writes for a multi-CPU run: the base when no --base is given.
Result<ClusterConfig> defaultBase()
{
    return QuestionFlow::standard().build({{"machine_type", "MULTI_CPU"}, {"num_processes", "2"}});
}

} // namespace

int runConfigCluster(int argc, char **argv)
{
    ArgParser parser("accel config cluster",
                     "Write one Accelerate config per node of a multi-node cluster (node-<rank>.yaml, machine_rank = "
                     "the host's position in --hosts). Everything is checked first: duplicate hosts, processes per "
                     "host, the port (free here when the main host is this machine) and the main host's address "
                     "among this machine's interfaces. Nothing is written when a check fails (exit 2).");
    parser.addValue("hosts", "A,B,...", "the nodes, by name or address, in rank order");
    parser.addValue("procs_per_host", "N", "processes on each node", "1");
    parser.addValue("main_host", "HOST", "the host running rank 0 (default: the first host)");
    parser.addValue("port", "PORT", "main_process_port", std::to_string(kDefaultMainProcessPort));
    parser.addValue("out_dir", "DIR", "folder for node-<rank>.yaml (created when missing)");
    parser.addValue("base", "CONFIG", "config with the training settings (default: a multi-CPU config)");
    parser.addFlag("json", "print an accel.config.cluster object instead of text");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        return badInput(parser.error());
    }
    const auto hostsText = parser.value("hosts");
    const auto outDir = parser.value("out_dir");
    if (!hostsText || !outDir)
        return badInput("--hosts and --out_dir are required");
    ClusterPlanInput input;
    for (const std::string &name : splitHostList(*hostsText))
        input.hosts.push_back({name, std::nullopt});
    if (!parseInt(parser.valueOr("procs_per_host", "1"), input.processesPerHost))
        return badInput("option '--procs_per_host': expected a whole number; got " +
                        parser.valueOr("procs_per_host", ""));
    if (!parseInt(parser.valueOr("port", std::to_string(kDefaultMainProcessPort)), input.port))
        return badInput("option '--port': expected a whole number; got " + parser.valueOr("port", ""));
    input.mainHost = parser.valueOr("main_host", input.hosts.empty() ? std::string() : input.hosts.front().name);
    Result<ClusterConfig> base = parser.value("base") ? loadConfigFile(*parser.value("base")) : defaultBase();
    if (!base)
        return badInput(base.error().toString());
    input.base = *base;

    const LocalMachine local = localMachine();
    // The devices of this machine are known: GPUs for accelerator runs.
    const bool gpuRun = isMultiAcceleratorType(input.base.distributedType) ||
                        input.base.distributedType == DistributedType::DeepSpeed ||
                        input.base.distributedType == DistributedType::Fsdp ||
                        input.base.distributedType == DistributedType::MegatronLm;
    auto isLocal = [&](const std::string &name) {
        for (const auto *list : {&local.names, &local.addresses})
            for (const std::string &item : *list)
                if (item == name)
                    return true;
        return false;
    };
    for (ClusterHost &host : input.hosts)
        if (gpuRun && isLocal(host.name))
            host.devices = hardware::driverGpuCount();

    const ClusterPlan plan = planCluster(input, local);
    std::vector<std::string> written;
    Error writeError;
    bool writeFailed = false;
    if (plan.ok()) {
        auto result = writeClusterPlan(plan, *outDir);
        if (result)
            written = *result;
        else {
            writeError = result.error();
            writeFailed = true;
        }
    }

    if (parser.isSet("json")) {
        nlohmann::ordered_json json;
        json["schema"] = "accel.config.cluster";
        json["version"] = 1;
        json["ok"] = plan.ok() && !writeFailed;
        json["main_host"] = input.mainHost;
        json["main_address"] = plan.mainAddress;
        json["main_is_local"] = plan.mainIsLocal;
        json["num_machines"] = input.hosts.size();
        json["num_processes"] = static_cast<int>(input.hosts.size()) * input.processesPerHost;
        nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
        for (size_t rank = 0; rank < written.size(); ++rank)
            nodes.push_back({{"rank", rank}, {"host", input.hosts[rank].name}, {"file", written[rank]}});
        json["nodes"] = nodes;
        nlohmann::ordered_json messages = nlohmann::ordered_json::array();
        for (const Diagnostic &d : plan.messages)
            messages.push_back({{"severity", d.severity == Severity::Error ? "error" : "warning"},
                                {"key", d.key},
                                {"message", d.message},
                                {"text", d.toString()}});
        json["messages"] = messages;
        std::printf("%s\n", json.dump(2).c_str());
    }
    for (const Diagnostic &d : plan.messages)
        std::fprintf(stderr, "%s%s\n", d.severity == Severity::Error ? "error: " : "", d.toString().c_str());
    if (!plan.ok()) {
        std::fprintf(stderr, "accel config cluster: nothing written; fix the errors above\n");
        return ExitBadInput;
    }
    if (writeFailed) {
        std::fprintf(stderr, "accel config cluster: %s\n", writeError.toString().c_str());
        return exitCodeFor(writeError);
    }
    if (!parser.isSet("json")) {
        std::string names;
        for (size_t rank = 0; rank < written.size(); ++rank) {
            std::printf("wrote %s (%s, machine_rank %zu)\n", written[rank].c_str(), input.hosts[rank].name.c_str(),
                        rank);
            names += (rank ? "," : "") + input.hosts[rank].name;
        }
        std::printf("launch on every node over SSH (with this folder at the same path there): accel launch "
                    "--hosts %s --config_dir %s SCRIPT\n",
                    names.c_str(), parser.valueOr("out_dir", "").c_str());
    }
    return ExitOk;
}

} // namespace accel::cli
