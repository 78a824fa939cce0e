#include "app/studio/monitor/eventstimeline.h"

#include <QBrush>
#include <QColor>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <utility>

namespace accel::app {

namespace {

// Whole numbers (pids, exit codes, counts, milliseconds) in full; others with 4 significant digits,
// or one decimal from 1000 up.
QString numberText(double value)
{
    if (std::isfinite(value) && value == std::floor(value) && std::abs(value) < 9.0e15)
        return QString::number(static_cast<qint64>(value));
    if (std::isfinite(value) && std::abs(value) >= 1000)
        return QString::number(value, 'f', 1);
    return QString::number(value, 'g', 4);
}

} // namespace

QString eventDetailsText(const monitor::RunEvent &event)
{
    QStringList parts;
    const QJsonObject &fields = event.fields;
    for (auto it = fields.begin(); it != fields.end(); ++it) {
        const QString key = it.key();
        if (key == QLatin1String("v") || key == QLatin1String("time") || key == QLatin1String("event") ||
            key == QLatin1String("rank") || key == QLatin1String("source"))
            continue;
        QString name = key;
        QString unit;
        for (const auto &[suffix, shown] : {std::pair{"_ms", " ms"}, std::pair{"_s", " s"}}) {
            if (name.endsWith(QLatin1String(suffix))) {
                name.chop(int(qstrlen(suffix)));
                unit = QLatin1String(shown);
                break;
            }
        }
        name.replace(QLatin1Char('_'), QLatin1Char(' '));
        const QJsonValue value = it.value();
        if (value.isNull() || value.isUndefined())
            continue; // not applicable (a rank killed by a signal has no exit code): the other fields say why
        QString text;
        if (value.isDouble())
            text = numberText(value.toDouble()) + unit;
        else if (value.isBool())
            text = value.toBool() ? QStringLiteral("yes") : QStringLiteral("no");
        else if (value.isString())
            text = value.toString();
        else
            text =
                QString::fromUtf8((value.isArray() ? QJsonDocument(value.toArray()) : QJsonDocument(value.toObject()))
                                      .toJson(QJsonDocument::Compact));
        parts << name + QLatin1Char(' ') + text;
    }
    return parts.join(QStringLiteral(" · "));
}

QVariant EventSeverityProxy::data(const QModelIndex &index, int role) const
{
    if (role == Qt::DisplayRole && index.column() == monitor::EventsModel::DetailsColumn) {
        if (auto *events = qobject_cast<monitor::EventsModel *>(sourceModel()))
            return eventDetailsText(events->event(mapToSource(index).row()));
    }
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
