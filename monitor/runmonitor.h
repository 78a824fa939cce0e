// RunMonitor: the whole monitoring pipeline of one run, wired once for the studio and the CLI:
//   RunSource (local directory or accel.tail stream) -> MetricStore -> RanksModel
//                                                    -> EventsModel, LogModel
//   HangDetector + StragglerDetector over the store, their events written to the run's
//   events.jsonl (local runs, so every reader sees them) or handed to the models directly.
#pragma once

#include "monitor/detectors.h"
#include "monitor/eventsmodel.h"
#include "monitor/logmodel.h"
#include "monitor/metricstore.h"
#include "monitor/ranksmodel.h"
#include "monitor/runsource.h"

#include <QJsonObject>
#include <QObject>

#include <memory>

namespace accel::monitor {

class RunMonitor : public QObject {
    Q_OBJECT
public:
    // Takes the source over (it becomes a child of the monitor).
    explicit RunMonitor(RunSource *source, QObject *parent = nullptr);
    // Follows a local run directory; detector events are appended to its events.jsonl.
    static RunMonitor *forDirectory(const QString &runDirectory, QObject *parent = nullptr);

    void start();
    void stop();

    // Where detector events go: appended to this run directory's events.jsonl (and read back by
    // the follower), or, when empty, straight into the models. Runs whose run.json says
    // monitor.detectors = "supervisor" get none: their supervisor writes them (docs/monitor.md).
    void setEventsFile(const QString &runDirectory);

    RunSource *source() const { return m_source; }
    MetricStore *store() { return &m_store; }
    RanksModel *ranksModel() { return &m_ranks; }
    EventsModel *eventsModel() { return &m_events; }
    LogModel *logModel() { return &m_logs; }
    HangDetector *hangDetector() { return &m_hang; }
    StragglerDetector *stragglerDetector() { return &m_stragglers; }
    QJsonObject manifest() const { return m_manifest; }

Q_SIGNALS:
    void manifestChanged(const QJsonObject &manifest);
    void eventsAppended(const QList<accel::monitor::RunEvent> &events);
    void streamRestarted(const QString &relativePath, const QString &reason);
    void ended(const QString &reason);

private:
    void onEvents(const QList<RunEvent> &events);
    void onDetectorEvent(const RunEvent &event);

    RunSource *m_source = nullptr;
    MetricStore m_store;
    RanksModel m_ranks{&m_store};
    EventsModel m_events;
    LogModel m_logs;
    HangDetector m_hang{&m_store};
    StragglerDetector m_stragglers{&m_store};
    bool detectionLeftToSupervisor() const;

    EventWriter m_writer;
    QString m_eventsDirectory;
    QJsonObject m_manifest;
};

} // namespace accel::monitor
