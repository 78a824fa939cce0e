#include "monitor/runsmodel.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSysInfo>

#include <cmath>

namespace accel::monitor {

namespace {

double nowSeconds()
{
    return QDateTime::currentMSecsSinceEpoch() / 1000.0;
}

QString summarize(const QJsonObject &settings)
{
    QStringList parts;
    const QString type = settings.value(QLatin1String("distributed_type")).toString();
    if (!type.isEmpty())
        parts << type;
    const int processes = settings.value(QLatin1String("num_processes")).toInt();
    const int machines = settings.value(QLatin1String("num_machines")).toInt();
    if (processes > 0)
        parts << (processes == 1 ? QStringLiteral("1 process") : QStringLiteral("%1 processes").arg(processes));
    if (machines > 1)
        parts << QStringLiteral("%1 machines").arg(machines);
    const QString precision = settings.value(QLatin1String("mixed_precision")).toString();
    if (!precision.isEmpty() && precision != QLatin1String("no"))
        parts << precision;
    if (settings.value(QLatin1String("use_fsdp")).toBool())
        parts << QStringLiteral("FSDP");
    if (settings.value(QLatin1String("use_deepspeed")).toBool())
        parts << QStringLiteral("DeepSpeed");
    return parts.join(QStringLiteral(", "));
}

// Start time (clock ticks since boot, field 22 of /proc/<pid>/stat) of a live process, 0 if none.
quint64 processStartTime(qint64 pid)
{
    QFile file(QStringLiteral("/proc/%1/stat").arg(pid));
    if (pid <= 0 || !file.open(QIODevice::ReadOnly))
        return 0;
    const QByteArray line = file.readAll();
    const qsizetype close = line.lastIndexOf(')');
    if (close < 0)
        return 0;
    const QList<QByteArray> fields = line.mid(close + 2).split(' ');
    // fields[0] is field 3 (state); field 22 is fields[19].
    if (fields.size() < 20 || fields[0] == "Z")
        return 0;
    return fields[19].toULongLong();
}

// A live state whose supervisor ran on this host and is gone (or its pid was reused) is "lost",
// as `accel runs` reports it. Supervisors on other hosts cannot be checked from here.
QString effectiveState(const QJsonObject &manifest, const QString &state)
{
    static const QStringList live = {QStringLiteral("starting"), QStringLiteral("running"),
                                     QStringLiteral("restarting"), QStringLiteral("stopping")};
    const QJsonObject supervisor = manifest.value(QLatin1String("supervisor")).toObject();
    if (!live.contains(state) || supervisor.isEmpty())
        return state;
    if (supervisor.value(QLatin1String("host")).toString() != QSysInfo::machineHostName())
        return state;
    const auto pid = static_cast<qint64>(supervisor.value(QLatin1String("pid")).toDouble());
    const auto recorded = static_cast<quint64>(supervisor.value(QLatin1String("start_time")).toDouble());
    const quint64 actual = processStartTime(pid);
    if (actual == 0 || (recorded != 0 && actual != recorded))
        return QStringLiteral("lost");
    return state;
}

} // namespace

bool RunInfo::isFinal() const
{
    return state == QLatin1String("succeeded") || state == QLatin1String("failed") ||
           state == QLatin1String("stopped") || state == QLatin1String("lost");
}

double RunInfo::durationSeconds(double now) const
{
    if (created <= 0)
        return std::nan("");
    if (ended > 0)
        return ended - created;
    return isFinal() ? std::nan("") : now - created;
}

bool readRunInfo(const QString &runDirectory, RunInfo &info)
{
    QFile file(QDir(runDirectory).filePath(QStringLiteral("run.json")));
    if (!file.open(QIODevice::ReadOnly))
        return false;
    const QJsonDocument document = QJsonDocument::fromJson(file.readAll());
    if (!document.isObject())
        return false;
    const QJsonObject manifest = document.object();
    info.path = QDir::cleanPath(runDirectory);
    info.id = QFileInfo(info.path).fileName();
    info.name = manifest.value(QLatin1String("name")).toString();
    info.state = effectiveState(manifest, manifest.value(QLatin1String("state")).toString());
    info.host = manifest.value(QLatin1String("host")).toString();
    info.created = manifest.value(QLatin1String("created")).toDouble();
    info.ended = 0;
    const QJsonArray states = manifest.value(QLatin1String("states")).toArray();
    if (info.created <= 0 && !states.isEmpty())
        info.created = states.first().toObject().value(QLatin1String("time")).toDouble();
    if (info.isFinal() && !states.isEmpty())
        info.ended = states.last().toObject().value(QLatin1String("time")).toDouble();
    info.configSummary = summarize(manifest.value(QLatin1String("settings")).toObject());
    info.manifest = manifest;
    return true;
}

QString formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        return {};
    const auto total = static_cast<qint64>(seconds);
    const qint64 hours = total / 3600;
    const qint64 minutes = (total % 3600) / 60;
    const qint64 secs = total % 60;
    if (hours > 0)
        return QStringLiteral("%1h %2m").arg(hours).arg(minutes, 2, 10, QLatin1Char('0'));
    if (minutes > 0)
        return QStringLiteral("%1m %2s").arg(minutes).arg(secs, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1s").arg(secs);
}

RunsModel::RunsModel(QObject *parent) : QAbstractTableModel(parent)
{
    m_timer.setInterval(2000);
    connect(&m_timer, &QTimer::timeout, this, &RunsModel::refresh);
    connect(&m_watcher, &QFileSystemWatcher::directoryChanged, this, &RunsModel::refresh);
}

void RunsModel::setRunsRoot(const QString &root)
{
    if (!m_watcher.directories().isEmpty())
        m_watcher.removePaths(m_watcher.directories());
    m_root = root;
    if (QFileInfo::exists(root))
        m_watcher.addPath(root);
    refresh();
    if (m_timer.interval() > 0)
        m_timer.start();
}

void RunsModel::setRefreshInterval(int milliseconds)
{
    m_timer.setInterval(milliseconds);
    if (milliseconds <= 0)
        m_timer.stop();
    else if (!m_root.isEmpty())
        m_timer.start();
}

int RunsModel::rowOf(const QString &id) const
{
    for (int row = 0; row < m_runs.size(); ++row) {
        if (m_runs[row].id == id)
            return row;
    }
    return -1;
}

void RunsModel::refresh()
{
    const QDir root(m_root);
    if (!m_root.isEmpty() && root.exists() && m_watcher.directories().isEmpty())
        m_watcher.addPath(m_root);
    QStringList present;
    if (!m_root.isEmpty() && root.exists()) {
        for (const QString &entry : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
            if (QFileInfo::exists(root.filePath(entry + QStringLiteral("/run.json"))))
                present << entry;
        }
    }
    // Removed runs.
    for (int row = m_runs.size() - 1; row >= 0; --row) {
        if (!present.contains(m_runs[row].id)) {
            beginRemoveRows({}, row, row);
            m_manifestTimes.remove(m_runs[row].id);
            m_runs.removeAt(row);
            endRemoveRows();
        }
    }
    // Changed and new runs.
    for (const QString &id : present) {
        const QString path = root.filePath(id);
        const QDateTime modified = QFileInfo(path + QStringLiteral("/run.json")).lastModified();
        const int row = rowOf(id);
        if (row >= 0 && m_manifestTimes.value(id) == modified) {
            if (!m_runs[row].isFinal()) // live duration
                Q_EMIT dataChanged(index(row, DurationColumn), index(row, DurationColumn));
            continue;
        }
        RunInfo info;
        if (!readRunInfo(path, info))
            continue; // half-written: next refresh
        m_manifestTimes.insert(id, modified);
        if (row >= 0) {
            m_runs[row] = info;
            Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
        } else {
            beginInsertRows({}, m_runs.size(), m_runs.size());
            m_runs.append(info);
            endInsertRows();
        }
    }
}

int RunsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int RunsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunsModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const RunInfo &info = m_runs.at(index.row());
    if (role == PathRole)
        return info.path;
    if (role == StateRole)
        return info.state;
    if (role == SortRole) {
        switch (index.column()) {
        case StartedColumn:
            return info.created;
        case DurationColumn:
            return info.durationSeconds(nowSeconds());
        default:
            break;
        }
        role = Qt::DisplayRole;
    }
    if (role == Qt::ToolTipRole)
        return info.path;
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case IdColumn:
        return info.id;
    case NameColumn:
        return info.name;
    case StateColumn:
        return info.state;
    case StartedColumn:
        return info.created > 0 ? QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(info.created * 1000))
                                      .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"))
                                : QString();
    case DurationColumn:
        return formatDuration(info.durationSeconds(nowSeconds()));
    case ConfigColumn:
        return info.configSummary;
    default:
        return {};
    }
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const titles[] = {"Run", "Name", "State", "Started", "Duration", "Configuration"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(titles[section]) : QVariant();
}

} // namespace accel::monitor
