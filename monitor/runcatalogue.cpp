#include "monitor/runcatalogue.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace accel::monitor {

namespace {

const QLatin1String kScheme("ssh://");

QString shortened(const QByteArray &output)
{
    const QString text = QString::fromUtf8(output.trimmed());
    return text.size() > 200 ? text.left(200) + QStringLiteral("...") : text;
}

} // namespace

QString remoteRunAddress(const QString &destination, const QString &path)
{
    return kScheme + destination + (path.startsWith(QLatin1Char('/')) ? path : QLatin1Char('/') + path);
}

bool parseRemoteRunAddress(const QString &address, QString *destination, QString *path)
{
    if (!address.startsWith(kScheme))
        return false;
    const qsizetype slash = address.indexOf(QLatin1Char('/'), kScheme.size());
    if (slash <= kScheme.size() || slash + 1 >= address.size())
        return false;
    if (destination)
        *destination = address.mid(kScheme.size(), slash - kScheme.size());
    if (path)
        *path = address.mid(slash);
    return true;
}

Result<QList<RunInfo>> parseRunsListing(const QString &destination, const QByteArray &output)
{
    const std::string context = QStringLiteral("%1: accel runs --json").arg(destination).toStdString();
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(output, &error);
    if (!document.isObject())
        return makeError(ErrorCode::Failed,
                         QStringLiteral("printed no JSON object: '%1'").arg(shortened(output)).toStdString(), context);
    const QJsonObject listing = document.object();
    const QString schema = listing.value(QLatin1String("schema")).toString();
    if (schema != QLatin1String(RunsListingSchema))
        return makeError(
            ErrorCode::Failed,
            QStringLiteral("expected schema %1, got '%2'").arg(QLatin1String(RunsListingSchema), schema).toStdString(),
            context);
    const int version = listing.value(QLatin1String("version")).toInt();
    if (version != RunsListingVersion)
        return makeError(ErrorCode::Unsupported,
                         QStringLiteral("version %1 is %2 than this studio's %3: use accel of the studio's version "
                                        "there")
                             .arg(version)
                             .arg(version > RunsListingVersion ? QStringLiteral("newer") : QStringLiteral("other"))
                             .arg(RunsListingVersion)
                             .toStdString(),
                         context);
    QList<RunInfo> runs;
    for (const QJsonValue &value : listing.value(QLatin1String("runs")).toArray()) {
        const QJsonObject entry = value.toObject();
        RunInfo info;
        info.path = entry.value(QLatin1String("path")).toString();
        if (!info.path.startsWith(QLatin1Char('/')))
            continue; // not a run this studio can follow there
        info.location = destination;
        info.id = entry.value(QLatin1String("id")).toString();
        if (info.id.isEmpty())
            info.id = QFileInfo(info.path).fileName();
        info.name = entry.value(QLatin1String("name")).toString();
        info.state = entry.value(QLatin1String("state")).toString();
        info.host = entry.value(QLatin1String("host")).toString();
        info.created = entry.value(QLatin1String("created")).toDouble();
        QJsonObject settings;
        const QJsonValue processes = entry.value(QLatin1String("num_processes"));
        if (processes.isDouble())
            settings.insert(QStringLiteral("num_processes"), processes);
        info.configSummary = summarizeSettings(settings);
        info.annotations = annotationsFromJson(entry); // display_name, notes, tags (added within version 1)
        info.manifest = entry;
        runs.append(info);
    }
    return runs;
}

} // namespace accel::monitor
