// accel hosts launch H1,H2,... -- LAUNCH_ARGS: one detached supervisor per host over SSH
// (`accel launch --detach` with --num_machines, --machine_rank in host order, --main_process_ip
// and --main_process_port, or with --config_file DIR/node-<rank>.yaml from `accel config cluster`
// when --config_dir DIR is given), and a local record of the nodes' runs that `accel hosts stop RECORD`
// reads to stop every node. If a node fails to start, the nodes already started are stopped.
// The network pre-flight (cmd_hosts_preflight.h) runs first; `accel launch --hosts H1,H2 ...`
// is this same launch (launchesOnHosts / runLaunchOnHosts below).
#include "app/cli/cmd_hosts_common.h"

#include "app/cli/cmd_hosts_preflight.h"
#include "app/cli/command.h"

#include "core/common/distributeddefaults.h"
#include "core/common/fileutil.h"
#include "core/config/clusterplan.h"
#include "core/config/configio.h"
#include "launcher/clusterrecord.h"
#include "launcher/hostfile.h"
#include "launcher/jsonoutput.h"
#include "launcher/launchflags.h"
#include "launcher/rundirectory.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cstdio>
#include <map>

namespace accel::cli {

namespace {

using namespace accel::launcher;

// accel launch's words up to its script: each option with its value, as `words[begin, end)`.
struct LaunchOption {
    std::string name; // canonical
    size_t begin = 0;
    size_t end = 0;
};

// Splits accel launch's arguments into its options and the index where the script starts
// (`words.size()` when there is none); a "--" before the script ends the options.
std::vector<LaunchOption> launchOptions(const std::vector<std::string> &words, size_t &script,
                                        const std::vector<std::string> &extraValued = {})
{
    std::vector<LaunchOption> options;
    size_t i = 0;
    for (; i < words.size(); ++i) {
        const std::string &word = words[i];
        if (word == "--") {
            ++i;
            break;
        }
        if (word.rfind("-", 0) != 0)
            break; // the script: what follows is its own
        LaunchOption option{ArgParser::canonical(word.substr(0, word.find('='))), i, i + 1};
        // --system_sample_hz is accel launch's own, beside Accelerate's flags.
        bool valued = option.name == "system_sample_hz" ||
                      std::find(extraValued.begin(), extraValued.end(), option.name) != extraValued.end();
        for (const LaunchFlag &flag : launchFlags())
            valued = valued || (option.name == flag.name && flag.kind != LaunchFlag::Kind::Switch);
        if (valued && word.find('=') == std::string::npos && i + 1 < words.size())
            ++i; // its value
        option.end = i + 1;
        options.push_back(option);
    }
    script = i;
    return options;
}

// Launch flags that `accel hosts launch` sets for each node itself (with --config_dir, also
// --config_file: each node gets its own).
Result<void> checkLaunchArguments(const std::vector<std::string> &arguments, bool configDir)
{
    static const std::vector<std::string> owned = {
        "num_machines", "machine_rank", "main_process_ip", "main_process_port", "detach", "run_dir", "json"};
    size_t script = 0;
    for (const LaunchOption &option : launchOptions(arguments, script)) {
        if (std::find(owned.begin(), owned.end(), option.name) != owned.end())
            return makeError(ErrorCode::InvalidInput,
                             "--" + option.name + " is set for each node by accel hosts launch; leave it out",
                             "launch arguments");
        if (configDir && option.name == "config_file")
            return makeError(ErrorCode::InvalidInput,
                             "--config_file: with --config_dir each node launches with its own node-<rank>.yaml; "
                             "leave it out",
                             "launch arguments");
    }
    if (arguments.empty())
        return makeError(ErrorCode::InvalidInput,
                         "nothing to launch: accel hosts launch H1,H2 -- [launch flags] SCRIPT");
    return {};
}

// The node configs `accel config cluster --out_dir DIR` wrote, as a launch on `hosts` hosts uses
// them: DIR/node-<rank>.yaml for every host in order, each with its own machine_rank, all with
// num_machines = the number of hosts and one main_process_ip and port.
struct NodeConfigs {
    hosts::MainAddress address;
    QStringList files; // absolute, one per host
};

Result<NodeConfigs> readNodeConfigs(const std::string &directory, int hosts)
{
    NodeConfigs configs;
    const QString folder = QFileInfo(QString::fromStdString(directory)).absoluteFilePath();
    std::optional<std::string> ip;
    std::optional<int64_t> port;
    for (int rank = 0; rank < hosts; ++rank) {
        const QString path = QDir(folder).filePath(QString::fromStdString(config::nodeFileName(rank)));
        const std::string where = path.toStdString();
        if (!QFileInfo::exists(path))
            return makeError(ErrorCode::InvalidInput,
                             "missing: --config_dir needs node-<rank>.yaml for each of the " + std::to_string(hosts) +
                                 " host(s), as `accel config cluster --hosts ... --out_dir DIR` writes them",
                             where);
        auto loaded = config::loadConfigFile(where);
        if (!loaded)
            return tl::unexpected(loaded.error());
        const config::ClusterConfig &node = *loaded;
        if (node.machineRank.value_or(0) != rank)
            return makeError(ErrorCode::InvalidInput,
                             "machine_rank is " + std::to_string(node.machineRank.value_or(0)) +
                                 "; the config of host " + std::to_string(rank + 1) + " in host order must have " +
                                 std::to_string(rank),
                             where);
        if (node.numMachines.value_or(1) != hosts)
            return makeError(ErrorCode::InvalidInput,
                             "num_machines is " + std::to_string(node.numMachines.value_or(1)) + " but " +
                                 std::to_string(hosts) + " host(s) are named",
                             where);
        if (!node.mainProcessIp || node.mainProcessIp->empty())
            return makeError(ErrorCode::InvalidInput, "main_process_ip is missing: the nodes need rank 0's address",
                             where);
        if (ip && (*ip != *node.mainProcessIp || *port != node.mainProcessPort.value_or(kDefaultMainProcessPort)))
            return makeError(ErrorCode::InvalidInput,
                             "main_process_ip / main_process_port " + *node.mainProcessIp + ":" +
                                 std::to_string(node.mainProcessPort.value_or(kDefaultMainProcessPort)) +
                                 " differ from node-0.yaml's " + *ip + ":" + std::to_string(*port),
                             where);
        ip = *node.mainProcessIp;
        port = node.mainProcessPort.value_or(kDefaultMainProcessPort);
        configs.files << path;
    }
    configs.address.ip = QString::fromStdString(*ip);
    configs.address.port = static_cast<int>(*port);
    return configs;
}

int fail(const char *action, const Error &error)
{
    std::fprintf(stderr, "accel hosts %s: %s\n", action, error.toString().c_str());
    return exitCodeFor(error) == 2 ? ExitBadInput : ExitFailure;
}

bool parseOrExit(ArgParser &parser, int argc, char **argv, const char *action, int &exitCode)
{
    if (parser.parse(argc, argv, 1))
        return true;
    if (parser.helpRequested()) {
        std::fputs(parser.helpText().c_str(), stdout);
        exitCode = ExitOk;
    } else {
        std::fprintf(stderr, "accel hosts %s: %s\n", action, parser.error().c_str());
        exitCode = ExitBadInput;
    }
    return false;
}

QString defaultRecordPath()
{
    return QDir(clusterRecordsDirectory())
        .filePath(RunDirectory::makeRunId(QStringLiteral("cluster")) + QStringLiteral(".json"));
}

Result<void> writeRecord(const QString &path, const QJsonObject &record)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    if (auto ok = fileutil::writeFileAtomic(path.toStdString(), schemaJson(record).toStdString()); !ok)
        return makeError(ErrorCode::Io, "cannot write the cluster record: " + ok.error().message, path.toStdString());
    return {};
}

// `accel stop RUN_DIR` on every node, in two steps: first the stop request on all of them
// (`accel stop --request_only`, nothing signalled), then the signals. A rank that loses its peer on
// another node (a pipeline stage whose neighbour was stopped first) can only end after the first
// signal, by when its own node holds the request: its supervisor records "stopped", not "failed",
// whichever node the signal reaches first. The outcomes of the second step, in node order;
// `requestErrors` gets the first step's failures (empty strings where it succeeded).
std::vector<AccelOutcome> stopEveryNode(const std::vector<Host *> &targets, const QStringList &runDirs,
                                        const hosts::RemoteSettings &settings, QStringList *requestErrors = nullptr)
{
    std::vector<QStringList> requests;
    std::vector<QStringList> stops;
    for (const QString &runDir : runDirs) {
        requests.push_back(
            {QStringLiteral("stop"), QStringLiteral("--request_only"), QStringLiteral("--json"), runDir});
        stops.push_back({QStringLiteral("stop"), QStringLiteral("--json"), runDir});
    }
    const std::vector<AccelOutcome> requested = hosts::runEverywhere(targets, requests, settings, 120000);
    if (requestErrors) {
        requestErrors->clear();
        for (const AccelOutcome &outcome : requested)
            *requestErrors << (outcome.succeeded() ? QString()
                                                   : outcome.describe() + QStringLiteral(": ") +
                                                         QString::fromUtf8(outcome.standardError).trimmed());
    }
    // A node whose request failed (unreachable, or an accel without --request_only) is still stopped.
    return hosts::runEverywhere(targets, stops, settings, 120000);
}

struct NodeStart {
    QString host;
    int machineRank = 0;
    bool started = false;
    QString runId;
    QString runDir;
    QString message;
    QString socketInterface; // GLOO_SOCKET_IFNAME given to the node, if chosen here
};

} // namespace

int runHostsLaunch(int argc, char **argv)
{
    ArgParser parser("accel hosts launch", "Start one detached `accel launch` per host over SSH, machine ranks in "
                                           "host order, and record the nodes' runs for `accel hosts stop`.");
    parser.addPositional({"HOSTS", "hosts, comma-separated: ~/.ssh/config aliases or [user@]host[:port]; the first "
                                   "is machine 0"});
    parser.addPositional({"ARGS", "after --: accel launch's flags, the script and its arguments", false, true});
    hosts::addMainAddressOptions(parser);
    parser.addValue("record", "FILE", "where to write the record of the nodes' runs",
                    "<data>/accel-studio/clusters/<id>.json");
    parser.addValue("config_dir", "DIR",
                    "the node configs `accel config cluster --out_dir DIR` wrote (node-<rank>.yaml, one per host in "
                    "host order), at this path on every host too (a shared file system, or copied there): each "
                    "node launches with --config_file DIR/node-<rank>.yaml, and main_process_ip and "
                    "main_process_port come from them");
    parser.addFlag("json", "machine-readable output (" + schemaAndVersion(HostsLaunchSchema, HostsLaunchVersion) + ")");
    hosts::addRemoteOptions(parser);
    int exitCode = ExitOk;
    if (!parseOrExit(parser, argc, argv, "launch", exitCode))
        return exitCode;
    auto names = hosts::hostList({parser.firstPositional("HOSTS").value_or("")});
    if (!names)
        return fail("launch", names.error());
    auto settings = hosts::remoteSettings(parser);
    if (!settings)
        return fail("launch", settings.error());
    const std::vector<std::string> launchArguments = parser.positional("ARGS");
    if (auto checked = checkLaunchArguments(launchArguments, parser.isSet("config_dir")); !checked)
        return fail("launch", checked.error());
    std::optional<NodeConfigs> nodeConfigs;
    if (auto directory = parser.value("config_dir")) {
        for (const char *owned : {"main_process_ip", "main_process_port"}) {
            if (parser.isSet(owned))
                return fail("launch", Error{ErrorCode::InvalidInput,
                                            std::string("comes from the node configs of --config_dir; leave it out"),
                                            std::string("--") + owned});
        }
        auto read = readNodeConfigs(*directory, static_cast<int>(names->size()));
        if (!read)
            return fail("launch", read.error());
        nodeConfigs = std::move(*read);
    }
    auto address =
        nodeConfigs ? Result<hosts::MainAddress>(nodeConfigs->address) : hosts::mainAddress(parser, names->first());
    if (!address)
        return fail("launch", address.error());
    const int port = address->port;
    const std::string mainIp = address->ip.toStdString();

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    const hosts::HostGroup group = hosts::makeHosts(*names, *settings);
    const std::vector<Host *> &targets = group.hosts;
    std::vector<NodeStart> nodes(targets.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        nodes[i].host = names->at(static_cast<int>(i));
        nodes[i].machineRank = static_cast<int>(i);
    }
    hosts::PreflightOptions checks;
    checks.mainIp = address->ip;
    checks.port = port;
    const hosts::Preflight preflight = hosts::runPreflight(group, *names, *settings, checks);
    for (size_t i = 0; i < nodes.size(); ++i) {
        nodes[i].socketInterface = preflight.socketInterface[i];
        nodes[i].message = preflight.summaryFor(nodes[i].host);
    }
    const bool ready = preflight.ok();
    for (NodeStart &node : nodes) {
        if (!ready && node.message.isEmpty())
            node.message = QStringLiteral("not started: the pre-flight failed on another node");
    }
    const std::vector<QStringList> &nodeEnvironment = preflight.environment;
    std::vector<QStringList> commands;
    for (int rank = 0; rank < names->size(); ++rank) {
        QStringList command = {QStringLiteral("launch"), QStringLiteral("--detach"), QStringLiteral("--json")};
        if (nodeConfigs)
            command << QStringLiteral("--config_file") << nodeConfigs->files.at(rank);
        else
            command << QStringLiteral("--num_machines") << QString::number(names->size())
                    << QStringLiteral("--machine_rank") << QString::number(rank) << QStringLiteral("--main_process_ip")
                    << QString::fromStdString(mainIp) << QStringLiteral("--main_process_port") << QString::number(port);
        for (const std::string &word : launchArguments)
            command << QString::fromStdString(word);
        commands.push_back(command);
    }
    const std::vector<AccelOutcome> outcomes =
        ready ? hosts::runEverywhere(targets, commands, *settings, 120000, nodeEnvironment)
              : std::vector<AccelOutcome>();

    bool allStarted = ready;
    for (size_t i = 0; i < outcomes.size(); ++i) {
        NodeStart &node = nodes[i];
        const QJsonObject reply = QJsonDocument::fromJson(outcomes[i].standardOutput).object();
        node.started = outcomes[i].succeeded() &&
                       reply.value(QStringLiteral("schema")).toString() == QLatin1String(LaunchDetachedSchema);
        node.runId = reply.value(QStringLiteral("id")).toString();
        node.runDir = reply.value(QStringLiteral("run_dir")).toString();
        if (!node.started)
            node.message =
                outcomes[i].describe() + QStringLiteral(": ") + QString::fromUtf8(outcomes[i].standardError).trimmed();
        allStarted = allStarted && node.started;
    }
    if (!allStarted) { // no half-started cluster: stop the nodes that did start
        std::vector<Host *> started;
        QStringList runDirs;
        for (size_t i = 0; i < nodes.size(); ++i) {
            if (nodes[i].started) {
                started.push_back(targets[i]);
                runDirs << nodes[i].runDir;
                nodes[i].message = QStringLiteral("stopped again: another node failed to start");
            }
        }
        stopEveryNode(started, runDirs, *settings);
    }

    QJsonArray list;
    for (const NodeStart &node : nodes)
        list.append(QJsonObject{{QStringLiteral("host"), node.host},
                                {QStringLiteral("machine_rank"), node.machineRank},
                                {QStringLiteral("started"), node.started && allStarted},
                                {QStringLiteral("run_id"), node.runId},
                                {QStringLiteral("run_dir"), node.runDir},
                                {QStringLiteral("socket_ifname"), node.socketInterface},
                                {QStringLiteral("message"), node.message}});
    QString recordPath;
    if (allStarted) {
        recordPath = QString::fromStdString(parser.valueOr("record", ""));
        if (recordPath.isEmpty())
            recordPath = defaultRecordPath();
        const QJsonObject record{{QStringLiteral("schema"), QLatin1String(ClusterRecordSchema)},
                                 {QStringLiteral("version"), ClusterRecordVersion},
                                 {QStringLiteral("created"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)},
                                 {QStringLiteral("main_process_ip"), QString::fromStdString(mainIp)},
                                 {QStringLiteral("main_process_port"), port},
                                 {QStringLiteral("nodes"), list}};
        if (auto written = writeRecord(recordPath, record); !written)
            return fail("launch", written.error());
    }
    if (parser.isSet("json")) {
        const QJsonObject body{{QStringLiteral("ok"), allStarted},
                               {QStringLiteral("record"), recordPath.isEmpty() ? QJsonValue() : QJsonValue(recordPath)},
                               {QStringLiteral("main_process_ip"), QString::fromStdString(mainIp)},
                               {QStringLiteral("main_process_port"), port},
                               {QStringLiteral("nodes"), list}};
        std::fputs(schemaJson(QLatin1String(HostsLaunchSchema), HostsLaunchVersion, body).constData(), stdout);
    } else {
        for (const NodeStart &node : nodes) {
            QString line =
                node.started && allStarted ? QStringLiteral("run %1 in %2").arg(node.runId, node.runDir) : node.message;
            if (node.started && allStarted && !node.socketInterface.isEmpty())
                line += QStringLiteral(", ranks on %1").arg(node.socketInterface);
            else if (node.started && allStarted && !node.message.isEmpty())
                line += QStringLiteral("; ") + node.message;
            std::printf("%s (machine %d): %s\n", qPrintable(node.host), node.machineRank, qPrintable(line));
        }
        if (allStarted)
            std::printf("record: %s\nstop every node with: accel hosts stop %s\n", qPrintable(recordPath),
                        qPrintable(recordPath));
    }
    return allStarted ? ExitOk : ExitFailure;
}

int runHostsStop(int argc, char **argv)
{
    ArgParser parser("accel hosts stop",
                     "Stop every node of a run started by `accel hosts launch`: accel stop on each host over SSH, "
                     "first the stop request on every node, then the signals, so that every node records "
                     "\"stopped\" (a rank that loses its peer after the request is the stop's consequence).");
    parser.addPositional({"RECORD", "the record `accel hosts launch` wrote"});
    parser.addFlag("json", "machine-readable output (" + schemaAndVersion(HostsStopSchema, HostsStopVersion) + ")");
    hosts::addRemoteOptions(parser);
    int exitCode = ExitOk;
    if (!parseOrExit(parser, argc, argv, "stop", exitCode))
        return exitCode;
    auto settings = hosts::remoteSettings(parser);
    if (!settings)
        return fail("stop", settings.error());
    const QString path = QString::fromStdString(parser.firstPositional("RECORD").value_or(""));
    const auto record = readClusterRecord(path);
    if (!record)
        return fail("stop", record.error());

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    QStringList names;
    QStringList runDirs;
    for (const ClusterRecordNode &node : record->nodes) {
        names << node.host;
        runDirs << node.runDir;
    }
    const hosts::HostGroup group = hosts::makeHosts(names, *settings);
    QStringList requestErrors;
    const std::vector<AccelOutcome> outcomes = stopEveryNode(group.hosts, runDirs, *settings, &requestErrors);
    bool allStopped = true;
    QJsonArray list;
    for (int i = 0; i < record->nodes.size(); ++i) {
        const ClusterRecordNode &node = record->nodes.at(i);
        const AccelOutcome &outcome = outcomes[static_cast<size_t>(i)];
        const QJsonObject reply = QJsonDocument::fromJson(outcome.standardOutput).object();
        const bool stopped = outcome.succeeded();
        allStopped = allStopped && stopped;
        QString message =
            stopped ? QString()
                    : outcome.describe() + QStringLiteral(": ") + QString::fromUtf8(outcome.standardError).trimmed();
        if (!requestErrors.value(i).isEmpty()) // stopped all the same, but its ranks may end "failed"
            message += (message.isEmpty() ? QString() : QStringLiteral("; ")) +
                       QStringLiteral("the stop request was not recorded before the signals: ") + requestErrors.at(i);
        list.append(QJsonObject{{QStringLiteral("host"), node.host},
                                {QStringLiteral("run_dir"), node.runDir},
                                {QStringLiteral("stopped"), stopped},
                                {QStringLiteral("state"), reply.value(QStringLiteral("state"))},
                                {QStringLiteral("message"), message}});
        if (!parser.isSet("json"))
            std::printf("%s: %s\n", qPrintable(node.host),
                        qPrintable(stopped ? reply.value(QStringLiteral("state")).toString() : message));
    }
    if (parser.isSet("json"))
        std::fputs(schemaJson(QLatin1String(HostsStopSchema), HostsStopVersion,
                              QJsonObject{{QStringLiteral("ok"), allStopped}, {QStringLiteral("nodes"), list}})
                       .constData(),
                   stdout);
    return allStopped ? ExitOk : ExitFailure;
}

namespace {

// `accel hosts launch` options that `accel launch --hosts` takes too, and those with a value.
const std::vector<std::string> HostsLaunchOptions = {
    "hosts",   "main_process_ip",     "main_process_port", "record",     "json",
    "timeout", "accept_new_host_key", "remote_accel",      "remote_env", "config_dir"};
const std::vector<std::string> HostsLaunchValued = {"hosts",        "record",     "timeout",
                                                    "remote_accel", "remote_env", "config_dir"};

int refuse(const Error &error)
{
    std::fprintf(stderr, "accel launch: %s\n", error.toString().c_str());
    return ExitBadInput;
}

std::string optionValue(const std::vector<std::string> &words, const LaunchOption &option)
{
    const std::string &first = words[option.begin];
    if (const size_t eq = first.find('='); eq != std::string::npos)
        return first.substr(eq + 1);
    return option.end - option.begin > 1 ? words[option.begin + 1] : std::string();
}

} // namespace

bool launchesOnHosts(int argc, char **argv)
{
    const std::vector<std::string> words(argv + 1, argv + argc);
    size_t script = 0;
    bool onHosts = false;
    for (const LaunchOption &option : launchOptions(words, script, HostsLaunchValued)) {
        if (option.name == "help" || option.name == "h")
            return false; // accel launch's own --help documents --hosts
        onHosts = onHosts || option.name == "hosts" || option.name == "deepspeed_hostfile" ||
                  option.name == "mpirun_hostfile";
    }
    return onHosts;
}

// accel launch --hosts H1,H2 [launch flags] SCRIPT [ARGS]: runs `accel hosts launch H1,H2 [its
// options] -- [the other launch flags] SCRIPT [ARGS]`.
int runLaunchOnHosts(int argc, char **argv)
{
    const std::vector<std::string> words(argv + 1, argv + argc);
    size_t script = 0;
    std::string hostNames;
    std::string numMachines;
    std::vector<std::string> hostsWords;
    std::vector<std::string> launchWords;
    bool job = false;                                 // --job JOB.yaml is what runs: no script follows
    std::map<std::string, std::string> hostfileWords; // the hostfile flags and the filters, by name
    std::vector<std::string> filterWords;             // the filters' words, kept when there is no hostfile
    bool numProcessesGiven = false;
    bool gpuIdsGiven = false;
    for (const LaunchOption &option : launchOptions(words, script, HostsLaunchValued)) {
        const std::vector<std::string> part(words.begin() + static_cast<long>(option.begin),
                                            words.begin() + static_cast<long>(option.end));
        job = job || option.name == "job";
        numProcessesGiven = numProcessesGiven || option.name == "num_processes";
        gpuIdsGiven = gpuIdsGiven || option.name == "gpu_ids";
        if (option.name == "deepspeed_hostfile" || option.name == "mpirun_hostfile")
            hostfileWords[option.name] = optionValue(words, option);
        else if (option.name == "deepspeed_inclusion_filter" || option.name == "deepspeed_exclusion_filter") {
            hostfileWords[option.name] = optionValue(words, option);
            filterWords.insert(filterWords.end(), part.begin(), part.end());
        } else if (option.name == "hosts")
            hostNames += (hostNames.empty() ? "" : ",") + optionValue(words, option);
        else if (option.name == "num_machines")
            numMachines = optionValue(words, option);
        else if (std::find(HostsLaunchOptions.begin(), HostsLaunchOptions.end(), option.name) !=
                 HostsLaunchOptions.end())
            hostsWords.insert(hostsWords.end(), part.begin(), part.end());
        else
            launchWords.insert(launchWords.end(), part.begin(), part.end());
    }
    const bool deepspeedFile = hostfileWords.count("deepspeed_hostfile") > 0;
    const bool mpiFile = hostfileWords.count("mpirun_hostfile") > 0;
    if (deepspeedFile && mpiFile)
        return refuse(Error{ErrorCode::InvalidInput,
                            "--deepspeed_hostfile and --mpirun_hostfile both name the hosts; "
                            "give one",
                            "--mpirun_hostfile"});
    if ((deepspeedFile || mpiFile) && !hostNames.empty())
        return refuse(Error{ErrorCode::InvalidInput,
                            std::string("--hosts and --") + (mpiFile ? "mpirun_hostfile" : "deepspeed_hostfile") +
                                " both name the hosts; give one",
                            "--hosts"});
    if (deepspeedFile || mpiFile) {
        // The hosts the file lists (after DeepSpeed's filters), machine 0 first (launcher/hostfile.h).
        auto plan = planHostfileLaunch(hostfileWords[deepspeedFile ? "deepspeed_hostfile" : "mpirun_hostfile"],
                                       deepspeedFile ? HostfileKind::DeepSpeed : HostfileKind::Mpi,
                                       hostfileWords["deepspeed_inclusion_filter"],
                                       hostfileWords["deepspeed_exclusion_filter"], numProcessesGiven);
        if (!plan)
            return refuse(plan.error());
        for (const std::string &host : plan->hosts)
            hostNames += (hostNames.empty() ? "" : ",") + host;
        if (plan->numProcesses > 0)
            launchWords.insert(launchWords.end(), {"--num_processes", std::to_string(plan->numProcesses)});
        if (!plan->gpuIds.empty()) {
            if (gpuIdsGiven)
                return refuse(Error{ErrorCode::InvalidInput,
                                    "the filter keeps slots " + plan->gpuIds + " on every host; leave --gpu_ids out",
                                    "--gpu_ids"});
            launchWords.insert(launchWords.end(), {"--gpu_ids", plan->gpuIds});
        }
        std::fprintf(stderr, "accel launch: note: %s\n", plan->note.c_str());
    } else {
        launchWords.insert(launchWords.end(), filterWords.begin(), filterWords.end());
    }
    auto names = hosts::hostList({hostNames});
    if (!names)
        return refuse(Error{ErrorCode::InvalidInput, names.error().message, "--hosts"});
    if (!numMachines.empty() && numMachines != std::to_string(names->size()))
        return refuse(Error{ErrorCode::InvalidInput,
                            "is " + numMachines + " but --hosts names " + std::to_string(names->size()) +
                                " host(s): leave it out (with --hosts it is the number of hosts)",
                            "--num_machines"});
    if (script >= words.size() && !job)
        return refuse(Error{ErrorCode::InvalidInput,
                            "nothing to launch: accel launch --hosts H1,H2 [launch flags] SCRIPT [ARGS] (or --job "
                            "JOB.yaml)",
                            "--hosts"});
    launchWords.insert(launchWords.end(), words.begin() + static_cast<long>(script), words.end());
    std::vector<std::string> arguments = {"launch", hostNames};
    arguments.insert(arguments.end(), hostsWords.begin(), hostsWords.end());
    arguments.push_back("--");
    arguments.insert(arguments.end(), launchWords.begin(), launchWords.end());
    std::vector<char *> pointers;
    for (std::string &word : arguments)
        pointers.push_back(word.data());
    pointers.push_back(nullptr);
    return runHostsLaunch(static_cast<int>(arguments.size()), pointers.data());
}

} // namespace accel::cli
