// MetricPlot's pointer and legend: the crosshair and its readout drawn in the plot (beside the
// pointer, or in the corner when another panel is hovered), a legend entry hidden by a click and
// highlighted while hovered. The data and drawing are in metricplot.cpp.
#include "app/studio/monitor/metricplot.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <QFontMetrics>

#include <algorithm>

namespace accel::app {

namespace {

constexpr int kDimmedAlpha = 60;  // the other curves while one is highlighted
constexpr int kReadoutLines = 12; // more lines are summarised ("+3 more")
constexpr double kHighlightWidth = 2.5;

} // namespace

bool MetricPlot::eventFilter(QObject *watched, QEvent *event)
{
    // No tooltip over the plot: the readout is what the pointer shows (a tooltip resting there
    // replaced it after a second).
    if (watched == m_plot && event->type() == QEvent::ToolTip)
        return true;
    if (watched == m_plot && event->type() == QEvent::Leave) {
        if (!m_highlighted.isEmpty())
            setHighlightedCurve(QString());
        if (isCrosshairShown()) {
            hideCrosshair();
            Q_EMIT hoverLeft();
        }
    }
    return QWidget::eventFilter(watched, event);
}

void MetricPlot::applyPens()
{
    // The legend shows hidden curves greyed; a highlighted curve is drawn wider and the others faded.
    const QColor text = palette().color(QPalette::WindowText);
    QColor greyed = text;
    greyed.setAlpha(90);
    for (int i = 0; i < m_plot->graphCount(); ++i) {
        auto *graph = m_plot->graph(i);
        QPen pen = graph->pen();
        QColor color = pen.color();
        const bool faint = graph->property("faint").toBool();
        const bool highlighted = !m_highlighted.isEmpty() && graph->name() == m_highlighted;
        if (!m_highlighted.isEmpty() && !highlighted)
            color.setAlpha(std::min(color.alpha(), faint ? kRawAlphaUnderAverage / 3 : kDimmedAlpha));
        pen.setColor(color);
        if (highlighted && !faint)
            pen.setWidthF(std::max(pen.widthF(), kHighlightWidth));
        graph->setPen(pen);
        if (auto *item = m_plot->legend->itemWithPlottable(graph))
            item->setTextColor(m_hiddenCurves.contains(graph->name()) ? greyed : text);
    }
}

void MetricPlot::setCurveHidden(const QString &name, bool hidden)
{
    if (hidden)
        m_hiddenCurves.insert(name);
    else
        m_hiddenCurves.remove(name);
    replotNow();
}

void MetricPlot::setHighlightedCurve(const QString &name)
{
    if (m_highlighted == name)
        return;
    m_highlighted = name;
    replotNow();
}

QStringList MetricPlot::curveNames() const
{
    QStringList names;
    for (int i = 0; i < m_plot->legend->itemCount(); ++i) {
        if (auto *item = qobject_cast<QCPPlottableLegendItem *>(m_plot->legend->item(i)))
            names.append(item->plottable()->name());
    }
    return names;
}

void MetricPlot::onLegendClick(QCPAbstractLegendItem *item)
{
    if (auto *entry = qobject_cast<QCPPlottableLegendItem *>(item)) {
        const QString name = entry->plottable()->name();
        setCurveHidden(name, !m_hiddenCurves.contains(name));
    }
}

QString MetricPlot::legendNameAt(const QPoint &position) const
{
    for (int i = 0; i < m_plot->legend->itemCount(); ++i) {
        auto *item = qobject_cast<QCPPlottableLegendItem *>(m_plot->legend->item(i));
        if (item && item->realVisibility() && item->outerRect().contains(position))
            return item->plottable()->name();
    }
    return {};
}

QString MetricPlot::shownTitle() const
{
    return m_titleElement->text();
}

QStringList MetricPlot::readout(double x) const
{
    return readoutLines(m_spec, chartRuns(), x, m_xMode);
}

bool MetricPlot::isCrosshairShown() const
{
    return m_crosshair->visible();
}

QString MetricPlot::showCrosshair(double x, QPoint pointer)
{
    QStringList lines = readout(x);
    m_crosshairText = lines.isEmpty() ? QString() : m_spec.title + QLatin1Char('\n') + lines.join(QLatin1Char('\n'));
    if (lines.size() > kReadoutLines) {
        const qsizetype more = lines.size() - kReadoutLines;
        lines = lines.mid(0, kReadoutLines);
        lines.append(tr("+%1 more").arg(more));
    }
    m_crosshair->setVisible(!lines.isEmpty());
    m_crosshair->point1->setCoords(x, 0);
    m_crosshair->point2->setCoords(x, 1);
    m_readout->setText(lines.join(QLatin1Char('\n')));
    m_readout->setVisible(!lines.isEmpty());
    placeReadout(pointer);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    return m_crosshairText;
}

void MetricPlot::placeReadout(QPoint pointer)
{
    // Beside the pointer, on the side with room; a synced panel shows it in its top left corner.
    const QRect area = m_plot->axisRect()->rect();
    const QFontMetrics metrics(m_readout->font());
    const QRect text = metrics.boundingRect(QRect(0, 0, 2000, 2000), Qt::AlignLeft, m_readout->text());
    const QSize box = text.size() + QSize(14, 10);
    QPoint at = area.topLeft() + QPoint(6, 6);
    if (pointer.x() >= 0) {
        at = pointer + QPoint(14, 10);
        if (at.x() + box.width() > area.right())
            at.setX(pointer.x() - 14 - box.width());
        if (at.y() + box.height() > area.bottom())
            at.setY(std::max(area.top(), area.bottom() - box.height()));
        at.setX(std::max(0, at.x()));
    }
    m_readout->position->setCoords(at.x(), at.y());
}

void MetricPlot::hideCrosshair()
{
    if (!m_crosshair->visible() && !m_readout->visible())
        return;
    m_crosshair->setVisible(false);
    m_readout->setVisible(false);
    m_crosshairText.clear();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void MetricPlot::onMouseMove(QMouseEvent *event)
{
    if (event->buttons() != Qt::NoButton) {
        m_following = false; // dragging pans
        return;
    }
    const QPoint position = event->pos();
    const QString legendName = legendNameAt(position);
    setHighlightedCurve(legendName);
    if (!m_plot->axisRect()->rect().contains(position)) {
        if (isCrosshairShown()) {
            hideCrosshair();
            Q_EMIT hoverLeft();
        }
        return;
    }
    const double x = m_plot->xAxis->pixelToCoord(position.x());
    showCrosshair(x, position);
    Q_EMIT hovered(x);
}

} // namespace accel::app
