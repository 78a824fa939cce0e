// One scalar over time for one rank, stored by column so plots and decimation read contiguous
// vectors: x as optimizer step or wall time, y the value (NaN for null).
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace accel::monitor {

enum class XAxis { Step, Time };

struct Series {
    std::vector<double> steps; // NaN when the sample had no step
    std::vector<double> times; // Unix seconds
    std::vector<double> values;
    bool stepsSorted = true; // non-decreasing so far (a restart from a checkpoint breaks it)
    bool timesSorted = true;

    size_t size() const { return values.size(); }
    bool empty() const { return values.empty(); }
    const std::vector<double> &xs(XAxis axis) const { return axis == XAxis::Step ? steps : times; }
    bool sorted(XAxis axis) const { return axis == XAxis::Step ? stepsSorted : timesSorted; }

    void append(double step, double time, double value)
    {
        if (!steps.empty()) {
            if (stepsSorted && !(step >= steps.back()))
                stepsSorted = false;
            if (timesSorted && !(time >= times.back()))
                timesSorted = false;
        }
        steps.push_back(step);
        times.push_back(time);
        values.push_back(value);
    }
    void reserve(size_t n)
    {
        steps.reserve(n);
        times.reserve(n);
        values.reserve(n);
    }
};

} // namespace accel::monitor
