// accel hosts launch H1,H2,... -- LAUNCH_ARGS: one detached supervisor per host over SSH
// (`accel launch --detach` with --num_machines, --machine_rank in host order, --main_process_ip
// and --main_process_port), and a local record of the nodes' runs that `accel hosts stop RECORD`
// reads to stop every node. If a node fails to start, the nodes already started are stopped.
#include "app/cli/cmd_hosts_common.h"
#include "app/cli/command.h"

#include "launcher/jsonoutput.h"
#include "launcher/launchflags.h"
#include "launcher/rundirectory.h"
#include "launcher/sshsession.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

#include <cstdio>

namespace accel::cli {

namespace {

using namespace accel::launcher;

// Launch flags that `accel hosts launch` sets for each node itself.
Result<void> checkLaunchArguments(const std::vector<std::string> &arguments)
{
    static const std::vector<std::string> owned = {
        "num_machines", "machine_rank", "main_process_ip", "main_process_port", "detach", "run_dir", "json"};
    for (size_t i = 0; i < arguments.size(); ++i) {
        const std::string &word = arguments[i];
        if (word.rfind("-", 0) != 0)
            break; // the script: what follows is its own
        const std::string name = ArgParser::canonical(word.substr(0, word.find('=')));
        for (const std::string &mine : owned) {
            if (name == mine)
                return makeError(ErrorCode::InvalidInput,
                                 "--" + name + " is set for each node by accel hosts launch; leave it out",
                                 "launch arguments");
        }
        for (const LaunchFlag &flag : launchFlags()) {
            if (name == flag.name && flag.kind != LaunchFlag::Kind::Switch && word.find('=') == std::string::npos)
                ++i; // its value
        }
    }
    if (arguments.empty())
        return makeError(ErrorCode::InvalidInput,
                         "nothing to launch: accel hosts launch H1,H2 -- [launch flags] SCRIPT");
    return {};
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
    return QFileInfo(RunDirectory::defaultRunsRoot())
        .dir()
        .filePath(QStringLiteral("clusters/%1.json"))
        .arg(RunDirectory::makeRunId(QStringLiteral("cluster")));
}

Result<void> writeRecord(const QString &path, const QJsonObject &record)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(schemaJson(record)) < 0 || !file.commit())
        return makeError(ErrorCode::Io, "cannot write the cluster record: " + file.errorString().toStdString(),
                         path.toStdString());
    return {};
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

// Pre-flight on every node before anything starts: accel answers there in our version, and which
// of its interfaces is on the main address's subnet (GLOO_/NCCL_SOCKET_IFNAME for its ranks, unless
// the user names one). Returns the per-node environment, or fills the nodes' messages and fails.
bool preflight(const hosts::HostGroup &group, const hosts::RemoteSettings &settings, const QString &mainIp,
               std::vector<NodeStart> &nodes, std::vector<QStringList> &environment)
{
    const QStringList envArguments = {QStringLiteral("env"), QStringLiteral("--json"), QStringLiteral("--no_python"),
                                      QStringLiteral("--no_gpu"), QStringLiteral("--no_worker")};
    const std::vector<AccelOutcome> probes = hosts::runEverywhere(
        group.hosts, std::vector<QStringList>(group.hosts.size(), envArguments), settings, settings.timeoutMs * 4);
    bool userChose = false;
    for (const QString &entry : settings.environment)
        userChose = userChose || entry.startsWith(QLatin1String("GLOO_SOCKET_IFNAME="));
    bool ok = true;
    environment.assign(group.hosts.size(), {});
    for (size_t i = 0; i < probes.size(); ++i) {
        NodeStart &node = nodes[i];
        const QJsonObject env = QJsonDocument::fromJson(probes[i].standardOutput).object();
        const QString version = env.value(QStringLiteral("accel_version")).toString();
        if (!probes[i].succeeded() || env.value(QStringLiteral("schema")).toString() != QLatin1String("accel.env")) {
            node.message = QStringLiteral("pre-flight (accel env) failed: ") + probes[i].describe();
            const QString err = QString::fromUtf8(probes[i].standardError).trimmed().section(QLatin1Char('\n'), -1);
            if (probes[i].reason.isEmpty() && !err.isEmpty())
                node.message += QStringLiteral(": ") + err;
            ok = false;
        } else if (version != QLatin1String(ACCEL_VERSION)) {
            node.message =
                QStringLiteral("accel %1 on %2, but this is accel %3: install the same version on every host")
                    .arg(version, node.host, QString::fromLatin1(ACCEL_VERSION));
            ok = false;
        } else if (!userChose) {
            node.socketInterface = hosts::interfaceOnSubnet(env, mainIp);
            if (!node.socketInterface.isEmpty())
                environment[i] << QStringLiteral("GLOO_SOCKET_IFNAME=") + node.socketInterface
                               << QStringLiteral("NCCL_SOCKET_IFNAME=") + node.socketInterface;
            else if (!mainIp.startsWith(QLatin1String("127."))) // loopback: every node is this machine
                node.message = QStringLiteral("note: no interface of %1 is on the subnet of %2; its ranks bind to "
                                              "the address its host name resolves to (if they cannot connect, name "
                                              "the interface: --remote_env GLOO_SOCKET_IFNAME=...)")
                                   .arg(node.host, mainIp);
        }
    }
    return ok;
}

} // namespace

int runHostsLaunch(int argc, char **argv)
{
    ArgParser parser("accel hosts launch", "Start one detached `accel launch` per host over SSH, machine ranks in "
                                           "host order, and record the nodes' runs for `accel hosts stop`.");
    parser.addPositional({"HOSTS", "hosts, comma-separated: ~/.ssh/config aliases or [user@]host[:port]; the first "
                                   "is machine 0"});
    parser.addPositional({"ARGS", "after --: accel launch's flags, the script and its arguments", false, true});
    parser.addValue("main_process_ip", "IP", "address of machine 0 as the others reach it (default: its HostName)");
    parser.addValue("main_process_port", "PORT", "port of rank 0's TCPStore", "29500");
    parser.addValue("record", "FILE", "where to write the record of the nodes' runs",
                    "<data>/accel-studio/clusters/<id>.json");
    parser.addFlag("json", "machine-readable output (accel.hosts-launch, version 1)");
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
    if (auto checked = checkLaunchArguments(launchArguments); !checked)
        return fail("launch", checked.error());
    const std::string portText = parser.valueOr("main_process_port", "29500");
    const int port = QString::fromStdString(portText).toInt();
    if (port < 1 || port > 65535)
        return fail("launch",
                    Error{ErrorCode::InvalidInput, "expected 1-65535, got '" + portText + "'", "--main_process_port"});
    std::string mainIp = parser.valueOr("main_process_ip", "");
    if (mainIp.empty()) {
        auto configured = ssh::configuredHostName(names->first().toStdString(), {});
        if (!configured)
            return fail("launch", configured.error());
        mainIp = *configured;
    }

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    const hosts::HostGroup group = hosts::makeHosts(*names, *settings);
    const std::vector<SshHost *> &targets = group.hosts;
    std::vector<NodeStart> nodes(targets.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        nodes[i].host = names->at(static_cast<int>(i));
        nodes[i].machineRank = static_cast<int>(i);
    }
    std::vector<QStringList> nodeEnvironment;
    const bool ready = preflight(group, *settings, QString::fromStdString(mainIp), nodes, nodeEnvironment);
    std::vector<QStringList> commands;
    for (int rank = 0; rank < names->size(); ++rank) {
        QStringList command = {QStringLiteral("launch"), QStringLiteral("--detach"), QStringLiteral("--json")};
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
                       reply.value(QStringLiteral("schema")).toString() == QLatin1String("accel.launch-detached");
        node.runId = reply.value(QStringLiteral("id")).toString();
        node.runDir = reply.value(QStringLiteral("run_dir")).toString();
        if (!node.started)
            node.message =
                outcomes[i].describe() + QStringLiteral(": ") + QString::fromUtf8(outcomes[i].standardError).trimmed();
        allStarted = allStarted && node.started;
    }
    if (!allStarted) { // no half-started cluster: stop the nodes that did start
        std::vector<SshHost *> started;
        std::vector<QStringList> stops;
        for (size_t i = 0; i < nodes.size(); ++i) {
            if (nodes[i].started) {
                started.push_back(targets[i]);
                stops.push_back({QStringLiteral("stop"), nodes[i].runDir});
                nodes[i].message = QStringLiteral("stopped again: another node failed to start");
            }
        }
        hosts::runEverywhere(started, stops, *settings, 120000);
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
        const QJsonObject record{{QStringLiteral("schema"), QStringLiteral("accel.cluster-run")},
                                 {QStringLiteral("version"), 1},
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
        std::fputs(schemaJson(QStringLiteral("accel.hosts-launch"), 1, body).constData(), stdout);
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
    ArgParser parser("accel hosts stop", "Stop every node of a run started by `accel hosts launch` (accel stop on "
                                         "each host over SSH).");
    parser.addPositional({"RECORD", "the record `accel hosts launch` wrote"});
    parser.addFlag("json", "machine-readable output (accel.hosts-stop, version 1)");
    hosts::addRemoteOptions(parser);
    int exitCode = ExitOk;
    if (!parseOrExit(parser, argc, argv, "stop", exitCode))
        return exitCode;
    auto settings = hosts::remoteSettings(parser);
    if (!settings)
        return fail("stop", settings.error());
    const QString path = QString::fromStdString(parser.firstPositional("RECORD").value_or(""));
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return fail("stop",
                    Error{ErrorCode::NotFound, "cannot read: " + file.errorString().toStdString(), path.toStdString()});
    const QJsonObject record = QJsonDocument::fromJson(file.readAll()).object();
    const QJsonArray nodes = record.value(QStringLiteral("nodes")).toArray();
    if (record.value(QStringLiteral("schema")).toString() != QLatin1String("accel.cluster-run") || nodes.isEmpty())
        return fail("stop", Error{ErrorCode::InvalidInput,
                                  "not a record of accel hosts launch (schema accel.cluster-run with nodes)",
                                  path.toStdString()});

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    QStringList names;
    std::vector<QStringList> commands;
    for (const QJsonValue &value : nodes) {
        const QJsonObject node = value.toObject();
        names << node.value(QStringLiteral("host")).toString();
        commands.push_back(
            {QStringLiteral("stop"), QStringLiteral("--json"), node.value(QStringLiteral("run_dir")).toString()});
    }
    const hosts::HostGroup group = hosts::makeHosts(names, *settings);
    const std::vector<AccelOutcome> outcomes = hosts::runEverywhere(group.hosts, commands, *settings, 120000);
    bool allStopped = true;
    QJsonArray list;
    for (int i = 0; i < nodes.size(); ++i) {
        const QJsonObject node = nodes.at(i).toObject();
        const AccelOutcome &outcome = outcomes[static_cast<size_t>(i)];
        const QJsonObject reply = QJsonDocument::fromJson(outcome.standardOutput).object();
        const bool stopped = outcome.succeeded();
        allStopped = allStopped && stopped;
        const QString message =
            stopped ? QString()
                    : outcome.describe() + QStringLiteral(": ") + QString::fromUtf8(outcome.standardError).trimmed();
        list.append(QJsonObject{{QStringLiteral("host"), node.value(QStringLiteral("host"))},
                                {QStringLiteral("run_dir"), node.value(QStringLiteral("run_dir"))},
                                {QStringLiteral("stopped"), stopped},
                                {QStringLiteral("state"), reply.value(QStringLiteral("state"))},
                                {QStringLiteral("message"), message}});
        if (!parser.isSet("json"))
            std::printf("%s: %s\n", qPrintable(node.value(QStringLiteral("host")).toString()),
                        qPrintable(stopped ? reply.value(QStringLiteral("state")).toString() : message));
    }
    if (parser.isSet("json"))
        std::fputs(schemaJson(QStringLiteral("accel.hosts-stop"), 1,
                              QJsonObject{{QStringLiteral("ok"), allStopped}, {QStringLiteral("nodes"), list}})
                       .constData(),
                   stdout);
    return allStopped ? ExitOk : ExitFailure;
}

} // namespace accel::cli
