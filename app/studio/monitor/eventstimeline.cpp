#include "app/studio/monitor/eventstimeline.h"

#include <QBrush>
#include <QColor>
#include <QHeaderView>

namespace accel::app {

QVariant EventSeverityProxy::data(const QModelIndex &index, int role) const
{
    if (role == Qt::BackgroundRole) {
        const QString severity = QIdentityProxyModel::data(index, monitor::EventsModel::SeverityRole).toString();
        if (severity == QLatin1String("error"))
            return QBrush(QColor(248, 215, 218));
        if (severity == QLatin1String("warning"))
            return QBrush(QColor(255, 243, 205));
        return {};
    }
    if (role == Qt::ForegroundRole) {
        const QString severity = QIdentityProxyModel::data(index, monitor::EventsModel::SeverityRole).toString();
        if (severity == QLatin1String("error") || severity == QLatin1String("warning"))
            return QBrush(QColor(33, 37, 41));
    }
    return QIdentityProxyModel::data(index, role);
}

EventsTimeline::EventsTimeline(QWidget *parent) : QTableView(parent), m_proxy(this)
{
    setModel(&m_proxy);
    verticalHeader()->setVisible(false);
    horizontalHeader()->setStretchLastSection(true);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setWordWrap(false);
    connect(&m_proxy, &QAbstractItemModel::rowsInserted, this, [this] {
        resizeColumnToContents(monitor::EventsModel::EventColumn);
        scrollToBottom();
    });
}

void EventsTimeline::setEventsModel(monitor::EventsModel *model)
{
    m_proxy.setSourceModel(model);
    if (model) {
        resizeColumnToContents(monitor::EventsModel::TimeColumn);
        resizeColumnToContents(monitor::EventsModel::EventColumn);
    }
}

} // namespace accel::app
