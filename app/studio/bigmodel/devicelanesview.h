// One horizontal lane per device: a block per device-map entry sized by its bytes, the budget
// marked on the lane and the total beside it (red when over budget). Hovering a block shows its
// module, bytes and parameters; dragging a block onto another lane asks to move it there.
#pragma once

#include "app/studio/bigmodel/devicemapplan.h"

#include <QRect>
#include <QWidget>

namespace accel::app {

class DeviceLanesView : public QWidget {
    Q_OBJECT
public:
    explicit DeviceLanesView(QWidget *parent = nullptr);

    void setPlan(const DeviceMapPlan &plan);
    const DeviceMapPlan &plan() const { return m_plan; }
    // What the view says while it has no plan (each page names its own next step).
    void setEmptyText(const QString &text);
    QString emptyText() const { return m_emptyText; }

    // Geometry, for tests and drag-and-drop: the rectangle of a lane (by device) and of a block.
    QRect laneRect(const QString &device) const;
    QRect blockRect(const QString &name) const;
    QString blockAt(const QPoint &pos) const;
    QString laneAt(const QPoint &pos) const;
    QString toolTipFor(const QString &name) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    void blockDropped(const QString &name, const QString &device);

protected:
    bool event(QEvent *event) override;
    void paintEvent(QPaintEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;

private:
    struct LaneGeometry {
        QString device;
        QRect rect;
        QVector<QPair<int, QRect>> blocks; // block index, rectangle
    };
    void layoutLanes();
    double bytesPerPixel() const;

    DeviceMapPlan m_plan;
    QVector<MapLane> m_lanes;
    QVector<LaneGeometry> m_geometry;
    QString m_dragName;
    QString m_dragTarget;
    QPoint m_pressPos;
    bool m_dragging = false;
    QString m_emptyText;
};

} // namespace accel::app
