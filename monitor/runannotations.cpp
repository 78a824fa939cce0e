#include "monitor/runannotations.h"

#include "monitor/runpath.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

namespace accel::monitor {

namespace {

constexpr int kVersion = 1;
constexpr qsizetype kMaximumTag = 64;
constexpr qsizetype kMaximumName = 200;
constexpr std::size_t kMaximumAnnotationsBytes = 1u << 20;
const QLatin1String kSchema("accel.run-annotations");

} // namespace

QJsonObject annotationsToJson(const RunAnnotations &annotations)
{
    return QJsonObject{{QStringLiteral("schema"), kSchema},
                       {QStringLiteral("version"), kVersion},
                       {QStringLiteral("display_name"), annotations.displayName},
                       {QStringLiteral("notes"), annotations.notes},
                       {QStringLiteral("tags"), QJsonArray::fromStringList(annotations.tags)}};
}

RunAnnotations annotationsFromJson(const QJsonObject &object)
{
    RunAnnotations annotations;
    annotations.displayName = object.value(QLatin1String("display_name")).toString().trimmed();
    annotations.notes = object.value(QLatin1String("notes")).toString();
    for (const QJsonValue &value : object.value(QLatin1String("tags")).toArray()) {
        const auto tag = checkTag(value.toString());
        if (tag && !annotations.tags.contains(*tag))
            annotations.tags.append(*tag);
    }
    return annotations;
}

Result<RunAnnotations> readRunAnnotations(const QString &runDirectory)
{
    const QString path = QDir(runDirectory).filePath(QLatin1String(rundir::file::Annotations));
    if (!QFileInfo(path).isSymLink() && !QFileInfo::exists(path))
        return RunAnnotations{};
    const auto text =
        rundir::readRunFile(runDirectoryPath(runDirectory), rundir::file::Annotations, kMaximumAnnotationsBytes);
    if (!text)
        return tl::unexpected(text.error());
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(*text));
    if (!document.isObject())
        return makeError(ErrorCode::InvalidInput, "not a JSON object", path.toStdString());
    const QJsonObject object = document.object();
    const int version = object.value(QLatin1String("version")).toInt();
    if (version > kVersion)
        return makeError(
            ErrorCode::Unsupported,
            QStringLiteral("version %1 is newer than this accel's %2").arg(version).arg(kVersion).toStdString(),
            path.toStdString());
    return annotationsFromJson(object);
}

Result<void> writeRunAnnotations(const QString &runDirectory, const RunAnnotations &annotations)
{
    const QByteArray text = QJsonDocument(annotationsToJson(annotations)).toJson(QJsonDocument::Indented);
    return rundir::writeRunFile(runDirectoryPath(runDirectory), rundir::file::Annotations, text.toStdString());
}

Result<QString> checkTag(const QString &tag)
{
    const QString trimmed = tag.trimmed();
    if (trimmed.isEmpty())
        return makeError(ErrorCode::InvalidInput, "a tag cannot be empty");
    if (trimmed.size() > kMaximumTag)
        return makeError(
            ErrorCode::InvalidInput,
            QStringLiteral("tag '%1' is longer than %2 characters").arg(trimmed).arg(kMaximumTag).toStdString());
    if (trimmed.contains(QLatin1Char(',')) || trimmed.contains(QLatin1Char('\n')) ||
        trimmed.contains(QLatin1Char('\r')))
        return makeError(ErrorCode::InvalidInput,
                         QStringLiteral("tag '%1' holds a comma or a line break").arg(trimmed).toStdString());
    return trimmed;
}

Result<QString> checkDisplayName(const QString &name)
{
    const QString trimmed = name.trimmed();
    if (trimmed.contains(QLatin1Char('\n')) || trimmed.contains(QLatin1Char('\r')))
        return makeError(ErrorCode::InvalidInput, "a run name is one line");
    if (trimmed.size() > kMaximumName)
        return makeError(ErrorCode::InvalidInput, QStringLiteral("a run name has at most %1 characters, got %2")
                                                      .arg(kMaximumName)
                                                      .arg(trimmed.size())
                                                      .toStdString());
    return trimmed;
}

Result<QStringList> parseTagList(const QString &text)
{
    QStringList tags;
    for (const QString &part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        if (part.trimmed().isEmpty())
            continue;
        const auto tag = checkTag(part);
        if (!tag)
            return tl::unexpected(tag.error());
        if (!tags.contains(*tag))
            tags.append(*tag);
    }
    return tags;
}

} // namespace accel::monitor
