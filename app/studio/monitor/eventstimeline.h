// EventsTimeline: a run's launcher and monitor events (EventsModel) as a list coloured by
// severity, newest at the bottom, with the time since the first event.
#pragma once

#include "monitor/eventsmodel.h"

#include <QIdentityProxyModel>
#include <QTableView>

namespace accel::app {

// Adds background colours from EventsModel::SeverityRole, and shows the details as words
// ("result exit 3 · runtime 4.2 s") instead of the event's JSON.
QString eventDetailsText(const monitor::RunEvent &event);

class EventSeverityProxy : public QIdentityProxyModel {
    Q_OBJECT
public:
    using QIdentityProxyModel::QIdentityProxyModel;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
};

class EventsTimeline : public QTableView {
    Q_OBJECT
public:
    explicit EventsTimeline(QWidget *parent = nullptr);

    void setEventsModel(monitor::EventsModel *model); // nullptr shows nothing

private:
    EventSeverityProxy m_proxy;
};

} // namespace accel::app
