// Units on the Monitor's axes: byte counts in KiB/MiB/GiB with ticks on round binary steps, and
// the short texts (values, durations) that the crosshair, progress line and tests share.
#pragma once

#include <QString>

#include <QSharedPointer>

class QCPAxisTicker;

namespace accel::app {

enum class AxisUnit { Plain, Bytes, Percent, PerSecond, Seconds };

// "512 B", "1.5 KiB", "190.7 MiB", "2.00 GiB" (three significant digits).
QString formatBytes(double bytes);
// "45 s", "3 min 20 s", "2 h 05 min".
QString formatDuration(double seconds);
// A value in its unit, for tooltips: bytes as above, "37.5 %", "512 /s", "0.25 s", plain 'g' otherwise.
QString formatValue(double value, AxisUnit unit);

// The tick generator for a value axis of this unit (bytes get binary steps and unit suffixes).
QSharedPointer<QCPAxisTicker> tickerFor(AxisUnit unit);

} // namespace accel::app
