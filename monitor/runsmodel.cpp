#include "monitor/runsmodel.h"

#include "monitor/runcatalogue.h"
#include "monitor/runpath.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>

#include <cmath>

namespace accel::monitor {

namespace {

constexpr std::size_t kMaximumManifestBytes = 16u << 20;

double nowSeconds()
{
    return QDateTime::currentMSecsSinceEpoch() / 1000.0;
}

// When any file the row shows last changed: run.json, the annotations, the tracker's hyperparameters.
QDateTime filesStamp(const QString &runDirectory)
{
    QDateTime newest;
    for (const char *name : {rundir::file::Manifest, rundir::file::Annotations, rundir::file::Hyperparameters}) {
        const QFileInfo info(runDirectory + QLatin1Char('/') + QLatin1String(name));
        if (info.exists() && (!newest.isValid() || info.lastModified() > newest))
            newest = info.lastModified();
    }
    return newest;
}

QString firstLine(const QString &text)
{
    const qsizetype end = text.indexOf(QLatin1Char('\n'));
    return end < 0 ? text : text.left(end) + QStringLiteral(" …");
}

} // namespace

QString summarizeSettings(const QJsonObject &settings)
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

namespace {

// The lost rule of core/rundir on a manifest.
QString effectiveState(const QJsonObject &manifest, const QString &state)
{
    const QJsonObject supervisor = manifest.value(QLatin1String(rundir::key::Supervisor)).toObject();
    const rundir::SupervisorRecord record =
        rundir::parseSupervisorRecord(QJsonDocument(supervisor).toJson(QJsonDocument::Compact).toStdString());
    return QString::fromStdString(rundir::effectiveState(state.toStdString(), record));
}

} // namespace

QString RunInfo::displayName() const
{
    if (!annotations.displayName.isEmpty())
        return annotations.displayName;
    return name.isEmpty() ? id : name;
}

bool RunInfo::isFinal() const
{
    return rundir::isFinalState(state.toStdString());
}

QString RunInfo::address() const
{
    return location.isEmpty() ? path : remoteRunAddress(location, path);
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
    // Never through a symlink planted in the run directory, never a FIFO, never a huge file.
    const auto text =
        rundir::readRunFile(runDirectoryPath(runDirectory), rundir::file::Manifest, kMaximumManifestBytes);
    if (!text)
        return false;
    const QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(*text));
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
    info.configSummary = summarizeSettings(manifest.value(QLatin1String("settings")).toObject());
    info.manifest = manifest;
    info.annotations = readRunAnnotations(info.path).value_or(RunAnnotations{});
    info.hyperparameters = readHyperparameters(info.path);
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
        if (m_runs[row].location.isEmpty() && m_runs[row].id == id)
            return row;
    }
    return -1;
}

int RunsModel::rowOfAddress(const QString &address) const
{
    for (int row = 0; row < m_runs.size(); ++row) {
        if (m_runs[row].address() == address)
            return row;
    }
    return -1;
}

QStringList RunsModel::remoteLocations() const
{
    QStringList out;
    for (const RunInfo &info : m_runs) {
        if (!info.location.isEmpty() && !out.contains(info.location))
            out.append(info.location);
    }
    return out;
}

void RunsModel::setRemoteRuns(const QString &destination, const QList<RunInfo> &runs)
{
    QSet<QString> listed;
    for (const RunInfo &info : runs)
        listed.insert(info.path);
    for (int row = m_runs.size() - 1; row >= 0; --row) {
        if (m_runs[row].location == destination && !listed.contains(m_runs[row].path)) {
            beginRemoveRows({}, row, row);
            m_runs.removeAt(row);
            endRemoveRows();
        }
    }
    QList<RunInfo> added;
    for (RunInfo info : runs) {
        info.location = destination;
        const int row = rowOfAddress(info.address());
        if (row >= 0) {
            const RunInfo &old = m_runs[row];
            const bool same = old.state == info.state && old.name == info.name && old.created == info.created &&
                              old.annotations == info.annotations;
            m_runs[row] = info;
            if (!same)
                changed(row);
            else if (!info.isFinal())
                Q_EMIT dataChanged(index(row, DurationColumn), index(row, DurationColumn));
        } else {
            added.append(info);
        }
    }
    if (!added.isEmpty()) {
        beginInsertRows({}, m_runs.size(), m_runs.size() + added.size() - 1);
        m_runs.append(added);
        endInsertRows();
    }
    syncHyperparameterColumns();
}

void RunsModel::refresh()
{
    const QDir root(m_root);
    if (!m_root.isEmpty() && root.exists() && m_watcher.directories().isEmpty())
        m_watcher.addPath(m_root);
    QStringList present;
    if (!m_root.isEmpty() && root.exists()) {
        for (const QString &entry : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::NoSymLinks, QDir::Name)) {
            if (QFileInfo::exists(root.filePath(entry + QStringLiteral("/run.json"))))
                present << entry;
        }
    }
    // Removed runs (of this machine: other hosts' rows come from setRemoteRuns). Look-ups by hash
    // and new rows in one insertion: a root of thousands of runs is read in linear time (the
    // views fit their columns once per insertion, not once per run).
    const QSet<QString> presentIds(present.cbegin(), present.cend());
    for (int row = m_runs.size() - 1; row >= 0; --row) {
        if (m_runs[row].location.isEmpty() && !presentIds.contains(m_runs[row].id)) {
            beginRemoveRows({}, row, row);
            m_manifestTimes.remove(m_runs[row].id);
            m_runs.removeAt(row);
            endRemoveRows();
        }
    }
    // Changed and new runs.
    QHash<QString, int> localRows;
    for (int row = 0; row < m_runs.size(); ++row) {
        if (m_runs[row].location.isEmpty())
            localRows.insert(m_runs[row].id, row);
    }
    QList<RunInfo> added;
    for (const QString &id : present) {
        const QString path = root.filePath(id);
        const QDateTime modified = filesStamp(path);
        const int row = localRows.value(id, -1);
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
            changed(row);
        } else {
            added.append(info);
        }
    }
    if (!added.isEmpty()) {
        beginInsertRows({}, m_runs.size(), m_runs.size() + added.size() - 1);
        m_runs.append(added);
        endInsertRows();
    }
    syncHyperparameterColumns();
}

void RunsModel::changed(int row)
{
    Q_EMIT dataChanged(index(row, 0), index(row, columnCount() - 1));
}

void RunsModel::syncHyperparameterColumns()
{
    QStringList keys;
    for (const RunInfo &info : std::as_const(m_runs))
        keys += info.hyperparameters.keys();
    keys.removeDuplicates();
    keys.sort();
    for (qsizetype i = m_hyperparameterKeys.size() - 1; i >= 0; --i) {
        if (keys.contains(m_hyperparameterKeys[i]))
            continue;
        beginRemoveColumns({}, ColumnCount + int(i), ColumnCount + int(i));
        m_hyperparameterKeys.removeAt(i);
        endRemoveColumns();
    }
    for (qsizetype i = 0; i < keys.size(); ++i) {
        if (m_hyperparameterKeys.value(i) == keys[i])
            continue;
        beginInsertColumns({}, ColumnCount + int(i), ColumnCount + int(i));
        m_hyperparameterKeys.insert(i, keys[i]);
        endInsertColumns();
    }
    // Values of keys every row already had may have changed with a re-read run: changed() said so.
}

int RunsModel::hyperparameterColumn(const QString &key) const
{
    const qsizetype i = m_hyperparameterKeys.indexOf(key);
    return i < 0 ? -1 : ColumnCount + int(i);
}

bool RunsModel::setAnnotations(int row, const RunAnnotations &annotations, QString *error)
{
    if (row < 0 || row >= m_runs.size())
        return false;
    RunInfo &info = m_runs[row];
    if (!info.location.isEmpty()) {
        if (error)
            *error = tr("%1 is a run of %2: change it there (accel runs rename/notes/tag)").arg(info.id, info.location);
        return false;
    }
    if (const auto written = writeRunAnnotations(info.path, annotations); !written) {
        if (error)
            *error = tr("%1: %2").arg(info.id, QString::fromStdString(written.error().toString()));
        return false;
    }
    info.annotations = annotations;
    m_manifestTimes.insert(info.id, filesStamp(info.path));
    changed(row);
    return true;
}

int RunsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int RunsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount + int(m_hyperparameterKeys.size());
}

Qt::ItemFlags RunsModel::flags(const QModelIndex &index) const
{
    Qt::ItemFlags flags = QAbstractTableModel::flags(index);
    if (!index.isValid())
        return flags;
    const int column = index.column();
    const bool editable = column == NameColumn || column == TagsColumn || column == NotesColumn;
    if (editable && m_runs.at(index.row()).location.isEmpty())
        flags |= Qt::ItemIsEditable;
    return flags;
}

bool RunsModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return false;
    const RunInfo &info = m_runs.at(index.row());
    RunAnnotations annotations = info.annotations;
    const QString text = value.toString();
    QString problem;
    switch (index.column()) {
    case NameColumn:
        if (const auto name = checkDisplayName(text); !name)
            problem = QString::fromStdString(name.error().message);
        else
            annotations.displayName = *name == info.name ? QString() : *name;
        break;
    case TagsColumn:
        if (const auto tags = parseTagList(text); !tags)
            problem = QString::fromStdString(tags.error().message);
        else
            annotations.tags = *tags;
        break;
    case NotesColumn:
        annotations.notes = text.trimmed();
        break;
    default:
        return false;
    }
    if (!problem.isEmpty()) {
        Q_EMIT editFailed(tr("%1: %2").arg(info.id, problem));
        return false;
    }
    if (annotations == info.annotations)
        return true;
    QString error;
    if (!setAnnotations(index.row(), annotations, &error)) {
        Q_EMIT editFailed(error);
        return false;
    }
    return true;
}

QVariant RunsModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const RunInfo &info = m_runs.at(index.row());
    if (role == PathRole)
        return info.address();
    if (role == LocationRole)
        return info.location;
    if (role == StateRole)
        return info.state;
    const int column = index.column();
    if (column >= ColumnCount) {
        const QString key = m_hyperparameterKeys.value(column - ColumnCount);
        const auto value = info.hyperparameters.constFind(key);
        if (value == info.hyperparameters.constEnd())
            return {};
        if (role == SortRole) {
            const double number = hyperparameterNumber(*value);
            return std::isnan(number) ? QVariant(*value) : QVariant(number);
        }
        if (role == Qt::ToolTipRole)
            return QStringLiteral("%1: %2").arg(key, *value);
        return role == Qt::DisplayRole ? QVariant(*value) : QVariant();
    }
    if (role == SortRole) {
        switch (column) {
        case StartedColumn:
            return info.created;
        case DurationColumn:
            return info.durationSeconds(nowSeconds());
        default:
            break;
        }
        role = Qt::DisplayRole;
    }
    if (role == Qt::EditRole) {
        switch (column) {
        case NameColumn:
            return info.displayName();
        case TagsColumn:
            return info.annotations.tags.join(QStringLiteral(", "));
        case NotesColumn:
            return info.annotations.notes;
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        if (column == NotesColumn && !info.annotations.notes.isEmpty())
            return info.annotations.notes;
        if (column == NameColumn && !info.annotations.displayName.isEmpty())
            return tr("%1 (run.json: %2)").arg(info.annotations.displayName, info.name);
        return info.location.isEmpty() ? info.path : QStringLiteral("%1 on %2").arg(info.path, info.location);
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (column) {
    case IdColumn:
        return info.id;
    case NameColumn:
        return info.displayName();
    case StateColumn:
        return info.state;
    case HostColumn:
        return info.location.isEmpty() ? tr("this machine") : info.location;
    case StartedColumn:
        return info.created > 0 ? QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(info.created * 1000))
                                      .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"))
                                : QString();
    case DurationColumn:
        return formatDuration(info.durationSeconds(nowSeconds()));
    case ConfigColumn:
        return info.configSummary;
    case TagsColumn:
        return info.annotations.tags.join(QStringLiteral(", "));
    case NotesColumn:
        return firstLine(info.annotations.notes);
    default:
        return {};
    }
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= columnCount())
        return {};
    const QString key = section >= ColumnCount ? m_hyperparameterKeys.at(section - ColumnCount) : QString();
    if (role == HyperparameterKeyRole)
        return key.isEmpty() ? QVariant() : QVariant(key);
    if (role != Qt::DisplayRole)
        return {};
    static const char *const titles[] = {"Run",      "Name",          "State", "Host", "Started",
                                         "Duration", "Configuration", "Tags",  "Notes"};
    static_assert(sizeof titles / sizeof *titles == ColumnCount);
    return section < ColumnCount ? QString::fromLatin1(titles[section]) : key;
}

} // namespace accel::monitor
