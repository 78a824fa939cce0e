// Appends metric lines (docs/metrics.md, format version 1) for one rank: one JSON object per
// line, written with a single O_APPEND write so ranks sharing one file never interleave.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace accel::runtime {

class MetricsWriter {
public:
    // $ACCEL_METRICS_FILE, else $ACCEL_RUN_DIR/metrics/rank<N>.jsonl, else "" (disabled).
    static std::string defaultPath(int rank);

    MetricsWriter(std::string path, int rank);
    ~MetricsWriter();
    MetricsWriter(const MetricsWriter &) = delete;
    MetricsWriter &operator=(const MetricsWriter &) = delete;

    bool enabled() const { return m_fd >= 0; }
    const std::string &path() const { return m_path; }

    using Values = std::vector<std::pair<std::string, double>>;
    // kind: "train" (written as absent), "eval" or "system". Non-finite values become null.
    void log(int64_t step, const Values &values, const std::string &kind = "train");
    // The line log() would write (without the newline), for tests and other sinks.
    static std::string formatLine(double time, int rank, int64_t step, const Values &values, const std::string &kind);

    // Resident set size of this process in bytes (from /proc/self/statm), 0 if unknown.
    static double residentBytes();

private:
    std::string m_path;
    int m_rank = 0;
    int m_fd = -1;
};

} // namespace accel::runtime
