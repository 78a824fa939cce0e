#include "app/cli/cmd_hosts_preflight.h"

#include "core/hardware/reportjson.h"

#include <QEventLoop>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTimer>

#include <memory>

namespace accel::cli::hosts {

using namespace accel::launcher;

namespace {

constexpr int ListenSlackSeconds = 10; // the listener's own limit beyond the nodes' connect limit

Verdict verdict(const QString &check, const QString &host, const QString &status, const QString &message,
                const QString &fix = {}, const QJsonObject &details = {})
{
    return Verdict{check, host, status, message, fix, details};
}

QJsonObject lastJsonLine(const QByteArray &output)
{
    const QList<QByteArray> lines = output.trimmed().split('\n');
    return QJsonDocument::fromJson(lines.isEmpty() ? QByteArray() : lines.last()).object();
}

// (a) accel answers on the host, in our version. Returns its accel.env report when it does.
QJsonObject checkAccel(const QString &host, const AccelOutcome &probe, std::vector<Verdict> &out)
{
    const QJsonObject env = QJsonDocument::fromJson(probe.standardOutput).object();
    const QString version = env.value(QStringLiteral("accel_version")).toString();
    if (!probe.succeeded() || env.value(QStringLiteral("schema")).toString() != QLatin1String(hardware::EnvSchema)) {
        QString message = QStringLiteral("pre-flight (accel env) failed: ") + probe.describe();
        const QString err = QString::fromUtf8(probe.standardError).trimmed().section(QLatin1Char('\n'), -1);
        if (probe.reason.isEmpty() && !err.isEmpty())
            message += QStringLiteral(": ") + err;
        out.push_back(verdict(QStringLiteral("accel"), host, QStringLiteral("fail"), message,
                              QStringLiteral("run `accel hosts check %1` for what to do").arg(host),
                              {{QStringLiteral("reason"), probe.reason}}));
        return {};
    }
    if (version != QLatin1String(ACCEL_VERSION)) {
        out.push_back(verdict(QStringLiteral("accel"), host, QStringLiteral("fail"),
                              QStringLiteral("accel %1 on %2, but this is accel %3")
                                  .arg(version, host, QString::fromLatin1(ACCEL_VERSION)),
                              QStringLiteral("install the same version on every host"),
                              {{QStringLiteral("accel_version"), version}}));
        return {};
    }
    const QString hostname =
        env.value(QStringLiteral("system")).toObject().value(QStringLiteral("hostname")).toString();
    out.push_back(verdict(QStringLiteral("accel"), host, QStringLiteral("ok"),
                          QStringLiteral("accel %1 on %2 (%3)").arg(version, host, hostname), {},
                          {{QStringLiteral("accel_version"), version}, {QStringLiteral("hostname"), hostname}}));
    return env;
}

struct InterfaceFacts {
    bool exists = false;
    bool up = false;
    bool loopback = false;
    QStringList ipv4; // "10.0.0.5/24"
};

InterfaceFacts interfaceFacts(const QJsonObject &env, const QString &name)
{
    InterfaceFacts facts;
    for (const QJsonValue &value : env.value(QStringLiteral("network")).toArray()) {
        const QJsonObject interface = value.toObject();
        if (interface.value(QStringLiteral("name")).toString() != name)
            continue;
        facts.exists = true;
        facts.up = interface.value(QStringLiteral("up")).toBool();
        facts.loopback = interface.value(QStringLiteral("loopback")).toBool();
        for (const QJsonValue &entry : interface.value(QStringLiteral("addresses")).toArray()) {
            const QJsonObject a = entry.toObject();
            if (a.value(QStringLiteral("family")).toString() == QLatin1String("ipv4"))
                facts.ipv4 << QStringLiteral("%1/%2")
                                  .arg(a.value(QStringLiteral("address")).toString())
                                  .arg(a.value(QStringLiteral("prefix_length")).toInt());
        }
    }
    return facts;
}

QStringList interfaceNames(const QJsonObject &env)
{
    QStringList names;
    for (const QJsonValue &value : env.value(QStringLiteral("network")).toArray())
        names << value.toObject().value(QStringLiteral("name")).toString();
    return names;
}

// (b) with GLOO_SOCKET_IFNAME given by the user: every interface it names exists on the host, is
// up and has an IPv4 address, and is not loopback when the main address is not.
Verdict checkChosenInterface(const QString &host, const QJsonObject &env, const QString &chosen, const QString &mainIp)
{
    const QString onSubnet = interfaceOnSubnet(env, mainIp);
    const QString instead =
        onSubnet.isEmpty()
            ? QStringLiteral("name one of %1's interfaces (%2)")
                  .arg(host, interfaceNames(env).join(QStringLiteral(", ")))
            : QStringLiteral("leave GLOO_SOCKET_IFNAME out so that %1 (on %2's subnet) is used").arg(onSubnet, mainIp);
    const QJsonObject details{{QStringLiteral("interface"), chosen},
                              {QStringLiteral("source"), QStringLiteral("user")}};
    for (const QString &name : chosen.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const InterfaceFacts facts = interfaceFacts(env, name);
        QString problem;
        if (!facts.exists)
            problem = QStringLiteral("names no interface of %1").arg(host);
        else if (!facts.up)
            problem = QStringLiteral("names interface %1 of %2, which is down").arg(name, host);
        else if (facts.ipv4.isEmpty())
            problem = QStringLiteral("names interface %1 of %2, which has no IPv4 address").arg(name, host);
        else if (facts.loopback && !mainIp.startsWith(QLatin1String("127.")))
            problem = QStringLiteral("names %1's loopback interface %2: the other nodes cannot reach ranks bound there")
                          .arg(host, name);
        if (!problem.isEmpty())
            return verdict(QStringLiteral("interface"), host, QStringLiteral("fail"),
                           QStringLiteral("GLOO_SOCKET_IFNAME=%1 %2").arg(chosen, problem), instead, details);
    }
    return verdict(QStringLiteral("interface"), host, QStringLiteral("ok"),
                   QStringLiteral("%1's ranks bind to %2 (GLOO_SOCKET_IFNAME given)").arg(host, chosen), {}, details);
}

// (b) the interface of the host on the main address's subnet, for its ranks' GLOO_/NCCL_SOCKET_IFNAME.
Verdict chooseInterface(const QString &host, const QJsonObject &env, const QString &mainIp, QString &chosen)
{
    chosen = interfaceOnSubnet(env, mainIp);
    if (!chosen.isEmpty())
        return verdict(QStringLiteral("interface"), host, QStringLiteral("ok"),
                       QStringLiteral("%1 (%2) of %3 is on %4's subnet: its ranks get GLOO_SOCKET_IFNAME and "
                                      "NCCL_SOCKET_IFNAME=%1")
                           .arg(chosen, interfaceFacts(env, chosen).ipv4.join(QStringLiteral(", ")), host, mainIp),
                       {},
                       {{QStringLiteral("interface"), chosen}, {QStringLiteral("source"), QStringLiteral("subnet")}});
    if (mainIp.startsWith(QLatin1String("127.")))
        return verdict(QStringLiteral("interface"), host, QStringLiteral("ok"),
                       QStringLiteral("main address %1 is loopback: every node is this machine").arg(mainIp), {},
                       {{QStringLiteral("interface"), QString()}, {QStringLiteral("source"), QStringLiteral("none")}});
    return verdict(QStringLiteral("interface"), host, QStringLiteral("warn"),
                   QStringLiteral("note: no interface of %1 is on the subnet of %2; its ranks bind to the address its "
                                  "host name resolves to")
                       .arg(host, mainIp),
                   QStringLiteral("if they cannot connect, name the interface: --remote_env GLOO_SOCKET_IFNAME=... "
                                  "(%1 has %2)")
                       .arg(host, interfaceNames(env).join(QStringLiteral(", "))),
                   {{QStringLiteral("interface"), QString()}, {QStringLiteral("source"), QStringLiteral("none")}});
}

// `accel hosts net-listen` on machine 0. Its output and end are collected for as long as it
// lives; `waiting`, when set, is the event loop to wake on news.
struct Listener {
    std::unique_ptr<HostCommand> command;
    QObject context;
    QEventLoop *waiting = nullptr;
    QByteArray output;
    bool listening = false;
    bool finished = false;
    AccelOutcome outcome;
};

// Starts the listener; its news arrive while any event loop runs.
void startListener(Listener &listener, Host *host, const RemoteSettings &settings, const PreflightOptions &options,
                   int expect)
{
    HostCommandOptions commandOptions;
    commandOptions.environment = settings.environment;
    const int seconds = (options.connectTimeoutMs + settings.timeoutMs) / 1000 + ListenSlackSeconds;
    commandOptions.timeoutMs = settings.timeoutMs * 2 + seconds * 1000;
    listener.command = host->start({QStringLiteral("hosts"), QStringLiteral("net-listen"), QStringLiteral("--port"),
                                    QString::number(options.port), QStringLiteral("--expect"), QString::number(expect),
                                    QStringLiteral("--seconds"), QString::number(seconds)},
                                   commandOptions);
    QObject::connect(listener.command.get(), &HostCommand::outputReceived, &listener.context,
                     [&listener](const QByteArray &out, const QByteArray &) {
                         listener.output += out;
                         if (!listener.listening && listener.output.contains("\"listening\"")) {
                             listener.listening = true;
                             if (listener.waiting)
                                 listener.waiting->quit();
                         }
                     });
    QObject::connect(listener.command.get(), &HostCommand::done, &listener.context,
                     [&listener](const AccelOutcome &outcome) {
                         listener.finished = true;
                         listener.outcome = outcome;
                         if (listener.waiting)
                             listener.waiting->quit();
                     });
}

// Waits until the listener listens or ends.
void waitListening(Listener &listener)
{
    if (listener.listening || listener.finished)
        return;
    QEventLoop loop;
    listener.waiting = &loop;
    loop.exec();
    listener.waiting = nullptr;
}

// Waits for the listener to end by itself (when every node reached it) for a moment, then stops it.
void stopListener(Listener &listener, bool everyNodeReached)
{
    if (listener.finished)
        return;
    QEventLoop loop;
    listener.waiting = &loop;
    QTimer::singleShot(everyNodeReached ? 2000 : 0, &loop, [&listener] { listener.command->cancel(); });
    loop.exec();
    listener.waiting = nullptr;
}

Verdict listenVerdict(const QString &host, const Listener &listener, const PreflightOptions &options)
{
    const QJsonObject details{{QStringLiteral("port"), options.port}};
    if (listener.listening)
        return verdict(QStringLiteral("listen"), host, QStringLiteral("ok"),
                       QStringLiteral("%1 listens on port %2 (all addresses), as rank 0's TCPStore will")
                           .arg(host)
                           .arg(options.port),
                       {}, details);
    const QJsonObject reply = lastJsonLine(listener.outcome.standardOutput);
    if (reply.value(QStringLiteral("in_use")).toBool())
        return verdict(QStringLiteral("listen"), host, QStringLiteral("fail"),
                       QStringLiteral("on %1: %2").arg(host, reply.value(QStringLiteral("error")).toString()),
                       QStringLiteral("choose another --main_process_port, or stop what holds port %1 on %2")
                           .arg(options.port)
                           .arg(host),
                       details);
    QString message = reply.value(QStringLiteral("error")).toString();
    if (message.isEmpty())
        message = listener.outcome.describe() + QStringLiteral(": ") +
                  QString::fromUtf8(listener.outcome.standardError).trimmed().section(QLatin1Char('\n'), -1);
    return verdict(QStringLiteral("listen"), host, QStringLiteral("fail"),
                   QStringLiteral("%1 cannot listen on port %2: %3").arg(host).arg(options.port).arg(message),
                   QStringLiteral("choose another --main_process_port"), details);
}

// (c) what one node's `accel hosts net-connect` found.
Verdict reachVerdict(const QString &host, const QString &mainHost, const AccelOutcome &outcome,
                     const PreflightOptions &options)
{
    const QString target = QStringLiteral("%1:%2").arg(options.mainIp).arg(options.port);
    const QJsonObject reply = lastJsonLine(outcome.standardOutput);
    QJsonObject details{{QStringLiteral("address"), options.mainIp},
                        {QStringLiteral("port"), options.port},
                        {QStringLiteral("error_kind"), reply.value(QStringLiteral("error_kind"))},
                        {QStringLiteral("local_address"), reply.value(QStringLiteral("local_address"))},
                        {QStringLiteral("elapsed_ms"), reply.value(QStringLiteral("elapsed_ms"))}};
    if (reply.value(QStringLiteral("event")).toString() != QLatin1String("connect"))
        return verdict(QStringLiteral("reach"), host, QStringLiteral("fail"),
                       QStringLiteral("%1 could not run the reach check: %2").arg(host, outcome.describe()),
                       QStringLiteral("run `accel hosts check %1`").arg(host), details);
    if (reply.value(QStringLiteral("ok")).toBool()) {
        const QString from = reply.value(QStringLiteral("local_address")).toString();
        return verdict(QStringLiteral("reach"), host, QStringLiteral("ok"),
                       QStringLiteral("%1 reaches %2 (%3) from %4 in %5 ms")
                           .arg(host, target, mainHost, from)
                           .arg(reply.value(QStringLiteral("elapsed_ms")).toDouble()),
                       {}, details);
    }
    const QString kind = reply.value(QStringLiteral("error_kind")).toString();
    const QString error = reply.value(QStringLiteral("error")).toString();
    const QString message = QStringLiteral("%1 cannot reach %2 (%3, machine 0): %4").arg(host, target, mainHost, error);
    QString fix;
    if (kind == QLatin1String("timeout") || kind == QLatin1String("denied"))
        fix = QStringLiteral("a firewall on %1 or between the nodes blocks TCP port %2: open it for the cluster's "
                             "nodes (gloo and NCCL also connect between ranks on ports they pick: allow the cluster's "
                             "subnet)")
                  .arg(mainHost)
                  .arg(options.port);
    else if (kind == QLatin1String("unreachable"))
        fix = QStringLiteral("%1 has no route to %2: give --main_process_ip an address of %3 that %1 reaches, or "
                             "fix %1's routes")
                  .arg(host, options.mainIp, mainHost);
    else if (kind == QLatin1String("refused"))
        fix = QStringLiteral("%1 is not where %2's listener is, or a firewall rejects port %3: check "
                             "--main_process_ip")
                  .arg(options.mainIp, mainHost)
                  .arg(options.port);
    else if (kind == QLatin1String("resolve"))
        fix = QStringLiteral("%1 cannot resolve %2: give --main_process_ip as an address").arg(host, options.mainIp);
    else
        fix = QStringLiteral("check --main_process_ip and the network between %1 and %2").arg(host, mainHost);
    return verdict(QStringLiteral("reach"), host, QStringLiteral("fail"), message, fix, details);
}

// (d) the runtime's self-test across the nodes, one rank each, when every node has accel-worker.
void checkAllReduce(const HostGroup &group, const QStringList &names, const RemoteSettings &settings,
                    const PreflightOptions &options, Preflight &result)
{
    const size_t count = group.hosts.size();
    auto everyHost = [&](const QString &status, const QString &message) {
        for (const QString &host : names)
            result.verdicts.push_back(verdict(QStringLiteral("allreduce"), host, status, message));
    };
    if (!result.ok())
        return everyHost(QStringLiteral("skipped"), QStringLiteral("an earlier check failed"));
    const std::vector<AccelOutcome> probes =
        runEverywhere(group.hosts,
                      std::vector<QStringList>(
                          count, {QStringLiteral("hosts"), QStringLiteral("net-selftest"), QStringLiteral("--probe")}),
                      settings, settings.timeoutMs * 2);
    QStringList missing;
    for (size_t i = 0; i < count; ++i) {
        if (!lastJsonLine(probes[i].standardOutput).value(QStringLiteral("worker")).toBool())
            missing << names.at(static_cast<int>(i));
    }
    if (!missing.isEmpty())
        return everyHost(QStringLiteral("skipped"),
                         QStringLiteral("accel-worker (the libtorch runtime) is not on %1; the all-reduce needs it on "
                                        "every node")
                             .arg(missing.join(QStringLiteral(", "))));
    std::vector<QStringList> arguments;
    for (size_t i = 0; i < count; ++i)
        arguments.push_back({QStringLiteral("hosts"), QStringLiteral("net-selftest"), QStringLiteral("--num_machines"),
                             QString::number(count), QStringLiteral("--machine_rank"), QString::number(i),
                             QStringLiteral("--main_process_ip"), options.mainIp, QStringLiteral("--main_process_port"),
                             QString::number(options.port), QStringLiteral("--timeout"),
                             QString::number(options.allreduceTimeoutS)});
    const std::vector<AccelOutcome> runs =
        runEverywhere(group.hosts, arguments, settings,
                      settings.timeoutMs * 2 + (options.allreduceTimeoutS + 40) * 1000, result.environment);
    for (size_t i = 0; i < count; ++i) {
        const QString &host = names.at(static_cast<int>(i));
        const QJsonObject reply = lastJsonLine(runs[i].standardOutput);
        const QJsonObject details{{QStringLiteral("state"), reply.value(QStringLiteral("state"))},
                                  {QStringLiteral("machine_rank"), static_cast<int>(i)}};
        if (reply.value(QStringLiteral("ok")).toBool()) {
            result.verdicts.push_back(verdict(
                QStringLiteral("allreduce"), host, QStringLiteral("ok"),
                QStringLiteral("the runtime's self-test passed on %1 (rank %2 of %3: rendezvous at %4:%5, all-reduce, "
                               "broadcast, gather, one DDP step)")
                    .arg(host)
                    .arg(i)
                    .arg(count)
                    .arg(options.mainIp)
                    .arg(options.port),
                {}, details));
            continue;
        }
        QString error = reply.value(QStringLiteral("error")).toString();
        if (reply.isEmpty())
            error = runs[i].describe() + QStringLiteral(": ") +
                    QString::fromUtf8(runs[i].standardError).trimmed().section(QLatin1Char('\n'), -1);
        result.verdicts.push_back(verdict(
            QStringLiteral("allreduce"), host, QStringLiteral("fail"),
            QStringLiteral("the runtime's self-test failed on %1 (%2): %3")
                .arg(host, reply.value(QStringLiteral("state")).toString(QStringLiteral("no run")), error),
            QStringLiteral("gloo and NCCL connect between ranks on ports they pick: let the nodes reach each other on "
                           "all TCP ports, over the interface the ranks bind to"),
            details));
    }
}

} // namespace

QJsonObject Verdict::toJson() const
{
    return {{QStringLiteral("check"), check},     {QStringLiteral("host"), host}, {QStringLiteral("status"), status},
            {QStringLiteral("message"), message}, {QStringLiteral("fix"), fix},   {QStringLiteral("details"), details}};
}

bool Preflight::ok() const
{
    for (const Verdict &v : verdicts) {
        if (v.status == QLatin1String("fail"))
            return false;
    }
    return true;
}

QString Preflight::summaryFor(const QString &host) const
{
    for (const QString &status : {QStringLiteral("fail"), QStringLiteral("warn")}) {
        for (const Verdict &v : verdicts) {
            if (v.host == host && v.status == status)
                return v.fix.isEmpty() || status == QLatin1String("warn") ? v.message
                                                                          : v.message + QStringLiteral("; ") + v.fix;
        }
    }
    return {};
}

Preflight runPreflight(const HostGroup &group, const QStringList &names, const RemoteSettings &settings,
                       const PreflightOptions &options)
{
    Preflight result;
    const size_t count = group.hosts.size();
    result.socketInterface.assign(count, {});
    result.environment.assign(count, {});
    const QStringList envArguments = {QStringLiteral("env"), QStringLiteral("--json"), QStringLiteral("--no_python"),
                                      QStringLiteral("--no_gpu"), QStringLiteral("--no_worker")};
    // Machine 0's listener starts beside the accel env probes (it saves a round trip); it is
    // stopped again when accel on machine 0 does not answer.
    Listener listener;
    startListener(listener, group.hosts[0], settings, options, static_cast<int>(count) - 1);
    const std::vector<AccelOutcome> probes =
        runEverywhere(group.hosts, std::vector<QStringList>(count, envArguments), settings, settings.timeoutMs * 4);

    QString userInterface; // GLOO_SOCKET_IFNAME from --remote_env, the last one wins as in env(1)
    for (const QString &entry : settings.environment) {
        if (entry.startsWith(QLatin1String("GLOO_SOCKET_IFNAME=")))
            userInterface = entry.section(QLatin1Char('='), 1);
    }
    std::vector<bool> answered(count, false);
    for (size_t i = 0; i < count; ++i) {
        const QString &host = names.at(static_cast<int>(i));
        const QJsonObject env = checkAccel(host, probes[i], result.verdicts);
        answered[i] = !env.isEmpty();
        if (!answered[i]) {
            result.verdicts.push_back(verdict(QStringLiteral("interface"), host, QStringLiteral("skipped"),
                                              QStringLiteral("accel did not answer on %1").arg(host)));
            continue;
        }
        if (!userInterface.isEmpty()) {
            result.verdicts.push_back(checkChosenInterface(host, env, userInterface, options.mainIp));
            continue;
        }
        QString chosen;
        result.verdicts.push_back(chooseInterface(host, env, options.mainIp, chosen));
        result.socketInterface[i] = chosen;
        if (!chosen.isEmpty())
            result.environment[i] << QStringLiteral("GLOO_SOCKET_IFNAME=") + chosen
                                  << QStringLiteral("NCCL_SOCKET_IFNAME=") + chosen;
    }

    // (c) machine 0 listens on the main port; every other node that answered connects to it.
    const QString &mainHost = names.first();
    if (!answered[0]) {
        stopListener(listener, false);
        for (size_t i = 0; i < count; ++i)
            result.verdicts.push_back(verdict(i == 0 ? QStringLiteral("listen") : QStringLiteral("reach"),
                                              names.at(static_cast<int>(i)), QStringLiteral("skipped"),
                                              QStringLiteral("accel did not answer on %1 (machine 0)").arg(mainHost)));
        return result;
    }
    std::vector<Host *> connecting;
    QStringList connectingNames;
    for (size_t i = 1; i < count; ++i) {
        if (answered[i]) {
            connecting.push_back(group.hosts[i]);
            connectingNames << names.at(static_cast<int>(i));
        } else {
            result.verdicts.push_back(verdict(QStringLiteral("reach"), names.at(static_cast<int>(i)),
                                              QStringLiteral("skipped"),
                                              QStringLiteral("accel did not answer on %1").arg(names.at(int(i)))));
        }
    }
    waitListening(listener);
    result.verdicts.push_back(listenVerdict(mainHost, listener, options));
    if (!listener.listening) {
        for (const QString &host : connectingNames)
            result.verdicts.push_back(verdict(
                QStringLiteral("reach"), host, QStringLiteral("skipped"),
                QStringLiteral("nothing listens on %1's port %2 to connect to").arg(mainHost).arg(options.port)));
        return result;
    }
    const QStringList connectArguments = {QStringLiteral("hosts"),        QStringLiteral("net-connect"),
                                          QStringLiteral("--address"),    options.mainIp,
                                          QStringLiteral("--port"),       QString::number(options.port),
                                          QStringLiteral("--timeout_ms"), QString::number(options.connectTimeoutMs)};
    const std::vector<AccelOutcome> reached =
        runEverywhere(connecting, std::vector<QStringList>(connecting.size(), connectArguments), settings,
                      settings.timeoutMs * 2 + options.connectTimeoutMs);
    bool everyNodeReached = true;
    for (size_t i = 0; i < reached.size(); ++i) {
        result.verdicts.push_back(reachVerdict(connectingNames.at(static_cast<int>(i)), mainHost, reached[i], options));
        everyNodeReached = everyNodeReached && result.verdicts.back().status == QLatin1String("ok");
    }
    stopListener(listener, everyNodeReached && count > 1 && connecting.size() == count - 1);
    if (options.allreduce)
        checkAllReduce(group, names, settings, options, result);
    return result;
}

} // namespace accel::cli::hosts
