#include "launcher/rundirectory.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/runevents.h"
#include "launcher/jsonoutput.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>

#include <sys/stat.h>
#include <unistd.h>

namespace accel::launcher {

namespace {

constexpr std::size_t kMaximumManifestBytes = 16u << 20;

std::string native(const QString &path)
{
    return QFile::encodeName(path).toStdString();
}

// Readers record "lost" only in run directories of their own user: root following another
// user's run must not create files there.
bool ownedByCaller(const QString &path)
{
    struct stat info {};
    return ::lstat(QFile::encodeName(path).constData(), &info) == 0 && info.st_uid == ::geteuid();
}

} // namespace

namespace runstate {
bool isFinal(const QString &state)
{
    return rundir::isFinalState(state.toStdString());
}
} // namespace runstate

double unixTimeNow()
{
    return static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
}

QString RunDirectory::defaultRunsRoot()
{
    QString data = qEnvironmentVariable("XDG_DATA_HOME");
    if (data.isEmpty())
        data = QDir::homePath() + QStringLiteral("/.local/share");
    return data + QStringLiteral("/accel-studio/runs");
}

QString RunDirectory::makeRunId(const QString &name)
{
    QString clean = name;
    clean.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]+")), QStringLiteral("_"));
    if (clean.size() > 40)
        clean.truncate(40);
    if (clean.isEmpty())
        clean = QStringLiteral("run");
    const QString stamp = QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    const QString suffix =
        QString::number(QRandomGenerator::global()->bounded(0x10000), 16).rightJustified(4, QLatin1Char('0'));
    return stamp + QLatin1Char('-') + clean + QLatin1Char('-') + suffix;
}

Result<RunDirectory> RunDirectory::create(const QString &path)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    if (auto ok = rundir::checkNoOtherUserCanSwap(native(absolute)); !ok)
        return tl::unexpected(ok.error());
    if (auto ok = rundir::makePrivateDirectory(native(absolute)); !ok)
        return tl::unexpected(ok.error());
    struct stat existing {};
    if (::lstat(native(absolute + QStringLiteral("/run.json")).c_str(), &existing) == 0)
        return makeError(ErrorCode::InvalidInput, "already holds a run (run.json exists); choose a new --run-dir",
                         absolute.toStdString());
    for (const char *sub : {rundir::file::Logs, rundir::file::Metrics, rundir::file::Checkpoints}) {
        if (auto ok = rundir::makePrivateDirectory(native(absolute) + "/" + sub); !ok)
            return tl::unexpected(ok.error());
    }
    return RunDirectory(absolute);
}

Result<RunDirectory> RunDirectory::open(const QString &pathOrId, const QString &runsRoot)
{
    QString path;
    if (QFileInfo::exists(pathOrId + QStringLiteral("/run.json"))) {
        path = QFileInfo(pathOrId).absoluteFilePath();
    } else {
        const QDir root(runsRoot);
        if (root.exists(pathOrId + QStringLiteral("/run.json"))) {
            path = root.filePath(pathOrId);
        } else {
            QStringList matches;
            for (const QString &entry : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::NoSymLinks)) {
                if (entry.contains(pathOrId))
                    matches << entry;
            }
            if (matches.size() > 1)
                return makeError(ErrorCode::InvalidInput, "run '" + pathOrId.toStdString() + "' is ambiguous: " +
                                                              matches.join(QStringLiteral(", ")).toStdString());
            if (matches.isEmpty())
                return makeError(ErrorCode::NotFound, "no run '" + pathOrId.toStdString() +
                                                          "' (not a run directory, and no run id under " +
                                                          runsRoot.toStdString() + "; see 'accel runs')");
            path = root.filePath(matches.first());
        }
    }
    path = QDir::cleanPath(path);
    if (auto ok = rundir::checkRealDirectory(native(path)); !ok)
        return tl::unexpected(ok.error());
    RunDirectory run(path);
    if (auto ok = run.reloadManifest(); !ok)
        return tl::unexpected(ok.error());
    return run;
}

QString RunDirectory::id() const
{
    const QString fromManifest = m_manifest.value(QStringLiteral("id")).toString();
    return fromManifest.isEmpty() ? QFileInfo(m_path).fileName() : fromManifest;
}

QString RunDirectory::filePath(const QString &relative) const
{
    return m_path + QLatin1Char('/') + relative;
}

QString RunDirectory::logPath(int rank) const
{
    return filePath(QString::fromStdString(rundir::logFile(rank)));
}

QString RunDirectory::metricsPath(int rank) const
{
    return filePath(QString::fromStdString(rundir::metricsFile(rank)));
}

Result<void> RunDirectory::writeManifest(const QJsonObject &manifest)
{
    m_manifest = manifest;
    const QByteArray text = manifest.contains(QStringLiteral("schema"))
                                ? schemaJson(manifest)
                                : QJsonDocument(manifest).toJson(QJsonDocument::Indented);
    return rundir::writeRunFile(native(m_path), rundir::file::Manifest, text.toStdString());
}

Result<void> RunDirectory::writeFile(const QString &name, const QByteArray &content)
{
    return rundir::writeRunFile(native(m_path), name.toStdString(), content.toStdString());
}

Result<void> RunDirectory::reloadManifest()
{
    auto text = rundir::readRunFile(native(m_path), rundir::file::Manifest, kMaximumManifestBytes);
    if (!text)
        return tl::unexpected(text.error());
    QJsonParseError error{};
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(*text), &error);
    if (!document.isObject())
        return makeError(ErrorCode::InvalidInput, "not a JSON object: " + error.errorString().toStdString(),
                         filePath(QLatin1String(rundir::file::Manifest)).toStdString());
    m_manifest = document.object();
    return {};
}

Result<void> RunDirectory::setState(const QString &state, const QString &detail)
{
    QJsonObject manifest = m_manifest;
    manifest[QStringLiteral("state")] = state;
    QJsonArray states = manifest.value(QStringLiteral("states")).toArray();
    QJsonObject change{{QStringLiteral("state"), state}, {QStringLiteral("time"), unixTimeNow()}};
    if (!detail.isEmpty())
        change[QStringLiteral("detail")] = detail;
    states.append(change);
    manifest[QStringLiteral("states")] = states;
    return writeManifest(manifest);
}

Result<void> RunDirectory::setState(rundir::RunState state, const QString &detail)
{
    return setState(QString::fromLatin1(rundir::toString(state)), detail);
}

Result<void> RunDirectory::appendEvent(const QString &event, QJsonObject fields)
{
    const int rank = fields.contains(QLatin1String("rank")) ? fields.take(QStringLiteral("rank")).toInt(-1) : -1;
    for (const char *key : {"v", "time", "event"})
        fields.remove(QLatin1String(key));
    QByteArray more;
    if (!fields.isEmpty()) {
        more = QJsonDocument(fields).toJson(QJsonDocument::Compact);
        more = more.mid(1, more.size() - 2);
    }
    return rundir::appendEvent(native(m_path),
                               rundir::encodeEventLine(unixTimeNow(), event.toStdString(), rank, more.toStdString()));
}

Result<void> RunDirectory::appendEvent(rundir::EventKind kind, QJsonObject fields)
{
    return appendEvent(QLatin1String(rundir::toString(kind)), std::move(fields));
}

Result<void> RunDirectory::requestStop(const QString &by)
{
    if (stopRequested())
        return {};
    const QJsonObject request{{QStringLiteral("time"), unixTimeNow()}, {QStringLiteral("by"), by}};
    return rundir::writeRunFile(native(m_path), rundir::file::StopRequest,
                                QJsonDocument(request).toJson(QJsonDocument::Compact).toStdString() + "\n");
}

bool RunDirectory::stopRequested() const
{
    const auto exists = rundir::runFileExists(native(m_path), rundir::file::StopRequest);
    return exists && *exists;
}

rundir::SupervisorRecord RunDirectory::supervisor() const
{
    const QJsonObject object = m_manifest.value(QLatin1String(rundir::key::Supervisor)).toObject();
    return rundir::parseSupervisorRecord(QJsonDocument(object).toJson(QJsonDocument::Compact).toStdString());
}

QJsonObject RunDirectory::supervisorJson(const rundir::SupervisorRecord &record)
{
    return QJsonDocument::fromJson(QByteArray::fromStdString(rundir::supervisorRecordJson(record))).object();
}

QString RunDirectory::effectiveState(bool markLost)
{
    const std::string recorded = m_manifest.value(QStringLiteral("state")).toString().toStdString();
    const rundir::SupervisorRecord record = supervisor();
    const std::string state = rundir::effectiveState(recorded, record);
    if (state == recorded)
        return QString::fromStdString(state);
    if (markLost && ownedByCaller(m_path)) {
        (void)setState(rundir::RunState::Lost,
                       QStringLiteral("supervisor pid %1 is gone").arg(static_cast<qint64>(record.pid)));
        (void)appendEvent(rundir::EventKind::Lost,
                          {{QStringLiteral("supervisor_pid"), static_cast<qint64>(record.pid)}});
    }
    return QString::fromStdString(state);
}

} // namespace accel::launcher
