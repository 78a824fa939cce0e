// Detectors over a run's MetricStore that raise events (a signal, and optionally a line in the
// run's events.jsonl through an EventWriter):
//   HangDetector      "hang_suspected" when no rank's step advanced for
//                     max(minimum, factor x median step time) while the processes live;
//                     "hang_cleared" when steps advance again.
//   StragglerDetector "straggler_detected" when a rank's median step time over the last `window`
//                     steps is more than `margin` and `minimumGapS` above the median of the other
//                     ranks' for `persistSteps` of its steps; "straggler_cleared" when it is back
//                     within `clearMargin` (or half the gap) for as many steps. One pair of events
//                     per episode: noise around the margin never flaps.
// Thresholds are settings so tests (and impatient users) can use short ones.
#pragma once

#include "monitor/metricstore.h"
#include "monitor/runevent.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QTimer>

#include <functional>

namespace accel::monitor {

using EventWriter = std::function<void(const RunEvent &)>;

// run.json "monitor.detectors" when the run's supervisor raises detector events itself
// (SupervisorMonitor); a RunMonitor on such a run then raises none (no duplicate events).
inline constexpr const char *kSupervisorDetection = "supervisor";
bool supervisorDetects(const QJsonObject &manifest);
// Appends events to <runDirectory>/events.jsonl.
EventWriter eventsFileWriter(const QString &runDirectory);

struct HangSettings {
    std::int64_t minimumMs = 60000; // never suspect a hang sooner
    double medianFactor = 5.0;      // ... nor before this many median step times
    int checkIntervalMs = 1000;
    // Suspect nothing before the run has logged a step: scripts that log no metrics never "hang"
    // (the supervisor's detector sets it; a studio's keeps the stricter default).
    bool requireFirstStep = false;
};

class HangDetector : public QObject {
    Q_OBJECT
public:
    explicit HangDetector(const MetricStore *store, QObject *parent = nullptr);

    void setSettings(const HangSettings &settings);
    void setEventWriter(EventWriter writer) { m_writer = std::move(writer); }
    // Only live processes can hang; a finished run never does. Alive by default.
    void setProcessesAlive(bool alive);
    // Follows launcher events by what core/rundir/runevents.h says they mean for the ranks
    // (rundir::livenessOf): "started", "restarting", "rank_started" mean alive; "stopping_ranks",
    // "killed", "finished", "lost" (and "stopped", "failed") mean gone.
    void observeEvents(const QList<accel::monitor::RunEvent> &events);

    void start(); // checks on a timer from now on
    void stop();
    void check(); // evaluates right away

    std::int64_t thresholdMs() const;
    bool isHangSuspected() const { return m_suspected; }

Q_SIGNALS:
    void hangSuspected(const accel::monitor::RunEvent &event);
    void hangCleared(const accel::monitor::RunEvent &event);

private:
    void raise(RunEvent event, bool suspected);

    QPointer<const MetricStore> m_store;
    HangSettings m_settings;
    EventWriter m_writer;
    QTimer m_timer;
    std::int64_t m_startedMs = -1;
    std::int64_t m_progressAtSuspicion = -1;
    bool m_alive = true;
    bool m_suspected = false;
};

struct StragglerSettings {
    double margin = 0.2;  // 20 % slower than the others' median
    int window = 20;      // newest step times per rank considered
    int minimumSteps = 5; // per rank, before judging it
    // Hysteresis: a straggler clears only once within this margin (and within half the gap).
    double clearMargin = 0.1;
    // ... and at least this many seconds per step slower: a rank 1 ms behind in a 2 ms step is noise.
    double minimumGapS = 0.01;
    // Both changes must hold for this many consecutive steps of the rank before an event.
    int persistSteps = 10;
};

class StragglerDetector : public QObject {
    Q_OBJECT
public:
    explicit StragglerDetector(const MetricStore *store, QObject *parent = nullptr);

    void setSettings(const StragglerSettings &settings) { m_settings = settings; }
    void setEventWriter(EventWriter writer) { m_writer = std::move(writer); }

    void evaluate(); // runs after every store append
    QList<int> stragglers() const;

Q_SIGNALS:
    void stragglerDetected(const accel::monitor::RunEvent &event);
    void stragglerCleared(const accel::monitor::RunEvent &event);

private:
    QPointer<const MetricStore> m_store;
    StragglerSettings m_settings;
    EventWriter m_writer;
    QSet<int> m_stragglers;
    // rank -> the rank's first step at which it looked changed (slow while not a straggler, fast
    // while one); the event goes out once that lasted persistSteps steps.
    QHash<int, std::int64_t> m_changingSince;
    QHash<int, std::int64_t> m_seenStep; // rank -> its step at the last evaluation
};

} // namespace accel::monitor
