// SupervisorMonitor: what the `accel launch` supervisor runs next to its ranks so that a run is
// monitored with no studio open (docs/monitor.md, "Detection in the supervisor"):
//   - SystemSampler: per-rank CPU/RSS (and GPU memory with NVML) plus host lines, appended to
//     <run>/metrics/system.jsonl at `systemSampleHz` (0: off); rank pids come from the launcher's
//     signals through rankStarted()/rankExited(), so restarts re-target the new processes;
//   - HangDetector + StragglerDetector over a RunDirectoryFollower of the run's own directory
//     (metrics and events only; scalars are not kept, only step times), their events appended to
//     events.jsonl exactly once per episode.
// The launcher knows nothing of this class: the CLI connects the two.
#pragma once

#include "core/common/result.h"
#include "monitor/detectors.h"
#include "monitor/metricstore.h"
#include "monitor/systemsampler.h"

#include <QJsonObject>
#include <QObject>

namespace accel::monitor {

class RunDirectoryFollower;

struct SupervisorMonitorSettings {
    double systemSampleHz = 2.0; // 0: no system sampling; else 1..10 is the documented range
    bool detectors = true;
    HangSettings hang;
    StragglerSettings straggler;
};

// Environment variable overriding the hang minimum (seconds, > 0): for tests and tuning.
inline constexpr const char *kHangMinimumVariable = "ACCEL_HANG_MINIMUM_S";

// Settings with the hang minimum read from the environment; an unparsable value is an error
// naming the variable.
Result<SupervisorMonitorSettings> supervisorMonitorSettings(double systemSampleHz);

class SupervisorMonitor : public QObject {
    Q_OBJECT
public:
    SupervisorMonitor(const QString &runDirectory, const SupervisorMonitorSettings &settings,
                      QObject *parent = nullptr);
    ~SupervisorMonitor() override;

    // The "monitor" object for run.json: detectors ("supervisor" or "off"), system_sample_hz,
    // hang_minimum_s.
    QJsonObject manifestEntry() const;

    void start();
    // Stops sampling and detection (the run ended).
    void stop();

    SystemSampler *sampler() { return &m_sampler; }
    HangDetector *hangDetector() { return &m_hang; }
    StragglerDetector *stragglerDetector() { return &m_stragglers; }
    const MetricStore *store() const { return &m_store; }

public Q_SLOTS:
    void rankStarted(int rank, qint64 pid);
    void rankExited(int rank);

private:
    QString m_directory;
    SupervisorMonitorSettings m_settings;
    SystemSampler m_sampler;
    MetricStore m_store;
    HangDetector m_hang{&m_store};
    StragglerDetector m_stragglers{&m_store};
    RunDirectoryFollower *m_follower = nullptr;
    bool m_running = false;
};

} // namespace accel::monitor
