// The studio's colour theme: follow the system palette (default), or force light or dark (Fusion
// style with a matching palette). Every page and chart takes its colours from the palette, so a
// theme change reaches them through QEvent::PaletteChange.
#pragma once

#include <QString>

#include <optional>

class QCustomPlot;
class QPalette;

namespace accel::app {

enum class Theme { System, Light, Dark };

QString themeName(Theme theme); // "system", "light", "dark"
std::optional<Theme> themeFromName(const QString &name);

// Call once after QApplication exists and before changing themes: remembers the system palette
// and style so that Theme::System can go back to them.
void rememberSystemTheme();
void applyTheme(Theme theme);
Theme currentTheme();
// Whether the palette in use is dark (window colour darker than its text).
bool paletteIsDark();
// A chart in the palette's colours instead of QCustomPlot's white defaults: background, axes,
// ticks, labels, dotted grid, legend text and a title element in row 0 if there is one. Does not
// replot.
void applyPaletteToPlot(QCustomPlot *plot, const QPalette &palette);

} // namespace accel::app
