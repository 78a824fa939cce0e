#include "monitor/systemsampler.h"

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

SystemSampler::SystemSampler(QObject *parent) : QObject(parent)
{
    m_timer.setInterval(2000);
    connect(&m_timer, &QTimer::timeout, this, &SystemSampler::sampleNow);
}

void SystemSampler::setOutputFile(const QString &path)
{
    m_outputFile = path;
}

void SystemSampler::setProcesses(const QList<qint64> &pids)
{
    m_pids = pids;
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
    for (qint64 pid : m_pids) {
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

QByteArray SystemSampler::sampleNow()
{
    const qint64 nowNs = monotonicNs();
    const double elapsed = m_lastSampleNs > 0 ? (nowNs - m_lastSampleNs) / 1e9 : 0.0;

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

    double rssSum = 0;
    double procCpu = std::nan("");
    unsigned long long tickDelta = 0;
    bool haveTicks = false;
    int alive = 0;
    std::map<qint64, unsigned long long> ticksNow;
    for (qint64 pid : m_pids) {
        unsigned long long ticks = 0;
        double rss = 0;
        if (!readProcessTicks(pid, ticks, rss))
            continue;
        ++alive;
        rssSum += rss;
        ticksNow[pid] = ticks;
        const auto previous = m_lastProcessTicks.find(pid);
        if (previous != m_lastProcessTicks.end() && ticks >= previous->second) {
            tickDelta += ticks - previous->second;
            haveTicks = true;
        }
    }
    m_lastProcessTicks = ticksNow;
    if (haveTicks && elapsed > 0)
        procCpu = 100.0 * static_cast<double>(tickDelta) / static_cast<double>(::sysconf(_SC_CLK_TCK)) / elapsed;
    m_lastSampleNs = nowNs;

    QByteArray line = "{\"v\":1,\"time\":" + QByteArray::number(QDateTime::currentMSecsSinceEpoch() / 1000.0, 'f', 3) +
                      ",\"rank\":-1,\"kind\":\"system\",\"cpu_percent\":" + number(cpuPercent) +
                      ",\"mem_used_bytes\":" + number(memTotal - memAvailable) +
                      ",\"mem_total_bytes\":" + number(memTotal) + ",\"load_1m\":" + number(load);
    if (!m_pids.isEmpty()) {
        line += ",\"processes\":" + QByteArray::number(alive) + ",\"mem_rss_bytes\":" + number(rssSum) +
                ",\"processes_cpu_percent\":" + number(procCpu);
    }
    line += "}\n";
    if (!m_outputFile.isEmpty()) {
        QFile file(m_outputFile);
        if (file.open(QIODevice::WriteOnly | QIODevice::Append | QIODevice::Unbuffered))
            file.write(line);
    }
    Q_EMIT sampled(line);
    return line;
}

} // namespace accel::monitor
