#include "core/runtime/metricswriter.h"

#include "core/common/log.h"
#include "core/rundir/runlayout.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace accel::runtime {

std::string MetricsWriter::defaultPath(int rank)
{
    if (const char *file = std::getenv("ACCEL_METRICS_FILE"); file && *file)
        return file;
    if (const char *runDir = std::getenv("ACCEL_RUN_DIR"); runDir && *runDir)
        return std::string(runDir) + "/" + rundir::metricsFile(rank);
    return {};
}

MetricsWriter::MetricsWriter(std::string path, int rank) : m_path(std::move(path)), m_rank(rank)
{
    if (m_path.empty())
        return;
    std::error_code ec;
    const auto parent = std::filesystem::path(m_path).parent_path();
    if (!parent.empty())
        std::filesystem::create_directories(parent, ec);
    m_fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (m_fd < 0)
        log::warning("runtime", m_path + ": cannot open the metrics file for appending; metrics are not recorded");
}

MetricsWriter::~MetricsWriter()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

std::string MetricsWriter::formatLine(double time, int rank, int64_t step, const Values &values,
                                      const std::string &kind)
{
    nlohmann::ordered_json line;
    line["v"] = 1;
    line["time"] = time;
    line["rank"] = rank;
    line["step"] = step;
    if (!kind.empty() && kind != "train")
        line["kind"] = kind;
    for (const auto &[name, value] : values) {
        if (std::isfinite(value))
            line[name] = value;
        else
            line[name] = nullptr;
    }
    return line.dump();
}

void MetricsWriter::log(int64_t step, const Values &values, const std::string &kind)
{
    if (m_fd < 0)
        return;
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const std::string line = formatLine(now, m_rank, step, values, kind) + "\n";
    if (::write(m_fd, line.data(), line.size()) != ssize_t(line.size()))
        log::warning("runtime", m_path + ": short write of a metrics line");
}

double MetricsWriter::residentBytes()
{
    std::ifstream in("/proc/self/statm");
    long long size = 0, resident = 0;
    if (!(in >> size >> resident))
        return 0;
    return double(resident) * double(::sysconf(_SC_PAGESIZE));
}

} // namespace accel::runtime
