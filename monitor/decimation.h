// Decimation for display: at most two points (the minimum and the maximum, in their original
// order) per pixel column, so a 1M-point series draws as ~2x its pixel width without losing a
// single spike. The neighbours just outside [xMin, xMax] are kept so lines reach the edges.
#pragma once

#include "monitor/series.h"

#include <QList>

namespace accel::monitor {

struct DecimatedSeries {
    QList<double> x;
    QList<double> y;
};

// At most 2 * pixelWidth + 2 points. NaN values are skipped; a column with only NaN keeps one
// NaN point so plots show the gap.
DecimatedSeries decimate(const Series &series, double xMin, double xMax, int pixelWidth, XAxis axis = XAxis::Step);
DecimatedSeries decimate(const double *x, const double *y, size_t count, bool xSorted, double xMin, double xMax,
                         int pixelWidth);

} // namespace accel::monitor
