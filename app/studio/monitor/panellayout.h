// How a project's Monitor panels are arranged, without widgets: their order, which are hidden,
// each one's width (in grid columns) and height, log scale, and the collapsed sections. Kept per
// project (the runs' run.json name: the script's or job's, or --name) in the studio's settings as
// JSON, so every run of a script opens with the panels arranged as they were left.
#pragma once

#include <QHash>
#include <QJsonObject>
#include <QSet>
#include <QString>
#include <QStringList>

#include <optional>

namespace accel::app {

enum class PanelHeight { Short, Normal, Tall };

struct PanelSettings {
    std::optional<bool> hidden; // unset: the panel's default (extra system keys start hidden)
    int width = 1;              // grid columns, 1..3
    PanelHeight height = PanelHeight::Normal;
    bool logScale = false;
};

class PanelLayout {
public:
    static constexpr int kMaximumWidth = 3;

    // Keys in the order they are shown (each section shows its keys in this order); a key not
    // placed yet goes after the others.
    QStringList order() const { return m_order; }
    void place(const QString &key);
    // Moves a key `steps` places among `visibleKeys` (the keys shown beside it, in order), or to
    // the front with toFront. Returns false when it cannot move that way.
    bool move(const QString &key, int steps, const QStringList &visibleKeys);
    bool moveToFront(const QString &key, const QStringList &visibleKeys);
    // Sorts keys by their place (unplaced ones last, in the order given).
    void sort(QStringList &keys) const;

    PanelSettings settings(const QString &key) const { return m_panels.value(key); }
    bool isHidden(const QString &key, bool hiddenByDefault) const;
    void setHidden(const QString &key, bool hidden);
    void setWidth(const QString &key, int columns); // clamped to 1..kMaximumWidth
    void setHeight(const QString &key, PanelHeight height);
    void setLogScale(const QString &key, bool logarithmic);

    bool isCollapsed(const QString &section) const { return m_collapsed.contains(section); }
    void setCollapsed(const QString &section, bool collapsed);

    QJsonObject toJson() const;
    static PanelLayout fromJson(const QJsonObject &object); // unknown or bad values are ignored

    // The studio's settings: the layout of `project` (empty: the default one).
    static PanelLayout load(const QString &project);
    void save(const QString &project) const;

private:
    QStringList m_order;
    QHash<QString, PanelSettings> m_panels;
    QSet<QString> m_collapsed;
};

// Pixel height of a panel.
int panelHeightPixels(PanelHeight height);

} // namespace accel::app
