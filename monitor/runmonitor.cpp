#include "monitor/runmonitor.h"

#include "core/rundir/runlayout.h"

#include "monitor/rundirectoryfollower.h"
#include "monitor/runsmodel.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>

namespace accel::monitor {

RunMonitor::RunMonitor(RunSource *source, QObject *parent) : QObject(parent), m_source(source)
{
    m_source->setParent(this);
    connect(m_source, &RunSource::metricsReceived, &m_store, &MetricStore::append);
    connect(m_source, &RunSource::eventsReceived, this, &RunMonitor::onEvents);
    connect(m_source, &RunSource::logLinesReceived, &m_logs, &LogModel::appendLines);
    connect(m_source, &RunSource::streamRestarted, this, &RunMonitor::streamRestarted);
    connect(m_source, &RunSource::ended, this, &RunMonitor::ended);
    connect(m_source, &RunSource::runInfoChanged, this, [this](const QJsonObject &manifest) {
        m_manifest = manifest;
        RunInfo info;
        info.state = manifest.value(QLatin1String("state")).toString();
        if (info.isFinal())
            m_hang.setProcessesAlive(false);
        Q_EMIT manifestChanged(manifest);
    });
    connect(&m_hang, &HangDetector::hangSuspected, this, &RunMonitor::onDetectorEvent);
    connect(&m_hang, &HangDetector::hangCleared, this, &RunMonitor::onDetectorEvent);
    connect(&m_stragglers, &StragglerDetector::stragglerDetected, this, &RunMonitor::onDetectorEvent);
    connect(&m_stragglers, &StragglerDetector::stragglerCleared, this, &RunMonitor::onDetectorEvent);
}

RunMonitor *RunMonitor::forDirectory(const QString &runDirectory, QObject *parent)
{
    auto *monitor = new RunMonitor(new RunDirectoryFollower(runDirectory), parent);
    monitor->setEventsFile(runDirectory);
    return monitor;
}

void RunMonitor::setEventsFile(const QString &runDirectory)
{
    m_eventsDirectory = runDirectory;
    m_writer = runDirectory.isEmpty() ? EventWriter() : eventsFileWriter(runDirectory);
}

void RunMonitor::start()
{
    m_source->start();
    m_hang.start();
}

void RunMonitor::stop()
{
    m_hang.stop();
    m_source->stop();
}

void RunMonitor::onEvents(const QList<RunEvent> &events)
{
    m_hang.observeEvents(events);
    m_ranks.observeEvents(events);
    m_events.appendEvents(events);
    Q_EMIT eventsAppended(events);
}

bool RunMonitor::detectionLeftToSupervisor() const
{
    if (supervisorDetects(m_manifest))
        return true;
    if (m_eventsDirectory.isEmpty())
        return false;
    // The follower may deliver metrics before it has read run.json: ask the file (events are rare).
    QFile file(QDir(m_eventsDirectory).filePath(QLatin1String(rundir::file::Manifest)));
    return file.open(QIODevice::ReadOnly) && supervisorDetects(QJsonDocument::fromJson(file.readAll()).object());
}

void RunMonitor::onDetectorEvent(const RunEvent &event)
{
    if (detectionLeftToSupervisor())
        return; // the supervisor writes this episode's event; it comes back through the source
    if (m_writer)
        m_writer(event); // comes back through the follower like the launcher's events
    else
        onEvents({event});
}

} // namespace accel::monitor
