#include "monitor/systemsampler.h"

#include "monitor/nvmlreader.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace accel::monitor {

namespace {

qint64 monotonicNs()
{
    static QElapsedTimer clock = [] {
        QElapsedTimer timer;
        timer.start();
        return timer;
    }();
    return clock.nsecsElapsed();
}

// utime + stime of a process in clock ticks; false when it is gone.
bool readProcessTicks(qint64 pid, unsigned long long &ticks, double &residentBytes)
{
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line))
        return false;
    const size_t close = line.rfind(')');
    if (close == std::string::npos)
        return false;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    unsigned long long utime = 0;
    unsigned long long stime = 0;
    for (int index = 3; index <= 15 && fields >> field; ++index) {
        if (index == 14)
            utime = std::stoull(field);
        if (index == 15)
            stime = std::stoull(field);
    }
    ticks = utime + stime;
    std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
    long long size = 0;
    long long resident = 0;
    if (statm >> size >> resident)
        residentBytes = static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
    return true;
}

QByteArray number(double value)
{
    return std::isfinite(value) ? QByteArray::number(value, 'g', 10) : QByteArray("null");
}

} // namespace

SystemSampler::SystemSampler(QObject *parent) : QObject(parent), m_nvml(std::make_unique<NvmlReader>())
{
    m_timer.setInterval(2000);
    connect(&m_timer, &QTimer::timeout, this, &SystemSampler::sampleNow);
}

SystemSampler::~SystemSampler() = default;

void SystemSampler::setOutputFile(const QString &path)
{
    m_outputFile = path;
}

void SystemSampler::setProcesses(const QList<qint64> &pids)
{
    m_pids = pids;
}

void SystemSampler::setRankProcess(int rank, qint64 pid)
{
    m_rankPids[rank] = pid;
}

void SystemSampler::removeRank(int rank)
{
    m_rankPids.erase(rank);
}

void SystemSampler::clearRanks()
{
    m_rankPids.clear();
}

void SystemSampler::setInterval(int milliseconds)
{
    m_timer.setInterval(milliseconds);
}

void SystemSampler::start()
{
    CpuTimes host;
    m_haveHost = readHostCpu(host);
    m_lastHost = host;
    m_lastProcessTicks.clear();
    QList<qint64> all = m_pids;
    for (const auto &[rank, pid] : m_rankPids)
        all.append(pid);
    for (qint64 pid : all) {
        unsigned long long ticks = 0;
        double rss = 0;
        if (readProcessTicks(pid, ticks, rss))
            m_lastProcessTicks[pid] = ticks;
    }
    m_lastSampleNs = monotonicNs();
    m_timer.start();
}

void SystemSampler::stop()
{
    m_timer.stop();
}

bool SystemSampler::readHostCpu(CpuTimes &times)
{
    std::ifstream in("/proc/stat");
    std::string cpu;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || cpu != "cpu")
        return false;
    times.busy = user + nice + system + irq + softirq + steal;
    times.total = times.busy + idle + iowait;
    return true;
}

SystemSampler::ProcessReading SystemSampler::readProcess(qint64 pid, double elapsedSeconds,
                                                         std::map<qint64, unsigned long long> &ticksNow)
{
    ProcessReading reading;
    reading.cpuPercent = std::nan("");
    unsigned long long ticks = 0;
    if (!readProcessTicks(pid, ticks, reading.rssBytes))
        return reading;
    reading.alive = true;
    ticksNow[pid] = ticks;
    const auto previous = m_lastProcessTicks.find(pid);
    if (previous != m_lastProcessTicks.end() && ticks >= previous->second && elapsedSeconds > 0)
        reading.cpuPercent = 100.0 * static_cast<double>(ticks - previous->second) /
                             static_cast<double>(::sysconf(_SC_CLK_TCK)) / elapsedSeconds;
    return reading;
}

QByteArray SystemSampler::sampleNow()
{
    const qint64 nowNs = monotonicNs();
    const double elapsed = m_lastSampleNs > 0 ? (nowNs - m_lastSampleNs) / 1e9 : 0.0;
    const QByteArray time = QByteArray::number(QDateTime::currentMSecsSinceEpoch() / 1000.0, 'f', 3);

    double cpuPercent = std::nan("");
    CpuTimes host;
    if (readHostCpu(host)) {
        if (m_haveHost && host.total > m_lastHost.total)
            cpuPercent = 100.0 * static_cast<double>(host.busy - m_lastHost.busy) /
                         static_cast<double>(host.total - m_lastHost.total);
        m_lastHost = host;
        m_haveHost = true;
    }

    double memTotal = std::nan("");
    double memAvailable = std::nan("");
    {
        std::ifstream in("/proc/meminfo");
        std::string key;
        double value = 0;
        std::string unit;
        while (in >> key >> value >> unit) {
            if (key == "MemTotal:")
                memTotal = value * 1024.0;
            else if (key == "MemAvailable:")
                memAvailable = value * 1024.0;
        }
    }
    double load = std::nan("");
    {
        std::ifstream in("/proc/loadavg");
        in >> load;
    }

    std::map<qint64, double> gpuMemory;
    const std::vector<GpuReading> gpus = m_nvml->read(gpuMemory);

    // Every watched process once (a rank's pid may also be in the plain list).
    std::map<qint64, unsigned long long> ticksNow;
    std::map<qint64, ProcessReading> readings;
    QList<qint64> all = m_pids;
    for (const auto &[rank, pid] : m_rankPids)
        all.append(pid);
    double rssSum = 0;
    double cpuSum = 0;
    bool haveCpu = false;
    int alive = 0;
    for (qint64 pid : all) {
        if (readings.count(pid))
            continue;
        const ProcessReading reading = readProcess(pid, elapsed, ticksNow);
        readings[pid] = reading;
        if (!reading.alive)
            continue;
        ++alive;
        rssSum += reading.rssBytes;
        if (std::isfinite(reading.cpuPercent)) {
            cpuSum += reading.cpuPercent;
            haveCpu = true;
        }
    }
    m_lastProcessTicks = ticksNow;
    m_lastSampleNs = nowNs;

    QByteArray lines = "{\"v\":1,\"time\":" + time +
                       ",\"rank\":-1,\"kind\":\"system\",\"cpu_percent\":" + number(cpuPercent) +
                       ",\"mem_used_bytes\":" + number(memTotal - memAvailable) +
                       ",\"mem_total_bytes\":" + number(memTotal) + ",\"load_1m\":" + number(load);
    if (!all.isEmpty()) {
        lines += ",\"processes\":" + QByteArray::number(alive) + ",\"mem_rss_bytes\":" + number(rssSum) +
                 ",\"processes_cpu_percent\":" + number(haveCpu ? cpuSum : std::nan(""));
    }
    for (const GpuReading &gpu : gpus) {
        const QByteArray prefix = ",\"gpu" + QByteArray::number(gpu.index);
        if (gpu.utilPercent >= 0)
            lines += prefix + "_util_percent\":" + number(gpu.utilPercent);
        if (gpu.memUsedBytes >= 0)
            lines += prefix + "_mem_used_bytes\":" + number(gpu.memUsedBytes) + prefix +
                     "_mem_total_bytes\":" + number(gpu.memTotalBytes);
    }
    lines += "}\n";
    for (const auto &[rank, pid] : m_rankPids) {
        const ProcessReading &reading = readings[pid];
        if (!reading.alive)
            continue;
        lines += "{\"v\":1,\"time\":" + time + ",\"rank\":" + QByteArray::number(rank) +
                 ",\"kind\":\"system\",\"pid\":" + QByteArray::number(pid) +
                 ",\"cpu_percent\":" + number(reading.cpuPercent) + ",\"mem_rss_bytes\":" + number(reading.rssBytes);
        if (const auto device = gpuMemory.find(pid); device != gpuMemory.end())
            lines += ",\"mem_device_bytes\":" + number(device->second);
        lines += "}\n";
    }
    if (!m_outputFile.isEmpty()) {
        QFile file(m_outputFile);
        if (file.open(QIODevice::WriteOnly | QIODevice::Append | QIODevice::Unbuffered))
            file.write(lines);
    }
    Q_EMIT sampled(lines);
    return lines;
}

} // namespace accel::monitor
