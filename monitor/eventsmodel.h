// EventsModel: a run's events in arrival order (time, event, rank, details), appended
// incrementally. The details column is the rest of the event object as compact JSON.
#pragma once

#include "monitor/runevent.h"

#include <QAbstractTableModel>

namespace accel::monitor {

class EventsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { TimeColumn, EventColumn, RankColumn, DetailsColumn, ColumnCount };
    enum Role { EventNameRole = Qt::UserRole + 1, SortRole, SeverityRole };

    explicit EventsModel(QObject *parent = nullptr);

    void appendEvents(const QList<accel::monitor::RunEvent> &events);
    void clear();
    const RunEvent &event(int row) const { return m_events.at(row); }

    // "error" for failures, kills and hangs, "warning" for stragglers and restarts, else "info".
    static QString severityOf(const RunEvent &event);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QList<RunEvent> m_events;
    QStringList m_details;
};

} // namespace accel::monitor
