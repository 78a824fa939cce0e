#include "monitor/decimation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace accel::monitor {

namespace {

struct Bucket {
    size_t minIndex = std::numeric_limits<size_t>::max();
    size_t maxIndex = std::numeric_limits<size_t>::max();
    size_t nanIndex = std::numeric_limits<size_t>::max();
};

constexpr size_t kNone = std::numeric_limits<size_t>::max();

void emitBucket(const Bucket &bucket, const double *x, const double *y, DecimatedSeries &out)
{
    if (bucket.minIndex == kNone) {
        if (bucket.nanIndex != kNone) {
            out.x.append(x[bucket.nanIndex]);
            out.y.append(y[bucket.nanIndex]);
        }
        return;
    }
    const size_t first = std::min(bucket.minIndex, bucket.maxIndex);
    const size_t second = std::max(bucket.minIndex, bucket.maxIndex);
    out.x.append(x[first]);
    out.y.append(y[first]);
    if (second != first) {
        out.x.append(x[second]);
        out.y.append(y[second]);
    }
}

void addToBucket(Bucket &bucket, const double *y, size_t i)
{
    const double value = y[i];
    if (std::isnan(value)) {
        if (bucket.nanIndex == kNone)
            bucket.nanIndex = i;
        return;
    }
    if (bucket.minIndex == kNone) {
        bucket.minIndex = bucket.maxIndex = i;
        return;
    }
    if (value < y[bucket.minIndex])
        bucket.minIndex = i;
    if (value > y[bucket.maxIndex])
        bucket.maxIndex = i;
}

} // namespace

DecimatedSeries decimate(const double *x, const double *y, size_t count, bool xSorted, double xMin, double xMax,
                         int pixelWidth)
{
    DecimatedSeries out;
    if (count == 0 || pixelWidth <= 0 || !(xMax >= xMin))
        return out;
    const auto columns = static_cast<size_t>(pixelWidth);
    const double width = xMax > xMin ? (xMax - xMin) / static_cast<double>(columns) : 1.0;
    auto columnOf = [&](double value) {
        const double column = std::floor((value - xMin) / width);
        return std::min(columns - 1, static_cast<size_t>(std::max(0.0, column)));
    };

    if (xSorted) {
        const size_t begin = static_cast<size_t>(std::lower_bound(x, x + count, xMin) - x);
        const size_t end = static_cast<size_t>(std::upper_bound(x, x + count, xMax) - x);
        const size_t inRange = end - begin;
        out.x.reserve(static_cast<qsizetype>(std::min(inRange, 2 * columns) + 2));
        out.y.reserve(out.x.capacity());
        if (begin > 0) {
            out.x.append(x[begin - 1]);
            out.y.append(y[begin - 1]);
        }
        if (inRange <= 2 * columns) {
            for (size_t i = begin; i < end; ++i) {
                out.x.append(x[i]);
                out.y.append(y[i]);
            }
        } else {
            // Walk the columns: one comparison per point against the column's right edge.
            size_t i = begin;
            while (i < end) {
                const size_t column = columnOf(x[i]);
                const double limit = column + 1 == columns ? std::numeric_limits<double>::infinity()
                                                           : xMin + static_cast<double>(column + 1) * width;
                Bucket bucket;
                double minimum = std::numeric_limits<double>::infinity();
                double maximum = -std::numeric_limits<double>::infinity();
                do { // at least one point, even if rounding put it past the edge
                    const double value = y[i];
                    if (value < minimum) {
                        minimum = value;
                        bucket.minIndex = i;
                    }
                    if (value > maximum) {
                        maximum = value;
                        bucket.maxIndex = i;
                    }
                    if (std::isnan(value) && bucket.nanIndex == kNone)
                        bucket.nanIndex = i;
                    ++i;
                } while (i < end && x[i] < limit);
                if (bucket.minIndex != kNone && bucket.maxIndex == kNone)
                    bucket.maxIndex = bucket.minIndex;
                if (bucket.maxIndex != kNone && bucket.minIndex == kNone)
                    bucket.minIndex = bucket.maxIndex;
                emitBucket(bucket, x, y, out);
            }
        }
        if (end < count) {
            out.x.append(x[end]);
            out.y.append(y[end]);
        }
        return out;
    }

    // Unsorted x (a rank restarted from a checkpoint): one pass into per-column buckets.
    std::vector<Bucket> buckets(columns);
    size_t inRange = 0;
    for (size_t i = 0; i < count; ++i) {
        if (x[i] >= xMin && x[i] <= xMax) {
            addToBucket(buckets[columnOf(x[i])], y, i);
            ++inRange;
        }
    }
    if (inRange == 0)
        return out;
    for (const Bucket &bucket : buckets)
        emitBucket(bucket, x, y, out);
    return out;
}

DecimatedSeries decimate(const Series &series, double xMin, double xMax, int pixelWidth, XAxis axis)
{
    return decimate(series.xs(axis).data(), series.values.data(), series.size(), series.sorted(axis), xMin, xMax,
                    pixelWidth);
}

} // namespace accel::monitor
