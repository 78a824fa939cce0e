#include "launcher/clusterrecord.h"

#include "launcher/rundirectory.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace accel::launcher {

namespace {

constexpr qint64 kMaximumRecordBytes = 1 << 20;

} // namespace

QString clusterRecordsDirectory()
{
    return QFileInfo(RunDirectory::defaultRunsRoot()).dir().filePath(QStringLiteral("clusters"));
}

Result<ClusterRecord> readClusterRecord(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return makeError(ErrorCode::NotFound, "cannot read: " + file.errorString().toStdString(), path.toStdString());
    if (file.size() > kMaximumRecordBytes)
        return makeError(ErrorCode::InvalidInput, "larger than a cluster record can be", path.toStdString());
    const QJsonObject record = QJsonDocument::fromJson(file.readAll()).object();
    const QJsonArray nodes = record.value(QLatin1String("nodes")).toArray();
    if (record.value(QLatin1String("schema")).toString() != QLatin1String(ClusterRecordSchema) || nodes.isEmpty())
        return makeError(ErrorCode::InvalidInput,
                         std::string("not a record of accel hosts launch (schema ") + ClusterRecordSchema +
                             " with nodes)",
                         path.toStdString());
    const int version = record.value(QLatin1String("version")).toInt();
    if (version != ClusterRecordVersion)
        return makeError(ErrorCode::InvalidInput,
                         std::string(ClusterRecordSchema) + " version " + std::to_string(version) +
                             "; this accel reads version " + std::to_string(ClusterRecordVersion),
                         path.toStdString());
    ClusterRecord out;
    out.path = path;
    out.created = record.value(QLatin1String("created")).toString();
    for (const QJsonValue &value : nodes) {
        const QJsonObject node = value.toObject();
        out.nodes.append(
            {node.value(QLatin1String("host")).toString(), node.value(QLatin1String("machine_rank")).toInt(),
             node.value(QLatin1String("run_id")).toString(), node.value(QLatin1String("run_dir")).toString()});
    }
    return out;
}

QList<ClusterRecord> recentClusterRecords(int limit, const QString &directory)
{
    const QDir folder(directory.isEmpty() ? clusterRecordsDirectory() : directory);
    QList<ClusterRecord> out;
    const QFileInfoList files =
        folder.entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::NoSymLinks, QDir::Time);
    for (const QFileInfo &file : files) {
        if (out.size() >= limit)
            break;
        if (auto record = readClusterRecord(file.filePath()))
            out.append(*record);
    }
    return out;
}

} // namespace accel::launcher
