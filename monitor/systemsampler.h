// SystemSampler: system samples for a run's metrics/system.jsonl (docs/metrics.md, kind "system"),
// read from /proc on a timer. Every sample writes one host line (rank -1: host CPU busy percent,
// memory in use and total, 1-minute load, and totals over the watched processes) and one line per
// rank process (rank N: its pid, CPU percent (100 = one core) and resident memory, plus GPU memory
// of that pid when NVML is present). With NVML, the host line also carries per-GPU utilisation and
// memory (gpu<i>_util_percent, gpu<i>_mem_used_bytes, gpu<i>_mem_total_bytes).
// Meant for the supervisor process that owns the run directory.
#pragma once

#include <QList>
#include <QObject>
#include <QTimer>

#include <map>
#include <memory>

namespace accel::monitor {

class NvmlReader;

class SystemSampler : public QObject {
    Q_OBJECT
public:
    explicit SystemSampler(QObject *parent = nullptr);
    ~SystemSampler() override;

    // Lines are appended to `relative` inside the run directory, through core/rundir (never through
    // a symlink, and into the folder the supervisor holds by descriptor); empty: signal only.
    void setOutputFile(const QString &runDirectory, const QString &relative);
    // Processes summed into the host line only (no per-rank lines).
    void setProcesses(const QList<qint64> &pids);
    // The process of a rank (a restart replaces it); it gets its own line in every sample, summed
    // over its process group when it leads one (launcher ranks do: setsid), so children count.
    void setRankProcess(int rank, qint64 pid);
    void removeRank(int rank); // the rank exited: no more lines for it
    void clearRanks();
    std::map<int, qint64> rankProcesses() const { return m_rankPids; }
    void setInterval(int milliseconds); // default 2000
    int interval() const { return m_timer.interval(); }
    bool isActive() const { return m_timer.isActive(); }

    void start(); // first sample after one interval (CPU percentages need two readings)
    void stop();

    // Takes one sample now and returns its lines (newlines included); CPU fields are null on the
    // first call for a process. Also appends them to the output file (one write) and emits sampled().
    QByteArray sampleNow();

Q_SIGNALS:
    void sampled(const QByteArray &lines);

private:
    struct CpuTimes {
        unsigned long long busy = 0;
        unsigned long long total = 0;
    };
    static bool readHostCpu(CpuTimes &times);

    QTimer m_timer;
    QString m_outputDirectory;
    QString m_outputFile;
    QList<qint64> m_pids;
    std::map<int, qint64> m_rankPids;
    CpuTimes m_lastHost;
    bool m_haveHost = false;
    std::map<qint64, unsigned long long> m_lastProcessTicks;
    qint64 m_lastSampleNs = 0;
    std::unique_ptr<NvmlReader> m_nvml;
};

} // namespace accel::monitor
