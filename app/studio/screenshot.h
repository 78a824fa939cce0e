// --screenshot: show the window at a fixed size, wait until the visible page has settled (e.g.
// hardware detection finished), render it to a PNG and return the process exit code.
#pragma once

#include <QString>

namespace accel::app {

class MainWindow;

// Runs the event loop until the PNG is written; returns 0 on success, 1 when writing failed.
int takeScreenshot(MainWindow &window, const QString &pngPath);

} // namespace accel::app
