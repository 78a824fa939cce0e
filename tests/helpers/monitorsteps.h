// Test helpers that read what a monitor holds: the steps of a rank's loss series, to compare with
// the steps the rank wrote (header-only; the test links the monitor library).
#pragma once

#include "monitor/runmonitor.h"

#include <QList>

namespace accel::test {

// The steps of a rank's loss series, in the order the monitor's store holds them.
inline QList<qint64> lossSteps(const monitor::RunMonitor *run, int rank)
{
    QList<qint64> steps;
    if (const monitor::Series *series = const_cast<monitor::RunMonitor *>(run)->store()->series(rank, "loss")) {
        for (double step : series->steps)
            steps.append(static_cast<qint64>(step));
    }
    return steps;
}

// 1, 2, ..., last.
inline QList<qint64> oneTo(int last)
{
    QList<qint64> steps;
    for (int step = 1; step <= last; ++step)
        steps.append(step);
    return steps;
}

} // namespace accel::test
