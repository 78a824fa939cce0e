#include "monitor/supervisormonitor.h"

#include "core/rundir/runlayout.h"

#include "monitor/rundirectoryfollower.h"

#include <QDir>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace accel::monitor {

Result<SupervisorMonitorSettings> supervisorMonitorSettings(double systemSampleHz)
{
    SupervisorMonitorSettings settings;
    settings.systemSampleHz = systemSampleHz;
    const char *text = std::getenv(kHangMinimumVariable);
    if (text && *text) {
        char *end = nullptr;
        const double seconds = std::strtod(text, &end);
        if (*end != '\0' || !(seconds > 0) || seconds > 86400.0)
            return makeError(ErrorCode::InvalidInput, std::string(kHangMinimumVariable) +
                                                          ": expected seconds (> 0, at most 86400), got '" + text +
                                                          "'");
        settings.hang.minimumMs = static_cast<std::int64_t>(seconds * 1000.0);
        // Check often enough that a short minimum is honoured within a quarter of it.
        settings.hang.checkIntervalMs =
            static_cast<int>(std::clamp<std::int64_t>(settings.hang.minimumMs / 4, 50, 1000));
    }
    return settings;
}

SupervisorMonitor::SupervisorMonitor(const QString &runDirectory, const SupervisorMonitorSettings &settings,
                                     QObject *parent)
    : QObject(parent), m_directory(runDirectory), m_settings(settings)
{
    m_sampler.setOutputFile(runDirectory, QString::fromStdString(rundir::systemMetricsFile()));
    if (settings.systemSampleHz > 0)
        m_sampler.setInterval(std::max(1, static_cast<int>(std::lround(1000.0 / settings.systemSampleHz))));
    m_store.setKeepScalars(false); // step times and progress are all the detectors need
    HangSettings hang = settings.hang;
    hang.requireFirstStep = true; // a script that logs no metrics must not look hung after a minute
    m_hang.setSettings(hang);
    m_stragglers.setSettings(settings.straggler);
    if (settings.detectors) {
        m_follower = new RunDirectoryFollower(runDirectory, this);
        // Detectors need metrics and launcher events; logs and the sampler's own lines are skipped.
        m_follower->setFileFilter([](const QString &relativePath) {
            return !rundir::inLogs(relativePath.toStdString()) &&
                   relativePath.toStdString() != rundir::systemMetricsFile();
        });
        connect(m_follower, &RunSource::metricsReceived, &m_store, &MetricStore::append);
        connect(m_follower, &RunSource::eventsReceived, &m_hang, &HangDetector::observeEvents);
        const EventWriter writer = eventsFileWriter(runDirectory);
        m_hang.setEventWriter(writer);
        m_stragglers.setEventWriter(writer);
    }
}

SupervisorMonitor::~SupervisorMonitor() = default;

QJsonObject SupervisorMonitor::manifestEntry() const
{
    return QJsonObject{{QStringLiteral("detectors"),
                        m_settings.detectors ? QString::fromLatin1(kSupervisorDetection) : QStringLiteral("off")},
                       {QStringLiteral("system_sample_hz"), m_settings.systemSampleHz},
                       {QStringLiteral("hang_minimum_s"), static_cast<double>(m_settings.hang.minimumMs) / 1000.0}};
}

void SupervisorMonitor::start()
{
    if (m_running)
        return;
    m_running = true;
    if (m_settings.systemSampleHz > 0) {
        QDir(m_directory).mkpath(QLatin1String(rundir::file::Metrics));
        m_sampler.start();
    }
    if (m_follower) {
        m_follower->start();
        m_hang.start();
    }
}

void SupervisorMonitor::stop()
{
    if (!m_running)
        return;
    m_running = false;
    m_sampler.stop();
    if (m_follower) {
        m_hang.setProcessesAlive(false);
        m_hang.stop();
        m_follower->stop();
    }
}

void SupervisorMonitor::rankStarted(int rank, qint64 pid)
{
    m_sampler.setRankProcess(rank, pid);
}

void SupervisorMonitor::rankExited(int rank)
{
    m_sampler.removeRank(rank);
}

} // namespace accel::monitor
