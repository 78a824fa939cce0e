#include "app/studio/bigmodel/devicelanesview.h"

#include "core/bigmodel/memorysize.h"

#include <QApplication>
#include <QHelpEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace accel::app {

namespace {
constexpr int kLabelWidth = 190;
constexpr int kLaneHeight = 44;
constexpr int kLaneGap = 8;
constexpr int kMargin = 8;

QString laneTitle(const QString &device)
{
    if (bigmodel::isGpuDevice(device.toStdString()))
        return QObject::tr("GPU %1").arg(device);
    return device;
}

QString sizeText(uint64_t bytes)
{
    return QString::fromStdString(bigmodel::formatBinarySize(bytes));
}
} // namespace

DeviceLanesView::DeviceLanesView(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(true);
    setAttribute(Qt::WA_Hover);
}

void DeviceLanesView::setEmptyText(const QString &text)
{
    m_emptyText = text;
    update();
}

void DeviceLanesView::setPlan(const DeviceMapPlan &plan)
{
    m_plan = plan;
    m_lanes = m_plan.lanes();
    updateGeometry();
    layoutLanes();
    update();
}

QSize DeviceLanesView::sizeHint() const
{
    const int lanes = std::max<int>(1, static_cast<int>(m_lanes.size()));
    return {720, 2 * kMargin + lanes * (kLaneHeight + kLaneGap)};
}

QSize DeviceLanesView::minimumSizeHint() const
{
    return {kLabelWidth + 200, sizeHint().height()};
}

double DeviceLanesView::bytesPerPixel() const
{
    // One scale for every lane: the largest budget or fill, so lanes compare at a glance.
    uint64_t scale = 1;
    for (const MapLane &lane : m_lanes) {
        scale = std::max(scale, lane.used);
        if (lane.budget > 0)
            scale = std::max(scale, static_cast<uint64_t>(lane.budget));
    }
    const int width = std::max(50, this->width() - kLabelWidth - 2 * kMargin);
    return static_cast<double>(scale) / width;
}

void DeviceLanesView::layoutLanes()
{
    m_geometry.clear();
    const double bpp = bytesPerPixel();
    int y = kMargin;
    for (const MapLane &lane : m_lanes) {
        LaneGeometry g;
        g.device = lane.device;
        g.rect = QRect(kMargin, y, width() - 2 * kMargin, kLaneHeight);
        int x = kMargin + kLabelWidth;
        const int right = g.rect.right() - 1;
        for (int b : lane.blocks) {
            int w = std::max(3, static_cast<int>(m_plan.blocks()[b].bytes / bpp));
            w = std::min(w, std::max(3, right - x));
            g.blocks.push_back({b, QRect(x, y + 4, w, kLaneHeight - 8)});
            x = std::min(x + w, right - 3);
        }
        m_geometry << g;
        y += kLaneHeight + kLaneGap;
    }
}

QRect DeviceLanesView::laneRect(const QString &device) const
{
    for (const LaneGeometry &g : m_geometry) {
        if (g.device == device)
            return g.rect;
    }
    return {};
}

QRect DeviceLanesView::blockRect(const QString &name) const
{
    const int index = m_plan.blockIndex(name);
    for (const LaneGeometry &g : m_geometry) {
        for (const auto &[b, rect] : g.blocks) {
            if (b == index)
                return rect;
        }
    }
    return {};
}

QString DeviceLanesView::blockAt(const QPoint &pos) const
{
    for (const LaneGeometry &g : m_geometry) {
        // Later blocks are drawn on top when tiny blocks overlap at the lane's end.
        for (auto it = g.blocks.crbegin(); it != g.blocks.crend(); ++it) {
            if (it->second.contains(pos))
                return m_plan.blocks()[it->first].name;
        }
    }
    return QStringLiteral("\x01"); // no block (a block may be named "")
}

QString DeviceLanesView::laneAt(const QPoint &pos) const
{
    for (const LaneGeometry &g : m_geometry) {
        if (g.rect.contains(pos))
            return g.device;
    }
    return {};
}

QString DeviceLanesView::toolTipFor(const QString &name) const
{
    const int i = m_plan.blockIndex(name);
    if (i < 0)
        return {};
    const MapBlock &b = m_plan.blocks()[i];
    return tr("<b>%1</b><br>device: %2<br>%3 (%4 bytes)<br>%5 parameters")
        .arg(b.name.isEmpty() ? tr("(whole model)") : b.name.toHtmlEscaped(), laneTitle(b.device), sizeText(b.bytes),
             QLocale().toString(static_cast<qulonglong>(b.bytes)),
             QLocale().toString(static_cast<qulonglong>(b.params)));
}

bool DeviceLanesView::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const QString name = blockAt(help->pos());
        if (name != QStringLiteral("\x01"))
            QToolTip::showText(help->globalPos(), toolTipFor(name), this, blockRect(name));
        else
            QToolTip::hideText();
        return true;
    }
    if (event->type() == QEvent::Resize)
        layoutLanes();
    return QWidget::event(event);
}

void DeviceLanesView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    const double bpp = bytesPerPixel();
    static const QColor colors[] = {QColor(0x4c, 0x8b, 0xd6), QColor(0x5a, 0xb0, 0x8a), QColor(0xd8, 0x9c, 0x3a),
                                    QColor(0x8e, 0x6c, 0xc8), QColor(0x3f, 0xa7, 0xb8), QColor(0xc2, 0x6a, 0x8d)};
    for (int l = 0; l < m_geometry.size(); ++l) {
        const LaneGeometry &g = m_geometry[l];
        const MapLane &lane = m_lanes[l];
        const bool over = lane.overBudget();
        QColor background = over ? QColor(0xf8, 0xd7, 0xd7) : pal.color(QPalette::AlternateBase);
        if (m_dragging && g.device == m_dragTarget)
            background = background.darker(112);
        p.setPen(over ? QColor(0xc0, 0x30, 0x30) : pal.color(QPalette::Mid));
        p.setBrush(background);
        p.drawRoundedRect(g.rect, 4, 4);

        p.setPen(over ? QColor(0xb0, 0x20, 0x20) : pal.color(QPalette::WindowText));
        QFont bold = font();
        bold.setBold(true);
        p.setFont(bold);
        p.drawText(QRect(g.rect.left() + 8, g.rect.top() + 4, kLabelWidth - 12, 18), Qt::AlignLeft | Qt::AlignVCenter,
                   laneTitle(lane.device) + (over ? tr("  over budget") : QString()));
        p.setFont(font());
        const QString budget = lane.budget < 0 ? tr("unlimited") : sizeText(static_cast<uint64_t>(lane.budget));
        p.drawText(QRect(g.rect.left() + 8, g.rect.top() + 22, kLabelWidth - 12, 18), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("%1 / %2").arg(sizeText(lane.used), budget));

        for (const auto &[b, rect] : g.blocks) {
            QColor c = colors[b % 6];
            if (m_plan.blocks()[b].name == m_dragName && m_dragging)
                c.setAlpha(90);
            p.setPen(c.darker(130));
            p.setBrush(c);
            p.drawRect(rect);
        }
        if (lane.budget > 0) {
            const int x = kMargin + kLabelWidth + static_cast<int>(static_cast<double>(lane.budget) / bpp);
            p.setPen(QPen(over ? QColor(0xc0, 0x30, 0x30) : pal.color(QPalette::Text), 2, Qt::DashLine));
            p.drawLine(x, g.rect.top() + 2, x, g.rect.bottom() - 2);
        }
    }
    if (m_lanes.isEmpty()) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, m_emptyText);
    }
}

void DeviceLanesView::mousePressEvent(QMouseEvent *event)
{
    if (event->button() != Qt::LeftButton)
        return QWidget::mousePressEvent(event);
    m_dragName = blockAt(event->position().toPoint()); // "\x01" when the press missed every block
    m_dragging = false;
    m_pressPos = event->position().toPoint();
}

void DeviceLanesView::mouseMoveEvent(QMouseEvent *event)
{
    if (!(event->buttons() & Qt::LeftButton) || m_dragName == QStringLiteral("\x01") || m_dragName.isNull())
        return QWidget::mouseMoveEvent(event);
    const QPoint pos = event->position().toPoint();
    if (!m_dragging && (pos - m_pressPos).manhattanLength() >= QApplication::startDragDistance()) {
        m_dragging = true;
        setCursor(Qt::ClosedHandCursor);
    }
    if (m_dragging) {
        m_dragTarget = laneAt(pos);
        update();
    }
}

void DeviceLanesView::mouseReleaseEvent(QMouseEvent *event)
{
    const bool wasDragging = m_dragging;
    const QString name = m_dragName;
    const QString target = laneAt(event->position().toPoint());
    m_dragging = false;
    m_dragName = QString();
    m_dragTarget.clear();
    unsetCursor();
    update();
    if (!wasDragging || name.isNull() || name == QStringLiteral("\x01") || target.isEmpty())
        return;
    const int i = m_plan.blockIndex(name);
    if (i >= 0 && m_plan.blocks()[i].device != target)
        Q_EMIT blockDropped(name, target);
}

} // namespace accel::app
