#include "monitor/systemsampler.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/processidentity.h"

#include "monitor/nvmlreader.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>

#include <cmath>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <set>
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

struct ProcStat {
    bool alive = false;
    qint64 processGroup = 0;
    unsigned long long ticks = 0; // utime + stime in clock ticks
};

// A live process's group and CPU time; not alive when gone or exited and not yet reaped (a zombie
// has no memory left to sample).
ProcStat readStat(qint64 pid)
{
    ProcStat stat;
    if (const auto parsed = rundir::readProcessStat(pid)) {
        stat.alive = true;
        stat.processGroup = parsed->processGroup;
        stat.ticks = parsed->cpuTicks;
    }
    return stat;
}

double residentBytes(qint64 pid)
{
    std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
    long long size = 0;
    long long resident = 0;
    if (statm >> size >> resident)
        return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
    return 0;
}

// Every process of the given process groups (/proc scan), with its stat, by group.
std::map<qint64, std::map<qint64, ProcStat>> groupMembers(const std::set<qint64> &groups)
{
    std::map<qint64, std::map<qint64, ProcStat>> members;
    if (groups.empty())
        return members;
    DIR *proc = ::opendir("/proc");
    if (!proc)
        return members;
    while (const dirent *entry = ::readdir(proc)) {
        char *end = nullptr;
        const long long pid = std::strtoll(entry->d_name, &end, 10);
        if (pid <= 0 || *end != '\0')
            continue;
        const ProcStat stat = readStat(pid);
        if (stat.alive && groups.count(stat.processGroup))
            members[stat.processGroup][pid] = stat;
    }
    ::closedir(proc);
    return members;
}

struct Watched {
    std::map<qint64, ProcStat> all;                // every live watched process, by pid
    std::map<int, std::vector<qint64>> rankGroups; // rank -> the live processes of its group
};

// A rank's pid leads its own process group (the launcher starts each rank with setsid), so the
// rank's usage includes what it forked (data loader workers, compiler jobs).
Watched collectWatched(const QList<qint64> &pids, const std::map<int, qint64> &ranks)
{
    Watched watched;
    for (qint64 pid : pids) {
        const ProcStat stat = readStat(pid);
        if (stat.alive)
            watched.all[pid] = stat;
    }
    std::set<qint64> groups;
    for (const auto &[rank, pid] : ranks)
        groups.insert(pid);
    const auto members = groupMembers(groups);
    for (const auto &[rank, pid] : ranks) {
        std::vector<qint64> &list = watched.rankGroups[rank];
        const auto found = members.find(pid);
        if (found != members.end()) {
            for (const auto &[member, stat] : found->second) {
                list.push_back(member);
                watched.all[member] = stat;
            }
        } else if (const ProcStat stat = readStat(pid); stat.alive) {
            list.push_back(pid); // not a group leader (e.g. a test's own child): the process alone
            watched.all[pid] = stat;
        }
    }
    return watched;
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

void SystemSampler::setOutputFile(const QString &runDirectory, const QString &relative)
{
    m_outputDirectory = runDirectory;
    m_outputFile = relative;
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
    for (const auto &[pid, stat] : collectWatched(m_pids, m_rankPids).all)
        m_lastProcessTicks[pid] = stat.ticks;
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

    const Watched watched = collectWatched(m_pids, m_rankPids);
    struct Usage {
        int processes = 0;
        double rssBytes = 0;
        double cpuPercent = std::nan(""); // NaN until one of the processes has an earlier reading
        double deviceBytes = std::nan("");
    };
    std::map<qint64, double> rssCache;
    const double ticksPerSecond = static_cast<double>(::sysconf(_SC_CLK_TCK));
    auto usageOf = [&](auto begin, auto end) {
        Usage usage;
        for (auto it = begin; it != end; ++it) {
            const qint64 pid = *it;
            const ProcStat &stat = watched.all.at(pid);
            ++usage.processes;
            auto rss = rssCache.find(pid);
            if (rss == rssCache.end())
                rss = rssCache.emplace(pid, residentBytes(pid)).first;
            usage.rssBytes += rss->second;
            const auto previous = m_lastProcessTicks.find(pid);
            if (previous != m_lastProcessTicks.end() && stat.ticks >= previous->second && elapsed > 0) {
                const double percent =
                    100.0 * static_cast<double>(stat.ticks - previous->second) / ticksPerSecond / elapsed;
                usage.cpuPercent = std::isfinite(usage.cpuPercent) ? usage.cpuPercent + percent : percent;
            }
            if (const auto device = gpuMemory.find(pid); device != gpuMemory.end())
                usage.deviceBytes =
                    std::isfinite(usage.deviceBytes) ? usage.deviceBytes + device->second : device->second;
        }
        return usage;
    };
    std::vector<qint64> everyPid;
    for (const auto &[pid, stat] : watched.all)
        everyPid.push_back(pid);
    const Usage total = usageOf(everyPid.begin(), everyPid.end());

    QByteArray lines = "{\"v\":1,\"time\":" + time +
                       ",\"rank\":-1,\"kind\":\"system\",\"cpu_percent\":" + number(cpuPercent) +
                       ",\"mem_used_bytes\":" + number(memTotal - memAvailable) +
                       ",\"mem_total_bytes\":" + number(memTotal) + ",\"load_1m\":" + number(load);
    if (!m_pids.isEmpty() || !m_rankPids.empty()) {
        lines += ",\"processes\":" + QByteArray::number(total.processes) +
                 ",\"mem_rss_bytes\":" + number(total.rssBytes) +
                 ",\"processes_cpu_percent\":" + number(total.cpuPercent);
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
        const std::vector<qint64> &group = watched.rankGroups.at(rank);
        if (group.empty())
            continue; // gone
        const Usage usage = usageOf(group.begin(), group.end());
        lines += "{\"v\":1,\"time\":" + time + ",\"rank\":" + QByteArray::number(rank) +
                 ",\"kind\":\"system\",\"pid\":" + QByteArray::number(pid) +
                 ",\"processes\":" + QByteArray::number(usage.processes) +
                 ",\"cpu_percent\":" + number(usage.cpuPercent) + ",\"mem_rss_bytes\":" + number(usage.rssBytes);
        if (std::isfinite(usage.deviceBytes))
            lines += ",\"mem_device_bytes\":" + number(usage.deviceBytes);
        lines += "}\n";
    }
    m_lastProcessTicks.clear();
    for (const auto &[pid, stat] : watched.all)
        m_lastProcessTicks[pid] = stat.ticks;
    m_lastSampleNs = nowNs;
    if (!m_outputFile.isEmpty() && !lines.isEmpty()) {
        auto fd = rundir::openRunFile(QFile::encodeName(m_outputDirectory).toStdString(),
                                      QFile::encodeName(m_outputFile).toStdString(), rundir::OpenFor::Append);
        if (fd) {
            (void)rundir::writeAll(*fd, lines.constData(), std::size_t(lines.size()));
            ::close(*fd);
        }
    }
    Q_EMIT sampled(lines);
    return lines;
}

} // namespace accel::monitor
