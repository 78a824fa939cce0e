#include "monitor/eventsmodel.h"

#include <QDateTime>
#include <QJsonDocument>

#include <cmath>

namespace accel::monitor {

EventsModel::EventsModel(QObject *parent) : QAbstractTableModel(parent) {}

void EventsModel::appendEvents(const QList<RunEvent> &events)
{
    if (events.isEmpty())
        return;
    const int first = static_cast<int>(m_events.size());
    beginInsertRows({}, first, first + static_cast<int>(events.size()) - 1);
    for (const RunEvent &event : events) {
        QJsonObject rest = event.fields;
        for (const char *key : {"v", "time", "event", "rank"})
            rest.remove(QLatin1String(key));
        m_details.append(rest.isEmpty() ? QString()
                                        : QString::fromUtf8(QJsonDocument(rest).toJson(QJsonDocument::Compact)));
        m_events.append(event);
    }
    endInsertRows();
}

void EventsModel::clear()
{
    if (m_events.isEmpty())
        return;
    beginRemoveRows({}, 0, static_cast<int>(m_events.size()) - 1);
    m_events.clear();
    m_details.clear();
    endRemoveRows();
}

QString EventsModel::severityOf(const RunEvent &event)
{
    const QJsonValue code = event.fields.value(QLatin1String("exit_code"));
    return QString::fromLatin1(
        rundir::toString(rundir::severityOf(event.kind(), code.isDouble() && code.toInt() == 0,
                                            event.fields.value(QLatin1String("state")).toString().toStdString())));
}

int EventsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_events.size());
}

int EventsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant EventsModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const RunEvent &event = m_events.at(index.row());
    switch (role) {
    case EventNameRole:
        return event.event;
    case SeverityRole:
        return severityOf(event);
    case SortRole:
        if (index.column() == TimeColumn)
            return event.time;
        if (index.column() == RankColumn)
            return event.rank;
        break;
    case Qt::DisplayRole:
        break;
    default:
        return {};
    }
    switch (index.column()) {
    case TimeColumn:
        return std::isfinite(event.time) ? QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(event.time * 1000))
                                               .toString(QStringLiteral("HH:mm:ss.zzz"))
                                         : QString();
    case EventColumn: // a multi-node run's events say their node, as `accel tail` prints them
        return event.node.isEmpty() ? event.event : QStringLiteral("[%1] %2").arg(event.node, event.event);
    case RankColumn:
        return event.rank >= 0 ? QVariant(event.rank) : QVariant(QString());
    case DetailsColumn:
        return m_details.at(index.row());
    default:
        return {};
    }
}

QVariant EventsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const titles[] = {"Time", "Event", "Rank", "Details"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(titles[section]) : QVariant();
}

} // namespace accel::monitor
