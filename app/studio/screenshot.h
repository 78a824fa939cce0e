// --screenshot: show the window at a fixed size, wait until the visible page has settled (e.g.
// hardware detection finished, a followed run's charts filled), render it to a PNG and return the
// process exit code. packaging/screenshots.sh sets ACCEL_STUDIO_SCREENSHOT_VIEW to picture views
// that are not sidebar pages: "wizard" (the Configure page's question wizard, rendered alone),
// "playground" (the Big Models page's Playground tab), "fp8compare" (Tools > Compare FP8 Recipes
// after a real short comparison), "cluster" (the Hardware page's Cluster tab with its host checks
// and SLURM queue answered), "memory" (the Monitor's Memory tab), "runstable" (the Runs page's
// table taking most of the page) or "panels" (the Monitor's charts with the tables below at their
// smallest, for a tall window that shows every panel of a run). ACCEL_STUDIO_SCREENSHOT_RUN names the run the Runs page
// shows, or several separated by commas (compared).
#pragma once

#include <QString>

namespace accel::app {

class MainWindow;

// Runs the event loop until the PNG is written; returns 0 on success, 1 when writing failed.
int takeScreenshot(MainWindow &window, const QString &pngPath);

} // namespace accel::app
