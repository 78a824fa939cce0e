// MetricsParser: bytes of a metrics file (docs/metrics.md) in, samples out. Pure and
// single-threaded: feed it chunks as they arrive (lines may be split anywhere, CRLF is fine);
// complete lines are decoded by a hand-written scanner for the flat JSON object, with a full
// JSON parse only for unusual lines (escaped strings, nested values). Lines that are not a JSON
// object are skipped and counted; lines with a newer major version are rejected and counted.
#pragma once

#include "monitor/metricbatch.h"

#include <QByteArrayView>

#include <string>
#include <unordered_map>

namespace accel::monitor {

struct ParserStats {
    std::int64_t lines = 0;         // complete non-empty lines seen
    std::int64_t samples = 0;       // lines turned into a row
    std::int64_t junk = 0;          // lines that could not be parsed
    std::int64_t futureVersion = 0; // lines with "v" greater than 1
    std::int64_t slowPath = 0;      // lines that needed the full JSON parser
};

class MetricsParser {
public:
    enum class LineResult { Sample, Empty, Junk, FutureVersion };

    // Rank used for lines without "rank" (e.g. the N of rank<N>.jsonl); -1 by default.
    void setDefaultRank(int rank) { m_defaultRank = rank; }
    // Longest partial line kept while waiting for its newline; longer lines are dropped as junk.
    void setMaximumLineLength(qsizetype bytes) { m_maximumLineLength = bytes; }

    // Decodes every complete line of `chunk` (plus what was pending) into `out`; keeps the
    // trailing partial line for the next call. `out.names` is refreshed to this parser's table.
    void feed(QByteArrayView chunk, MetricBatch &out);
    // End of stream: decodes a pending line that has no newline.
    void finish(MetricBatch &out);
    // Forgets the pending partial line (the file was truncated or replaced). Names stay.
    void resetStream();

    // Decodes one line (without its newline) into `out`.
    LineResult parseLine(const char *begin, const char *end, MetricBatch &out);

    const ParserStats &stats() const { return m_stats; }
    const std::vector<QByteArray> &names() const { return m_names; }
    bool hasPendingBytes() const { return !m_pending.isEmpty(); }

private:
    void consumeLine(const char *begin, const char *end, MetricBatch &out);
    LineResult parseSlow(const char *begin, const char *end, MetricBatch &out);
    int nameId(const char *begin, const char *end);
    int nameIdAt(size_t position, const char *begin, const char *end);

    std::vector<QByteArray> m_names;
    std::unordered_map<std::string, int> m_nameIds;
    std::vector<int> m_recentIds; // name id seen at each key position of the previous line
    std::string m_key;            // scratch for lookups
    QByteArray m_pending;
    bool m_dropping = false; // inside an over-long line: skip until its newline
    qsizetype m_maximumLineLength = 1 << 20;
    int m_defaultRank = -1;
    ParserStats m_stats;
};

} // namespace accel::monitor
