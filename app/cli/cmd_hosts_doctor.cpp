// accel hosts doctor H1,H2,...: the cluster's network pre-flight (cmd_hosts_preflight.h) on its
// own, with a verdict per check and host that names what fails and what to do. `accel hosts
// launch` and `accel launch --hosts` run the same checks before they start anything.
#include "app/cli/cmd_hosts_preflight.h"
#include "app/cli/command.h"

#include "launcher/jsonoutput.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QJsonArray>

#include <cstdio>

namespace accel::cli {

namespace {

using namespace accel::launcher;

const QStringList CheckOrder = {QStringLiteral("accel"), QStringLiteral("interface"), QStringLiteral("listen"),
                                QStringLiteral("reach"), QStringLiteral("allreduce")};

int badInput(const std::string &text)
{
    std::fprintf(stderr, "accel hosts doctor: %s\n", text.c_str());
    return ExitBadInput;
}

void printText(const std::vector<hosts::Verdict> &verdicts, const QStringList &names)
{
    int failed = 0;
    QStringList failures;
    for (const QString &check : CheckOrder) {
        for (const QString &host : names) {
            for (const hosts::Verdict &v : verdicts) {
                if (v.check != check || v.host != host)
                    continue;
                const QString status = v.status == QLatin1String("fail") ? QStringLiteral("FAIL") : v.status;
                std::printf("%-9s %-12s %-7s %s\n", qPrintable(check), qPrintable(host), qPrintable(status),
                            qPrintable(v.message));
                if (!v.fix.isEmpty() && v.status != QLatin1String("ok"))
                    std::printf("%-9s %-12s %-7s what to do: %s\n", "", "", "", qPrintable(v.fix));
                if (v.status == QLatin1String("fail")) {
                    ++failed;
                    failures << QStringLiteral("%1 on %2").arg(check, host);
                }
            }
        }
    }
    if (failed == 0)
        std::printf("doctor: every check passed on %lld host(s)\n", static_cast<long long>(names.size()));
    else
        std::printf("doctor: %d check(s) failed: %s\n", failed, qPrintable(failures.join(QStringLiteral(", "))));
}

} // namespace

int runHostsDoctor(int argc, char **argv)
{
    ArgParser parser("accel hosts doctor",
                     "Network pre-flight of a cluster over SSH, from every node: accel answers there in this "
                     "version, the interface its ranks bind to, machine 0 can listen on the main port, and every "
                     "other node reaches the main address and port.");
    parser.addPositional({"HOSTS", "hosts, comma-separated: ~/.ssh/config aliases or [user@]host[:port]; the first "
                                   "is machine 0"});
    hosts::addMainAddressOptions(parser);
    parser.addValue("connect_timeout", "SECONDS", "limit for each node's connection to the main address", "5");
    parser.addFlag("allreduce", "then the runtime's self-test with one rank per node (all-reduce, broadcast, gather, "
                                "one DDP step), when accel-worker is on every node");
    parser.addValue("allreduce_timeout", "SECONDS", "the self-test's rendezvous and collective limit", "60");
    parser.addFlag("json", "machine-readable output (" + schemaAndVersion(HostsDoctorSchema, HostsDoctorVersion) + ")");
    hosts::addRemoteOptions(parser);
    parser.setEpilog("--remote_env GLOO_SOCKET_IFNAME=IF checks that interface instead of choosing one. Exit "
                     "status: 0 when every check passed (warnings allowed), 1 when one failed, 2 for bad "
                     "arguments. docs/remote.md describes the checks and the JSON.");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        return badInput(parser.error());
    }
    auto names = hosts::hostList({parser.firstPositional("HOSTS").value_or("")});
    if (!names)
        return badInput(names.error().toString());
    auto settings = hosts::remoteSettings(parser);
    if (!settings)
        return badInput(settings.error().toString());
    auto address = hosts::mainAddress(parser, names->first());
    if (!address)
        return badInput(address.error().toString());
    hosts::PreflightOptions options;
    options.mainIp = address->ip;
    options.port = address->port;
    const std::string timeoutText = parser.valueOr("connect_timeout", "5");
    bool numeric = false;
    const double seconds = QString::fromStdString(timeoutText).toDouble(&numeric);
    if (!numeric || !(seconds > 0) || seconds > 600)
        return badInput("--connect_timeout: expected seconds between 0 and 600, got '" + timeoutText + "'");
    options.connectTimeoutMs = static_cast<int>(seconds * 1000);
    options.allreduce = parser.isSet("allreduce");
    const std::string allreduceText = parser.valueOr("allreduce_timeout", "60");
    options.allreduceTimeoutS = QString::fromStdString(allreduceText).toInt(&numeric);
    if (!numeric || options.allreduceTimeoutS < 1 || options.allreduceTimeoutS > 3600)
        return badInput("--allreduce_timeout: expected seconds between 1 and 3600, got '" + allreduceText + "'");

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    QElapsedTimer clock;
    clock.start();
    const hosts::HostGroup group = hosts::makeHosts(*names, *settings);
    const hosts::Preflight result = hosts::runPreflight(group, *names, *settings, options);
    if (parser.isSet("json")) {
        QJsonArray checks;
        for (const QString &check : CheckOrder) {
            for (const hosts::Verdict &v : result.verdicts) {
                if (v.check == check)
                    checks.append(v.toJson());
            }
        }
        const QJsonObject body{{QStringLiteral("accel_version"), QString::fromLatin1(ACCEL_VERSION)},
                               {QStringLiteral("ok"), result.ok()},
                               {QStringLiteral("hosts"), QJsonArray::fromStringList(*names)},
                               {QStringLiteral("main_process_ip"), options.mainIp},
                               {QStringLiteral("main_process_port"), options.port},
                               {QStringLiteral("elapsed_ms"), static_cast<double>(clock.elapsed())},
                               {QStringLiteral("checks"), checks}};
        std::fputs(schemaJson(QLatin1String(HostsDoctorSchema), HostsDoctorVersion, body).constData(), stdout);
    } else {
        printText(result.verdicts, *names);
    }
    return result.ok() ? ExitOk : ExitFailure;
}

} // namespace accel::cli
