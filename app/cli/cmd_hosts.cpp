// accel hosts: the cluster's hosts over SSH (docs/remote.md).
//   check H1,H2,...   reach every host at once, run `accel env --json` there, and report per host
//                     the remote accel version against ours, or what is wrong and what to do.
//   doctor H1,H2,...  the network pre-flight on its own (cmd_hosts_doctor.cpp).
//   launch / stop     one detached supervisor per host (cmd_hosts_launch.cpp).
//   net-listen / net-connect / net-selftest  (hidden) the nodes' parts of the pre-flight's reach
//                     check and all-reduce (cmd_hosts_netprobe.cpp).
#include "app/cli/cmd_hosts_common.h"
#include "app/cli/command.h"

#include "launcher/jsonoutput.h"
#include "launcher/sshsession.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <cstring>

namespace accel::cli {

int runHostsLaunch(int argc, char **argv); // cmd_hosts_launch.cpp
int runHostsStop(int argc, char **argv);
int runHostsDoctor(int argc, char **argv);    // cmd_hosts_doctor.cpp
int runHostsNetListen(int argc, char **argv); // cmd_hosts_netprobe.cpp
int runHostsNetConnect(int argc, char **argv);
int runHostsNetSelftest(int argc, char **argv);
int runHostsInstall(int argc, char **argv); // cmd_hosts_install.cpp

namespace {

using namespace accel::launcher;

QString summary(const QJsonObject &env)
{
    const QJsonObject system = env.value(QStringLiteral("system")).toObject();
    const QJsonObject cpu = env.value(QStringLiteral("cpu")).toObject();
    const QJsonObject memory = env.value(QStringLiteral("memory")).toObject();
    const QJsonArray gpus = env.value(QStringLiteral("gpu")).toObject().value(QStringLiteral("gpus")).toArray();
    const double gib = memory.value(QStringLiteral("total_bytes")).toDouble() / (1024.0 * 1024.0 * 1024.0);
    return QStringLiteral("%1: %2 CPUs, %3 GiB, %4 GPUs")
        .arg(system.value(QStringLiteral("hostname")).toString())
        .arg(cpu.value(QStringLiteral("logical_cpus")).toInt())
        .arg(gib, 0, 'f', 1)
        .arg(gpus.size());
}

int runHostsCheck(int argc, char **argv)
{
    ArgParser parser("accel hosts check", "Check the hosts of a cluster over SSH: reachable, trusted, and running "
                                          "the same accel as this one.");
    parser.addPositional({"HOSTS", "hosts, comma-separated: ~/.ssh/config aliases, [user@]host[:port], or local "
                                   "(this machine, without SSH)"});
    parser.addFlag("json", "machine-readable output (" + schemaAndVersion(HostsCheckSchema, HostsCheckVersion) +
                               "), with each host's accel.env");
    parser.addFlag("python", "let the hosts report their Python packages too (slower)");
    hosts::addRemoteOptions(parser);
    parser.setEpilog("The SSH folder (config, known_hosts, keys) is $ACCEL_SSH_DIR, else $HOME/.ssh. Exit status: 0 "
                     "when every host is ok, 1 when one is not, 2 for bad arguments or a name that cannot be a host "
                     "(status invalid_host).");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel hosts check: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    auto names = hosts::hostList({parser.firstPositional("HOSTS").value_or("")});
    auto settings = hosts::remoteSettings(parser);
    for (const Error *error : {names ? nullptr : &names.error(), settings ? nullptr : &settings.error()}) {
        if (error) {
            std::fprintf(stderr, "accel hosts check: %s\n", error->toString().c_str());
            return ExitBadInput;
        }
    }

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    QStringList envArguments = {QStringLiteral("env"), QStringLiteral("--json")};
    if (!parser.isSet("python"))
        envArguments << QStringLiteral("--no_python");
    // A name that cannot be a host is bad input, reported as such without connecting; the others
    // are checked.
    QStringList reachable;
    std::vector<hosts::HostCheck> checks(static_cast<size_t>(names->size()));
    bool invalidHost = false;
    for (int i = 0; i < names->size(); ++i) {
        checks[static_cast<size_t>(i)].name = names->at(i);
        if (auto checked = ssh::checkDestination(names->at(i).toStdString()); !checked) {
            checks[static_cast<size_t>(i)].status = QStringLiteral("invalid_host");
            checks[static_cast<size_t>(i)].message = QString::fromStdString(checked.error().message);
            invalidHost = true;
        } else {
            reachable << names->at(i);
        }
    }
    const hosts::HostGroup group = hosts::makeHosts(reachable, *settings);
    const std::vector<AccelOutcome> outcomes = hosts::runEverywhere(
        group.hosts, std::vector<QStringList>(group.hosts.size(), envArguments), *settings, settings->timeoutMs * 4);
    bool allOk = !invalidHost;
    size_t next = 0;
    for (hosts::HostCheck &check : checks) {
        if (check.status.isEmpty())
            check = hosts::judgeHost(check.name, outcomes[next++]);
        allOk = allOk && check.status == QLatin1String("ok");
    }
    if (parser.isSet("json")) {
        QJsonArray list;
        for (const hosts::HostCheck &check : checks)
            list.append(QJsonObject{
                {QStringLiteral("host"), check.name},
                {QStringLiteral("status"), check.status},
                {QStringLiteral("message"), check.message},
                {QStringLiteral("accel_version"), check.remoteVersion},
                {QStringLiteral("env"), check.env.isEmpty() ? QJsonValue() : QJsonValue(check.env)},
                {QStringLiteral("host_key"), check.hostKey.isEmpty() ? QJsonValue() : QJsonValue(check.hostKey)}});
        const QJsonObject body{{QStringLiteral("accel_version"), QString::fromLatin1(ACCEL_VERSION)},
                               {QStringLiteral("ok"), allOk},
                               {QStringLiteral("hosts"), list}};
        std::fputs(schemaJson(QLatin1String(HostsCheckSchema), HostsCheckVersion, body).constData(), stdout);
    } else {
        for (const hosts::HostCheck &check : checks) {
            if (check.status == QLatin1String("ok"))
                std::printf("%s: ok, accel %s (%s)\n", qPrintable(check.name), qPrintable(check.remoteVersion),
                            qPrintable(summary(check.env)));
            else
                std::printf("%s: %s: %s\n", qPrintable(check.name), qPrintable(check.status),
                            qPrintable(check.message));
        }
    }
    return invalidHost ? ExitBadInput : allOk ? ExitOk : ExitFailure;
}

void printHostsUsage(FILE *out)
{
    std::fputs("usage: accel hosts <action> [options]\n\n"
               "The cluster's hosts over SSH (docs/remote.md). 'accel hosts <action> --help' for each.\n\n"
               "actions:\n"
               "  check H1,H2,...         reachable, trusted, same accel version (accel env on each)\n"
               "  doctor H1,H2,...        network pre-flight: accel, interface, main port listen and reach\n"
               "  launch H1,H2,... -- ARGS  one detached `accel launch ARGS` per host, machine ranks in order\n"
               "  stop RECORD             stop every node of a run started by `accel hosts launch`\n"
               "  install H1,H2,...       copy this version's packages there and install them (no root needed)\n",
               out);
}

} // namespace

static int runHosts(int argc, char **argv)
{
    if (argc < 2) {
        printHostsUsage(stderr);
        return ExitBadInput;
    }
    const char *action = argv[1];
    if (!std::strcmp(action, "--help") || !std::strcmp(action, "-h")) {
        printHostsUsage(stdout);
        return ExitOk;
    }
    if (!std::strcmp(action, "check"))
        return runHostsCheck(argc - 1, argv + 1);
    if (!std::strcmp(action, "doctor"))
        return runHostsDoctor(argc - 1, argv + 1);
    if (!std::strcmp(action, "net-listen"))
        return runHostsNetListen(argc - 1, argv + 1);
    if (!std::strcmp(action, "net-connect"))
        return runHostsNetConnect(argc - 1, argv + 1);
    if (!std::strcmp(action, "net-selftest"))
        return runHostsNetSelftest(argc - 1, argv + 1);
    if (!std::strcmp(action, "launch"))
        return runHostsLaunch(argc - 1, argv + 1);
    if (!std::strcmp(action, "stop"))
        return runHostsStop(argc - 1, argv + 1);
    if (!std::strcmp(action, "install"))
        return runHostsInstall(argc - 1, argv + 1);
    std::fprintf(stderr, "accel hosts: unknown action '%s': expected check, doctor, launch, stop or install\n\n",
                 action);
    printHostsUsage(stderr);
    return ExitBadInput;
}

static Registrar registrar({"hosts", "Cluster hosts over SSH: check them, network pre-flight, launch on all, stop all",
                            &runHosts});

} // namespace accel::cli
