#include "launcher/rundirectory.h"

#include "core/common/fileutil.h"
#include "launcher/jsonoutput.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>

#include <QSysInfo>

#include <fstream>
#include <sstream>

namespace accel::launcher {

namespace runstate {
bool isFinal(const QString &state)
{
    return state == Succeeded || state == Failed || state == Stopped || state == Lost;
}
} // namespace runstate

double unixTimeNow()
{
    return static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
}

quint64 processStartTime(qint64 pid)
{
    if (pid <= 0)
        return 0;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line))
        return 0;
    // The command name (field 2) may contain spaces; fields resume after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos)
        return 0;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    // Field 3 is the first after ')'; start time is field 22.
    for (int index = 3; index <= 22 && fields >> field; ++index) {
        if (index == 3 && field == "Z")
            return 0; // a zombie is not running
        if (index == 22)
            return std::stoull(field);
    }
    return 0;
}

bool processMatches(qint64 pid, quint64 startTime)
{
    const quint64 actual = processStartTime(pid);
    return actual != 0 && (startTime == 0 || actual == startTime);
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
    QDir dir(absolute);
    if (dir.exists(QStringLiteral("run.json")))
        return makeError(ErrorCode::InvalidInput, "already holds a run (run.json exists); choose a new --run-dir",
                         absolute.toStdString());
    for (const char *sub : {"logs", "metrics", "checkpoints"}) {
        if (!dir.mkpath(QString::fromLatin1(sub)))
            return makeError(ErrorCode::Io, std::string("cannot create folder ") + sub, absolute.toStdString());
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
            for (const QString &entry : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
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
    return filePath(QStringLiteral("logs/rank%1.log").arg(rank));
}

QString RunDirectory::metricsPath(int rank) const
{
    return filePath(QStringLiteral("metrics/rank%1.jsonl").arg(rank));
}

Result<void> RunDirectory::writeManifest(const QJsonObject &manifest)
{
    m_manifest = manifest;
    const QByteArray text = manifest.contains(QStringLiteral("schema"))
                                ? schemaJson(manifest)
                                : QJsonDocument(manifest).toJson(QJsonDocument::Indented);
    return fileutil::writeFileAtomic(filePath(QStringLiteral("run.json")).toStdString(), text.toStdString());
}

Result<void> RunDirectory::reloadManifest()
{
    const std::string path = filePath(QStringLiteral("run.json")).toStdString();
    auto text = fileutil::readFile(path);
    if (!text)
        return tl::unexpected(text.error());
    QJsonParseError error{};
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(*text), &error);
    if (!document.isObject())
        return makeError(ErrorCode::InvalidInput, "not a JSON object: " + error.errorString().toStdString(), path);
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

Result<void> RunDirectory::appendEvent(const QString &event, QJsonObject fields)
{
    QJsonObject line{{QStringLiteral("time"), unixTimeNow()}, {QStringLiteral("event"), event}};
    for (auto it = fields.begin(); it != fields.end(); ++it)
        line.insert(it.key(), it.value());
    QFile file(filePath(QStringLiteral("events.jsonl")));
    if (!file.open(QIODevice::WriteOnly | QIODevice::Append))
        return makeError(ErrorCode::Io, "cannot append: " + file.errorString().toStdString(),
                         file.fileName().toStdString());
    file.write(QJsonDocument(line).toJson(QJsonDocument::Compact) + '\n');
    return {};
}

QString RunDirectory::effectiveState(bool markLost)
{
    const QString state = m_manifest.value(QStringLiteral("state")).toString();
    if (runstate::isFinal(state) || state.isEmpty())
        return state;
    const QJsonObject supervisor = m_manifest.value(QStringLiteral("supervisor")).toObject();
    const qint64 pid = supervisor.value(QStringLiteral("pid")).toInteger();
    const quint64 start = static_cast<quint64>(supervisor.value(QStringLiteral("start_time")).toInteger());
    const QString host = supervisor.value(QStringLiteral("host")).toString();
    if (pid <= 0 || (!host.isEmpty() && host != QSysInfo::machineHostName()))
        return state; // no supervisor recorded yet, or another machine's: cannot tell from here
    if (processMatches(pid, start))
        return state;
    if (markLost) {
        (void)setState(QString::fromLatin1(runstate::Lost), QStringLiteral("supervisor pid %1 is gone").arg(pid));
        (void)appendEvent(QStringLiteral("lost"), {{QStringLiteral("supervisor_pid"), pid}});
    }
    return QString::fromLatin1(runstate::Lost);
}

} // namespace accel::launcher
