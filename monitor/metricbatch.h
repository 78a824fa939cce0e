// Samples decoded from metrics lines (docs/metrics.md), in a flat, column-friendly batch: one row
// per line, the named scalars of all rows in one vector. Names are indices into `names`, which
// the producing parser keeps stable for its lifetime.
#pragma once

#include <QByteArray>
#include <QMetaType>
#include <QString>

#include <cstdint>
#include <limits>
#include <vector>

namespace accel::monitor {

enum class SampleKind : std::uint8_t { Train, Eval, System, Other };

// Value of MetricRow::step when the line has no step (system samples).
constexpr std::int64_t kNoStep = std::numeric_limits<std::int64_t>::min();

struct MetricValue {
    int name = 0;       // index into MetricBatch::names
    double value = 0.0; // NaN for null / non-finite
};

struct MetricRow {
    double time = std::numeric_limits<double>::quiet_NaN();
    int rank = -1;
    std::int64_t step = kNoStep;
    SampleKind kind = SampleKind::Train;
    std::uint32_t firstValue = 0; // index into MetricBatch::values
    std::uint32_t valueCount = 0;
};

struct MetricBatch {
    QString source;                // where it came from, e.g. "metrics/rank0.jsonl"
    std::vector<QByteArray> names; // scalar names by index
    std::vector<MetricRow> rows;
    std::vector<MetricValue> values;

    bool isEmpty() const { return rows.empty(); }
    void clear()
    {
        rows.clear();
        values.clear();
    }
};

} // namespace accel::monitor

Q_DECLARE_METATYPE(accel::monitor::MetricBatch)
