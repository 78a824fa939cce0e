// The main window's size on a first start (no remembered geometry): most of the screen, within
// 1024x700 (the smallest size every page is laid out for) and 1600x1000, never more than the
// screen has. A fixed 1200x800 was too big for small screens and left the Monitor's charts about
// 60 px tall beside the run list and the tabs.
#pragma once

#include <QSize>

namespace accel::app {

QSize defaultWindowSize(const QSize &availableScreen);

} // namespace accel::app
