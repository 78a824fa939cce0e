#include "app/cli/cmd_hosts_common.h"

#include "core/common/distributeddefaults.h"
#include "core/hardware/reportjson.h"
#include "launcher/hostfactory.h"
#include "launcher/sshsession.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QJsonArray>
#include <QJsonDocument>

#include <cctype>
#include <cstdlib>

namespace accel::cli::hosts {

using namespace accel::launcher;

void addRemoteOptions(ArgParser &parser)
{
    parser.addValue("timeout", "SECONDS", "limit for each SSH step: connecting, logging in, opening a channel", "15");
    parser.addFlag("accept_new_host_key",
                   "record the key of a host not yet in known_hosts (check its fingerprint first); a changed key "
                   "is always refused");
    parser.addValue("remote_accel", "PATH",
                    "accel on the hosts (default: $ACCEL_REMOTE_BIN, else accel on their PATH)");
    parser.addOption(
        {"remote_env", "KEY=VALUE", "environment variable for accel on the hosts (repeatable)", "", 0, true, {}});
}

Result<RemoteSettings> remoteSettings(const ArgParser &parser)
{
    RemoteSettings settings;
    const std::string text = parser.valueOr("timeout", "15");
    char *end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(seconds > 0) || seconds > 3600)
        return makeError(ErrorCode::InvalidInput, "expected seconds between 0 and 3600, got '" + text + "'",
                         "--timeout");
    settings.timeoutMs = static_cast<int>(seconds * 1000);
    settings.acceptNewHostKey = parser.isSet("accept_new_host_key");
    settings.accelProgram = QString::fromStdString(parser.valueOr("remote_accel", ""));
    for (const std::string &entry : parser.values("remote_env")) {
        // KEY a variable name as the shell knows them: a key starting with '-' reached env(1) as an
        // option (-S made it run a command of its own instead of accel).
        const size_t eq = entry.find('=');
        const std::string key = entry.substr(0, eq);
        const bool name = !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
                          key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                              std::string::npos;
        if (eq == std::string::npos || !name)
            return makeError(ErrorCode::InvalidInput,
                             "expected KEY=VALUE with KEY a variable name (letters, digits and _, not starting with a "
                             "digit), got '" +
                                 entry + "'",
                             "--remote_env");
        settings.environment << QString::fromStdString(entry);
    }
    return settings;
}

void addMainAddressOptions(ArgParser &parser)
{
    parser.addValue("main_process_ip", "IP", "address of machine 0 as the others reach it (default: its HostName)");
    parser.addValue("main_process_port", "PORT", "port of rank 0's TCPStore", std::to_string(kDefaultMainProcessPort));
}

Result<MainAddress> mainAddress(const ArgParser &parser, const QString &firstHost)
{
    MainAddress address;
    const std::string portText = parser.valueOr("main_process_port", std::to_string(kDefaultMainProcessPort));
    address.port = QString::fromStdString(portText).toInt();
    if (address.port < 1 || address.port > 65535)
        return makeError(ErrorCode::InvalidInput, "expected 1-65535, got '" + portText + "'", "--main_process_port");
    std::string ip = parser.valueOr("main_process_ip", "");
    if (ip.empty()) {
        auto configured = ssh::configuredHostName(firstHost.toStdString(), {});
        if (!configured)
            return tl::unexpected(configured.error());
        ip = *configured;
    }
    address.ip = QString::fromStdString(ip);
    return address;
}

Result<QStringList> hostList(const std::vector<std::string> &words)
{
    QStringList names;
    for (const std::string &word : words) {
        for (const QString &part : QString::fromStdString(word).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            const QString name = part.trimmed();
            if (!name.isEmpty() && !names.contains(name))
                names << name;
        }
    }
    if (names.isEmpty())
        return makeError(ErrorCode::InvalidInput, "no hosts given: expected H1,H2,... (~/.ssh/config aliases, "
                                                  "[user@]host[:port], or local)");
    return names;
}

HostGroup makeHosts(const QStringList &destinations, const RemoteSettings &settings)
{
    HostGroup group;
    for (const QString &destination : destinations) {
        SshHostOptions options;
        options.destination = destination;
        options.timeoutMs = settings.timeoutMs;
        options.acceptNewHostKey = settings.acceptNewHostKey;
        options.accelProgram = settings.accelProgram;
        group.owned.push_back(makeHost(options));
        group.hosts.push_back(group.owned.back().get());
    }
    return group;
}

std::vector<AccelOutcome> runEverywhere(const std::vector<Host *> &hosts, const std::vector<QStringList> &arguments,
                                        const RemoteSettings &settings, int runTimeoutMs,
                                        const std::vector<QStringList> &environment, const QString &program)
{
    std::vector<AccelOutcome> outcomes(hosts.size());
    std::vector<std::unique_ptr<HostCommand>> commands;
    size_t pending = hosts.size();
    QEventLoop loop;
    for (size_t i = 0; i < hosts.size(); ++i) {
        HostCommandOptions options;
        options.timeoutMs = runTimeoutMs;
        options.program = program;
        options.environment = settings.environment;
        if (i < environment.size())
            options.environment += environment[i];
        commands.push_back(hosts[i]->start(arguments[i], options));
        QObject::connect(commands.back().get(), &HostCommand::done, &loop,
                         [&outcomes, &pending, &loop, i](const AccelOutcome &outcome) {
                             outcomes[i] = outcome;
                             if (--pending == 0)
                                 loop.quit();
                         });
    }
    if (pending > 0)
        loop.exec();
    return outcomes;
}

int forwardToHost(const char *command, const QString &destination, const QStringList &arguments)
{
    int fakeArgc = 1;
    char name[] = "accel";
    char *fakeArgv[] = {name, nullptr};
    std::unique_ptr<QCoreApplication> app;
    if (!QCoreApplication::instance())
        app = std::make_unique<QCoreApplication>(fakeArgc, fakeArgv);
    const RemoteSettings settings;
    const HostGroup group = makeHosts({destination}, settings);
    const AccelOutcome outcome = runEverywhere(group.hosts, {arguments}, settings, 0).front();
    std::fwrite(outcome.standardOutput.constData(), 1, size_t(outcome.standardOutput.size()), stdout);
    std::fwrite(outcome.standardError.constData(), 1, size_t(outcome.standardError.size()), stderr);
    if (!outcome.failedToStart && !outcome.cancelled && !outcome.timedOut && outcome.signal == 0 &&
        outcome.reason.isEmpty())
        return outcome.exitCode;
    const QString why = outcome.describe();
    std::fprintf(stderr, "%s: host %s: %s%s\n", command, destination.toLocal8Bit().constData(),
                 why.toLocal8Bit().constData(),
                 outcome.error.isEmpty() || why.contains(outcome.error)
                     ? ""
                     : (QStringLiteral(": ") + outcome.error).toLocal8Bit().constData());
    return 1;
}

HostCheck judgeHost(const QString &name, const AccelOutcome &outcome)
{
    HostCheck check;
    check.name = name;
    if (!outcome.succeeded()) {
        check.status = outcome.reason.isEmpty() ? QStringLiteral("failed") : outcome.reason;
        check.message = outcome.describe();
        const QString err = QString::fromUtf8(outcome.standardError).trimmed();
        if (outcome.reason.isEmpty() && !err.isEmpty())
            check.message += QStringLiteral(": ") + err.section(QLatin1Char('\n'), -3);
        if (!outcome.hostKeyFingerprint.isEmpty())
            check.hostKey = QJsonObject{{QStringLiteral("type"), outcome.hostKeyType},
                                        {QStringLiteral("fingerprint"), outcome.hostKeyFingerprint},
                                        {QStringLiteral("known_hosts_name"), outcome.knownHostsName},
                                        {QStringLiteral("known_hosts_file"), outcome.knownHostsFile}};
        return check;
    }
    QJsonParseError error{};
    const QJsonObject env = QJsonDocument::fromJson(outcome.standardOutput, &error).object();
    if (error.error != QJsonParseError::NoError ||
        env.value(QStringLiteral("schema")).toString() != QLatin1String(hardware::EnvSchema)) {
        check.status = QStringLiteral("failed");
        check.message = QStringLiteral("`accel env --json` on %1 printed no accel.env report (is that program "
                                       "accel?)")
                            .arg(name);
        return check;
    }
    check.env = env;
    check.remoteVersion = env.value(QStringLiteral("accel_version")).toString();
    if (check.remoteVersion == QLatin1String(ACCEL_VERSION)) {
        check.status = QStringLiteral("ok");
        return check;
    }
    check.status = QStringLiteral("version_mismatch");
    check.message = QStringLiteral("accel %1 on %2, but this is accel %3: install the same version on every host")
                        .arg(check.remoteVersion.isEmpty() ? QStringLiteral("(unknown version)") : check.remoteVersion,
                             name, QString::fromLatin1(ACCEL_VERSION));
    return check;
}

namespace {

bool parseIpv4(const QString &text, quint32 &out)
{
    const QStringList parts = text.split(QLatin1Char('.'));
    if (parts.size() != 4)
        return false;
    out = 0;
    for (const QString &part : parts) {
        bool ok = false;
        const uint value = part.toUInt(&ok);
        if (!ok || value > 255)
            return false;
        out = (out << 8) | value;
    }
    return true;
}

} // namespace

QString interfaceOnSubnet(const QJsonObject &env, const QString &address)
{
    quint32 target = 0;
    if (!parseIpv4(address, target))
        return {};
    for (const QJsonValue &value : env.value(QStringLiteral("network")).toArray()) {
        const QJsonObject interface = value.toObject();
        if (!interface.value(QStringLiteral("up")).toBool() || interface.value(QStringLiteral("loopback")).toBool())
            continue;
        for (const QJsonValue &entry : interface.value(QStringLiteral("addresses")).toArray()) {
            const QJsonObject a = entry.toObject();
            quint32 own = 0;
            const int prefix = a.value(QStringLiteral("prefix_length")).toInt(-1);
            if (a.value(QStringLiteral("family")).toString() != QLatin1String("ipv4") || prefix < 0 || prefix > 32 ||
                !parseIpv4(a.value(QStringLiteral("address")).toString(), own))
                continue;
            const quint32 mask = prefix == 0 ? 0 : ~quint32(0) << (32 - prefix);
            if ((own & mask) == (target & mask))
                return interface.value(QStringLiteral("name")).toString();
        }
    }
    return {};
}

} // namespace accel::cli::hosts
