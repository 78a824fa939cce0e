#include "app/studio/cluster/clusterreports.h"

#include "core/hardware/reportjson.h"
#include "launcher/jsonoutput.h"
#include "launcher/sshsession.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QObject>

namespace accel::app {

namespace {

QString text(const QJsonObject &object, const char *key)
{
    return object.value(QLatin1String(key)).toString();
}

// The body of a `schema` document of `version`, or why the output is not one.
Result<QJsonObject> document(const QByteArray &output, const char *schema, int version, const char *command)
{
    QJsonParseError error{};
    const QJsonDocument json = QJsonDocument::fromJson(output, &error);
    const QJsonObject object = json.object();
    if (error.error != QJsonParseError::NoError || !json.isObject()) {
        QString start = QString::fromUtf8(output.left(200)).trimmed();
        return makeError(ErrorCode::Failed,
                         "printed no JSON" +
                             (start.isEmpty() ? std::string(" (nothing)") : ": '" + start.toStdString() + "'"),
                         command);
    }
    if (text(object, "schema") != QLatin1String(schema))
        return makeError(
            ErrorCode::Failed,
            "expected schema " + std::string(schema) + ", got '" + text(object, "schema").toStdString() + "'", command);
    if (object.value(QStringLiteral("version")).toInt() != version)
        return makeError(ErrorCode::Unsupported,
                         "schema " + std::string(schema) + " version " +
                             std::to_string(object.value(QStringLiteral("version")).toInt()) +
                             " is newer than this studio reads (" + std::to_string(version) +
                             "): use the accel of this studio's version",
                         command);
    return object;
}

ClusterNode node(const QJsonObject &object)
{
    ClusterNode node;
    node.host = text(object, "host");
    node.machineRank = object.value(QStringLiteral("machine_rank")).toInt();
    node.started = object.value(QStringLiteral("started")).toBool();
    node.runId = text(object, "run_id");
    node.runDir = text(object, "run_dir");
    node.socketInterface = text(object, "socket_ifname");
    node.message = text(object, "message");
    node.stopped = object.value(QStringLiteral("stopped")).toBool();
    node.state = text(object, "state");
    return node;
}

std::vector<ClusterNode> nodes(const QJsonObject &body)
{
    std::vector<ClusterNode> list;
    for (const QJsonValue &value : body.value(QStringLiteral("nodes")).toArray())
        list.push_back(node(value.toObject()));
    return list;
}

} // namespace

QString HostKeyInfo::removeCommand() const
{
    launcher::ssh::HostKeyCheck check;
    check.knownHostsName = knownHostsName.toStdString();
    check.knownHostsFile = knownHostsFile.toStdString();
    return QString::fromStdString(check.removeCommand());
}

QString whatToDo(const HostCheck &check, const QString &localVersion)
{
    const QString &status = check.status;
    const QString &host = check.host;
    if (status == QLatin1String("ok"))
        return {};
    if (status == QLatin1String("accel_not_found"))
        return QObject::tr("Install accel %1 there: \"Install accel here\" copies this version's packages to %2 "
                           "and installs them under ~/.local without root (accel hosts install %2). Or install it "
                           "where its login shell finds it (PATH), or set ACCEL_REMOTE_BIN to its path there "
                           "before starting the studio.")
            .arg(localVersion, host);
    if (status == QLatin1String("version_mismatch"))
        return QObject::tr("Install accel %1 (this studio's version) on %2: every host of a cluster runs the same "
                           "version. \"Install accel here\" does it without root (accel hosts install %2).")
            .arg(localVersion, host);
    if (status == QLatin1String("unreachable"))
        return QObject::tr("Check the host name (or its HostName in ~/.ssh/config), that sshd runs on %1 and that "
                           "no firewall blocks its SSH port.")
            .arg(host);
    if (status == QLatin1String("login_refused"))
        return QObject::tr("Authorise your public key on %1 (ssh-copy-id %1), or load the key that is authorised "
                           "there into ssh-agent (ssh-add). Passwords are never asked for.")
            .arg(host);
    if (status == QLatin1String("host_key_unknown"))
        return QObject::tr("Compare the key's fingerprint with the host's own (ssh-keygen -lf "
                           "/etc/ssh/ssh_host_*_key.pub on %1), then accept it.")
            .arg(host);
    if (status == QLatin1String("host_key_changed"))
        return QObject::tr("Refused: the host offers another key than the one recorded. Find out why before "
                           "connecting; if the change is expected, remove the old key (%1) and check again.")
            .arg(check.hostKey ? check.hostKey->removeCommand() : QStringLiteral("ssh-keygen -R"));
    if (status == QLatin1String("timeout"))
        return QObject::tr("%1 did not answer in time: check the network between here and the host.").arg(host);
    if (status == QLatin1String("connection_lost"))
        return QObject::tr("The connection to %1 dropped: check again.").arg(host);
    return QObject::tr("See the message above; `accel hosts check %1` in a terminal says the same.").arg(host);
}

Result<HostsCheckReport> parseHostsCheck(const QByteArray &output)
{
    auto body = document(output, launcher::HostsCheckSchema, launcher::HostsCheckVersion, "accel hosts check");
    if (!body)
        return tl::unexpected(body.error());
    HostsCheckReport report;
    report.accelVersion = text(*body, "accel_version");
    report.ok = body->value(QStringLiteral("ok")).toBool();
    for (const QJsonValue &value : body->value(QStringLiteral("hosts")).toArray()) {
        const QJsonObject object = value.toObject();
        HostCheck check;
        check.host = text(object, "host");
        check.status = text(object, "status");
        check.message = text(object, "message");
        check.accelVersion = text(object, "accel_version");
        const QJsonValue env = object.value(QStringLiteral("env"));
        if (env.isObject()) {
            auto parsed = hardware::reportFromJson(QJsonDocument(env.toObject()).toJson().toStdString());
            if (parsed)
                check.report = *parsed;
            else if (check.ok()) // an ok host whose report cannot be read is not ok here
                check = HostCheck{check.host,
                                  QStringLiteral("failed"),
                                  QStringLiteral("its accel.env report cannot be read: %1")
                                      .arg(QString::fromStdString(parsed.error().toString())),
                                  check.accelVersion,
                                  std::nullopt,
                                  std::nullopt};
        }
        const QJsonObject key = object.value(QStringLiteral("host_key")).toObject();
        if (!key.isEmpty())
            check.hostKey = HostKeyInfo{text(key, "type"), text(key, "fingerprint"), text(key, "known_hosts_name"),
                                        text(key, "known_hosts_file")};
        report.hosts.push_back(std::move(check));
    }
    return report;
}

Result<DoctorReport> parseDoctor(const QByteArray &output)
{
    auto body = document(output, launcher::HostsDoctorSchema, launcher::HostsDoctorVersion, "accel hosts doctor");
    if (!body)
        return tl::unexpected(body.error());
    DoctorReport report;
    report.ok = body->value(QStringLiteral("ok")).toBool();
    report.mainIp = text(*body, "main_process_ip");
    report.mainPort = body->value(QStringLiteral("main_process_port")).toInt();
    for (const QJsonValue &value : body->value(QStringLiteral("checks")).toArray()) {
        const QJsonObject object = value.toObject();
        report.checks.push_back(DoctorCheck{text(object, "check"), text(object, "host"), text(object, "status"),
                                            text(object, "message"), text(object, "fix")});
    }
    return report;
}

Result<ClusterLaunchReport> parseHostsLaunch(const QByteArray &output)
{
    auto body = document(output, launcher::HostsLaunchSchema, launcher::HostsLaunchVersion, "accel launch --hosts");
    if (!body)
        return tl::unexpected(body.error());
    ClusterLaunchReport report;
    report.ok = body->value(QStringLiteral("ok")).toBool();
    report.record = text(*body, "record");
    report.mainIp = text(*body, "main_process_ip");
    report.mainPort = body->value(QStringLiteral("main_process_port")).toInt();
    report.nodes = nodes(*body);
    return report;
}

Result<ClusterStopReport> parseHostsStop(const QByteArray &output)
{
    auto body = document(output, launcher::HostsStopSchema, launcher::HostsStopVersion, "accel hosts stop");
    if (!body)
        return tl::unexpected(body.error());
    ClusterStopReport report;
    report.ok = body->value(QStringLiteral("ok")).toBool();
    report.nodes = nodes(*body);
    return report;
}

bool offersInstall(const HostCheck &check)
{
    return check.status == QLatin1String("accel_not_found") || check.status == QLatin1String("version_mismatch");
}

Result<HostsInstallReport> parseHostsInstall(const QByteArray &output)
{
    auto body = document(output, launcher::HostsInstallSchema, launcher::HostsInstallVersion, "accel hosts install");
    if (!body)
        return tl::unexpected(body.error());
    HostsInstallReport report;
    report.ok = body->value(QStringLiteral("ok")).toBool();
    for (const QJsonValue &value : body->value(QStringLiteral("packages")).toArray())
        report.packages << value.toString();
    for (const QJsonValue &value : body->value(QStringLiteral("hosts")).toArray()) {
        const QJsonObject object = value.toObject();
        report.hosts.push_back(
            {text(object, "host"), text(object, "status"), text(object, "message"), text(object, "prefix")});
    }
    return report;
}

} // namespace accel::app
