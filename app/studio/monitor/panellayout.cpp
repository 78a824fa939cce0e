#include "app/studio/monitor/panellayout.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSettings>

#include <algorithm>

namespace accel::app {

namespace {

constexpr int kVersion = 1;

QString settingsKey(const QString &project)
{
    // QSettings keys treat '/' as groups and drop some characters: the project name is encoded.
    const QString name = project.isEmpty() ? QStringLiteral("default") : project;
    return QStringLiteral("monitor/layouts/") + QString::fromLatin1(name.toUtf8().toPercentEncoding());
}

const char *heightName(PanelHeight height)
{
    switch (height) {
    case PanelHeight::Short:
        return "short";
    case PanelHeight::Tall:
        return "tall";
    case PanelHeight::Normal:
        break;
    }
    return "normal";
}

} // namespace

int panelHeightPixels(PanelHeight height)
{
    switch (height) {
    case PanelHeight::Short:
        return 190;
    case PanelHeight::Tall:
        return 420;
    case PanelHeight::Normal:
        break;
    }
    return 270;
}

void PanelLayout::place(const QString &key)
{
    if (!m_order.contains(key))
        m_order.append(key);
}

void PanelLayout::sort(QStringList &keys) const
{
    std::stable_sort(keys.begin(), keys.end(), [this](const QString &a, const QString &b) {
        const qsizetype ia = m_order.indexOf(a);
        const qsizetype ib = m_order.indexOf(b);
        if ((ia < 0) != (ib < 0))
            return ia >= 0;
        return ia >= 0 && ia < ib; // unplaced keys keep the order they came in
    });
}

bool PanelLayout::move(const QString &key, int steps, const QStringList &visibleKeys)
{
    const qsizetype at = visibleKeys.indexOf(key);
    const qsizetype target = at + steps;
    if (at < 0 || steps == 0 || target < 0 || target >= visibleKeys.size())
        return false;
    for (const QString &k : visibleKeys)
        place(k);
    // Take the key out and put it just before (moving left) or after (right) the neighbour.
    const QString neighbour = visibleKeys.at(target);
    m_order.removeAll(key);
    const qsizetype neighbourAt = m_order.indexOf(neighbour);
    m_order.insert(steps < 0 ? neighbourAt : neighbourAt + 1, key);
    return true;
}

bool PanelLayout::moveToFront(const QString &key, const QStringList &visibleKeys)
{
    const qsizetype at = visibleKeys.indexOf(key);
    return at > 0 && move(key, -int(at), visibleKeys);
}

bool PanelLayout::isHidden(const QString &key, bool hiddenByDefault) const
{
    const auto found = m_panels.constFind(key);
    return found != m_panels.constEnd() && found->hidden ? *found->hidden : hiddenByDefault;
}

void PanelLayout::setHidden(const QString &key, bool hidden)
{
    m_panels[key].hidden = hidden;
}

void PanelLayout::setWidth(const QString &key, int columns)
{
    m_panels[key].width = std::clamp(columns, 1, kMaximumWidth);
}

void PanelLayout::setHeight(const QString &key, PanelHeight height)
{
    m_panels[key].height = height;
}

void PanelLayout::setLogScale(const QString &key, bool logarithmic)
{
    m_panels[key].logScale = logarithmic;
}

void PanelLayout::setCollapsed(const QString &section, bool collapsed)
{
    if (collapsed)
        m_collapsed.insert(section);
    else
        m_collapsed.remove(section);
}

QJsonObject PanelLayout::toJson() const
{
    QJsonObject panels;
    for (auto it = m_panels.cbegin(); it != m_panels.cend(); ++it) {
        QJsonObject panel{{QStringLiteral("width"), it->width},
                          {QStringLiteral("height"), QLatin1String(heightName(it->height))},
                          {QStringLiteral("log"), it->logScale}};
        if (it->hidden)
            panel.insert(QStringLiteral("hidden"), *it->hidden);
        panels.insert(it.key(), panel);
    }
    QStringList collapsed(m_collapsed.begin(), m_collapsed.end());
    collapsed.sort();
    return QJsonObject{{QStringLiteral("version"), kVersion},
                       {QStringLiteral("order"), QJsonArray::fromStringList(m_order)},
                       {QStringLiteral("panels"), panels},
                       {QStringLiteral("collapsed"), QJsonArray::fromStringList(collapsed)}};
}

PanelLayout PanelLayout::fromJson(const QJsonObject &object)
{
    PanelLayout layout;
    if (object.value(QLatin1String("version")).toInt() != kVersion)
        return layout;
    for (const QJsonValue &key : object.value(QLatin1String("order")).toArray()) {
        if (key.isString())
            layout.place(key.toString());
    }
    const QJsonObject panels = object.value(QLatin1String("panels")).toObject();
    for (auto it = panels.begin(); it != panels.end(); ++it) {
        const QJsonObject panel = it.value().toObject();
        PanelSettings settings;
        if (panel.value(QLatin1String("hidden")).isBool())
            settings.hidden = panel.value(QLatin1String("hidden")).toBool();
        settings.width = std::clamp(panel.value(QLatin1String("width")).toInt(1), 1, kMaximumWidth);
        const QString height = panel.value(QLatin1String("height")).toString();
        settings.height = height == QLatin1String("short")  ? PanelHeight::Short
                          : height == QLatin1String("tall") ? PanelHeight::Tall
                                                            : PanelHeight::Normal;
        settings.logScale = panel.value(QLatin1String("log")).toBool();
        layout.m_panels.insert(it.key(), settings);
    }
    for (const QJsonValue &section : object.value(QLatin1String("collapsed")).toArray())
        layout.m_collapsed.insert(section.toString());
    return layout;
}

PanelLayout PanelLayout::load(const QString &project)
{
    const QByteArray text = QSettings().value(settingsKey(project)).toByteArray();
    return fromJson(QJsonDocument::fromJson(text).object());
}

void PanelLayout::save(const QString &project) const
{
    QSettings().setValue(settingsKey(project), QJsonDocument(toJson()).toJson(QJsonDocument::Compact));
}

} // namespace accel::app
