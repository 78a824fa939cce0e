// Benchmarks print one line per figure, which packaging/bench.sh collects into its table:
//   BENCH <name> <value> <unit> [peer=<value>] [ratio=<x>] [target=<text>]
#pragma once

#include <QString>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace accel::test {

inline void bench(const char *name, double value, const char *unit, const QString &extra = {})
{
    std::printf("BENCH %s %.6g %s%s\n", name, value, unit, extra.isEmpty() ? "" : qPrintable(QLatin1Char(' ') + extra));
    std::fflush(stdout);
}

// The value at `fraction` (0.5: the median) of the sorted values; `values` must not be empty.
inline double percentile(std::vector<double> values, double fraction)
{
    std::sort(values.begin(), values.end());
    return values[static_cast<size_t>(fraction * static_cast<double>(values.size() - 1))];
}

// percentile(values, 0.5): the middle value of an odd count, the lower middle one of an even count.
inline double median(std::vector<double> values)
{
    return percentile(std::move(values), 0.5);
}

} // namespace accel::test
