// SystemSampler: host-level samples for a run's metrics/system.jsonl (docs/metrics.md: rank -1,
// kind "system"), read from /proc on a timer: host CPU busy percent, memory in use and total,
// 1-minute load, and for a set of processes (the run's ranks) their summed resident memory and
// CPU percent (100 = one core). Meant for the supervisor process that owns the run directory.
#pragma once

#include <QList>
#include <QObject>
#include <QTimer>

#include <map>

namespace accel::monitor {

class SystemSampler : public QObject {
    Q_OBJECT
public:
    explicit SystemSampler(QObject *parent = nullptr);

    void setOutputFile(const QString &path); // lines are appended; empty: signal only
    void setProcesses(const QList<qint64> &pids);
    void setInterval(int milliseconds); // default 2000

    void start(); // first sample after one interval (CPU percentages need two readings)
    void stop();

    // Takes one sample now and returns its line (newline included); CPU fields are null on the
    // first call. Also appends it to the output file and emits sampled().
    QByteArray sampleNow();

Q_SIGNALS:
    void sampled(const QByteArray &line);

private:
    struct CpuTimes {
        unsigned long long busy = 0;
        unsigned long long total = 0;
    };
    static bool readHostCpu(CpuTimes &times);

    QTimer m_timer;
    QString m_outputFile;
    QList<qint64> m_pids;
    CpuTimes m_lastHost;
    bool m_haveHost = false;
    std::map<qint64, unsigned long long> m_lastProcessTicks;
    qint64 m_lastSampleNs = 0;
};

} // namespace accel::monitor
