// Fuzz target: a metrics JSONL stream (docs/metrics.md), fed in chunks whose sizes come from the
// input itself. The batch stays consistent: one row per sample, every value's name known, every
// row's values inside the batch.
#include "monitor/metricsparser.h"

#include <cstdint>
#include <cstdlib>

using namespace accel::monitor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    MetricsParser parser;
    parser.setMaximumLineLength(4096);
    MetricBatch batch;
    const char *bytes = reinterpret_cast<const char *>(data);
    size_t at = 0;
    while (at < size) {
        const size_t chunk = 1 + (static_cast<unsigned char>(bytes[at]) * 7u) % 257u;
        const size_t n = std::min(chunk, size - at);
        parser.feed(QByteArrayView(bytes + at, static_cast<qsizetype>(n)), batch);
        at += n;
    }
    parser.finish(batch);
    if (static_cast<int64_t>(batch.rows.size()) != parser.stats().samples)
        std::abort();
    if (parser.stats().samples + parser.stats().junk + parser.stats().futureVersion != parser.stats().lines)
        std::abort();
    for (const MetricRow &row : batch.rows) {
        if (size_t(row.firstValue) + row.valueCount > batch.values.size())
            std::abort();
    }
    for (const MetricValue &value : batch.values) {
        if (value.name < 0 || static_cast<size_t>(value.name) >= batch.names.size())
            std::abort();
    }
    return 0;
}
