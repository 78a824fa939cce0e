#include "app/studio/theme.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

namespace accel::app {

namespace {

struct SystemTheme {
    bool remembered = false;
    QPalette palette;
    QString style;
};

SystemTheme &systemTheme()
{
    static SystemTheme theme;
    return theme;
}

Theme &current()
{
    static Theme theme = Theme::System;
    return theme;
}

QPalette darkPalette()
{
    QPalette p;
    const QColor window(45, 45, 48);
    const QColor base(30, 30, 32);
    const QColor text(225, 225, 225);
    const QColor disabled(127, 127, 127);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(53, 53, 56));
    p.setColor(QPalette::ToolTipBase, QColor(60, 60, 64));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, disabled);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Light, QColor(70, 70, 74));
    p.setColor(QPalette::Midlight, QColor(60, 60, 64));
    p.setColor(QPalette::Mid, QColor(100, 100, 104));
    p.setColor(QPalette::Dark, QColor(25, 25, 27));
    p.setColor(QPalette::Shadow, Qt::black);
    p.setColor(QPalette::Link, QColor(94, 156, 255));
    p.setColor(QPalette::Highlight, QColor(42, 130, 218));
    p.setColor(QPalette::HighlightedText, Qt::white);
    for (const auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    return p;
}

} // namespace

QString themeName(Theme theme)
{
    switch (theme) {
    case Theme::Light:
        return QStringLiteral("light");
    case Theme::Dark:
        return QStringLiteral("dark");
    case Theme::System:
        break;
    }
    return QStringLiteral("system");
}

std::optional<Theme> themeFromName(const QString &name)
{
    for (const Theme theme : {Theme::System, Theme::Light, Theme::Dark}) {
        if (name.compare(themeName(theme), Qt::CaseInsensitive) == 0)
            return theme;
    }
    return std::nullopt;
}

void rememberSystemTheme()
{
    SystemTheme &system = systemTheme();
    if (system.remembered)
        return;
    system.remembered = true;
    system.palette = QApplication::palette();
    system.style = QApplication::style() ? QApplication::style()->name() : QString();
}

void applyTheme(Theme theme)
{
    rememberSystemTheme();
    current() = theme;
    const SystemTheme &system = systemTheme();
    switch (theme) {
    case Theme::System:
        if (!system.style.isEmpty())
            QApplication::setStyle(QStyleFactory::create(system.style));
        QApplication::setPalette(system.palette);
        break;
    case Theme::Light:
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        QApplication::setPalette(QApplication::style()->standardPalette());
        break;
    case Theme::Dark:
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        QApplication::setPalette(darkPalette());
        break;
    }
}

Theme currentTheme()
{
    return current();
}

bool paletteIsDark()
{
    const QPalette p = QApplication::palette();
    return p.color(QPalette::Window).lightness() < p.color(QPalette::WindowText).lightness();
}

void applyPaletteToPlot(QCustomPlot *plot, const QPalette &palette)
{
    const QColor text = palette.color(QPalette::WindowText);
    QColor grid = text;
    grid.setAlpha(40);
    plot->setBackground(palette.color(QPalette::Base));
    for (QCPAxis *axis : {plot->xAxis, plot->yAxis, plot->xAxis2, plot->yAxis2}) {
        axis->setBasePen(QPen(text));
        axis->setTickPen(QPen(text));
        axis->setSubTickPen(QPen(text));
        axis->setTickLabelColor(text);
        axis->setLabelColor(text);
        axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
        axis->grid()->setZeroLinePen(Qt::NoPen);
    }
    plot->legend->setTextColor(text);
    if (plot->plotLayout()->rowCount() > 0) {
        if (auto *title = qobject_cast<QCPTextElement *>(plot->plotLayout()->element(0, 0)))
            title->setTextColor(text);
    }
}

} // namespace accel::app
