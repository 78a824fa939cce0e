#include "monitor/detectors.h"

#include "monitor/derivedseries.h"
#include "monitor/monotonicclock.h"

#include "core/rundir/runevents.h"
#include "core/rundir/runlayout.h"

#include <QDateTime>
#include <QDir>
#include <QJsonArray>

#include <algorithm>

namespace accel::monitor {

namespace {

double nowSeconds()
{
    return QDateTime::currentMSecsSinceEpoch() / 1000.0;
}

std::vector<double> newest(const Series &series, int count)
{
    const size_t take = std::min(series.size(), static_cast<size_t>(std::max(count, 0)));
    return std::vector<double>(series.values.end() - static_cast<std::ptrdiff_t>(take), series.values.end());
}

double rounded(double value)
{
    return std::round(value * 1000.0) / 1000.0;
}

} // namespace

bool supervisorDetects(const QJsonObject &manifest)
{
    return manifest.value(QLatin1String("monitor")).toObject().value(QLatin1String("detectors")).toString() ==
           QLatin1String(kSupervisorDetection);
}

EventWriter eventsFileWriter(const QString &runDirectory)
{
    const QString path = QDir(runDirectory).filePath(QLatin1String(rundir::file::Events));
    return [path](const RunEvent &event) { appendEventLine(path, event); };
}

HangDetector::HangDetector(const MetricStore *store, QObject *parent) : QObject(parent), m_store(store)
{
    m_timer.setInterval(m_settings.checkIntervalMs);
    connect(&m_timer, &QTimer::timeout, this, &HangDetector::check);
    m_startedMs = monotonicMs();
}

void HangDetector::setSettings(const HangSettings &settings)
{
    m_settings = settings;
    m_timer.setInterval(settings.checkIntervalMs);
}

void HangDetector::setProcessesAlive(bool alive)
{
    if (alive && !m_alive)
        m_startedMs = monotonicMs(); // a restart: give it a full threshold before judging
    m_alive = alive;
    if (!alive && m_suspected) {
        m_suspected = false; // the run ended: nothing is hanging any more
    }
}

void HangDetector::observeEvents(const QList<RunEvent> &events)
{
    for (const RunEvent &event : events) {
        const rundir::Liveness liveness = rundir::livenessOf(event.kind());
        if (liveness == rundir::Liveness::Alive)
            setProcessesAlive(true);
        else if (liveness == rundir::Liveness::Gone)
            setProcessesAlive(false);
    }
}

void HangDetector::start()
{
    m_startedMs = monotonicMs();
    m_timer.start();
}

void HangDetector::stop()
{
    m_timer.stop();
}

std::int64_t HangDetector::thresholdMs() const
{
    std::vector<double> recent;
    if (m_store) {
        for (int rank : m_store->ranks()) {
            if (const Series *times = m_store->stepTimes(rank); rank >= 0 && times) {
                const std::vector<double> values = newest(*times, 50);
                recent.insert(recent.end(), values.begin(), values.end());
            }
        }
    }
    const double medianSeconds = median(std::move(recent));
    const std::int64_t fromSteps =
        std::isfinite(medianSeconds) ? static_cast<std::int64_t>(medianSeconds * m_settings.medianFactor * 1000.0) : 0;
    return std::max(m_settings.minimumMs, fromSteps);
}

void HangDetector::check()
{
    if (!m_store)
        return;
    const std::int64_t progress = std::max(m_store->lastProgressMs(), m_startedMs);
    const std::int64_t now = monotonicMs();
    if (m_suspected) {
        if (progress > m_progressAtSuspicion) {
            RunEvent event;
            event.time = nowSeconds();
            event.event = eventName(rundir::EventKind::HangCleared);
            raise(event, false);
        }
        return;
    }
    if (!m_alive || (m_settings.requireFirstStep && m_store->lastProgressMs() < 0))
        return;
    const std::int64_t threshold = thresholdMs();
    const std::int64_t idle = now - progress;
    if (idle < threshold)
        return;
    RunEvent event;
    event.time = nowSeconds();
    event.event = eventName(rundir::EventKind::HangSuspected);
    event.fields.insert(QStringLiteral("seconds_without_progress"), rounded(idle / 1000.0));
    event.fields.insert(QStringLiteral("threshold_s"), rounded(threshold / 1000.0));
    QJsonObject lastSteps;
    for (int rank : m_store->ranks()) {
        if (rank >= 0)
            lastSteps.insert(QString::number(rank), static_cast<double>(m_store->rankStatus(rank).lastStep));
    }
    event.fields.insert(QStringLiteral("last_steps"), lastSteps);
    m_progressAtSuspicion = progress;
    raise(event, true);
}

void HangDetector::raise(RunEvent event, bool suspected)
{
    m_suspected = suspected;
    event.fields.insert(QStringLiteral("source"), QStringLiteral("monitor"));
    if (m_writer)
        m_writer(event);
    if (suspected)
        Q_EMIT hangSuspected(event);
    else
        Q_EMIT hangCleared(event);
}

StragglerDetector::StragglerDetector(const MetricStore *store, QObject *parent) : QObject(parent), m_store(store)
{
    if (store)
        connect(store, &MetricStore::samplesAppended, this, &StragglerDetector::evaluate);
}

QList<int> StragglerDetector::stragglers() const
{
    QList<int> result(m_stragglers.begin(), m_stragglers.end());
    std::sort(result.begin(), result.end());
    return result;
}

void StragglerDetector::evaluate()
{
    if (!m_store)
        return;
    // Each rank's median step time over its newest window, sorted by value (then rank): the
    // median of the other ranks is then read off the sorted list with the rank's own entry
    // skipped, O(R log R) per append instead of a median over R - 1 values for each of R ranks.
    std::vector<std::pair<double, int>> sorted;
    for (int rank : m_store->ranks()) {
        const Series *times = m_store->stepTimes(rank);
        if (rank < 0 || !times || times->size() < static_cast<size_t>(std::max(1, m_settings.minimumSteps)))
            continue;
        const double value = median(newest(*times, m_settings.window));
        if (std::isfinite(value))
            sorted.emplace_back(value, rank);
    }
    if (sorted.size() < 2)
        return;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::pair<int, size_t>> byRank; // events go out in rank order
    byRank.reserve(sorted.size());
    for (size_t i = 0; i < sorted.size(); ++i)
        byRank.emplace_back(sorted[i].second, i);
    std::sort(byRank.begin(), byRank.end());
    const size_t others = sorted.size() - 1;
    for (const auto &[rank, own_index] : byRank) {
        const auto other = [&, own = own_index](size_t k) { return sorted[k < own ? k : k + 1].first; };
        const double own = sorted[own_index].first;
        const double reference =
            others % 2 == 1 ? other(others / 2) : (other(others / 2 - 1) + other(others / 2)) / 2.0;
        const std::int64_t step = m_store->rankStatus(rank).lastStep;
        // The steps this rank logged since the last evaluation are all new here: a change first
        // seen now dates from the first of them (a reader that gets a whole file at once judges it).
        const std::int64_t firstNew = std::min(m_seenStep.value(rank, 0) + 1, step); // a restart counts anew
        m_seenStep.insert(rank, step);
        const bool known = m_stragglers.contains(rank);
        const bool slow =
            known ? own > reference * (1.0 + m_settings.clearMargin) && own - reference >= m_settings.minimumGapS / 2.0
                  : own > reference * (1.0 + m_settings.margin) && own - reference >= m_settings.minimumGapS;
        if (slow == known) {
            m_changingSince.remove(rank);
            continue;
        }
        const std::int64_t since = std::min(m_changingSince.value(rank, firstNew), step);
        m_changingSince.insert(rank, since);
        if (step - since + 1 < std::max(1, m_settings.persistSteps))
            continue;
        m_changingSince.remove(rank);
        RunEvent event;
        event.time = nowSeconds();
        event.rank = rank;
        event.event = eventName(slow ? rundir::EventKind::StragglerDetected : rundir::EventKind::StragglerCleared);
        event.fields.insert(QStringLiteral("step_time_s"), rounded(own));
        event.fields.insert(QStringLiteral("others_median_step_time_s"), rounded(reference));
        event.fields.insert(QStringLiteral("margin"), m_settings.margin);
        event.fields.insert(QStringLiteral("source"), QStringLiteral("monitor"));
        event.fields.insert(QStringLiteral("rank"), rank);
        if (slow)
            m_stragglers.insert(rank);
        else
            m_stragglers.remove(rank);
        if (m_writer)
            m_writer(event);
        if (slow)
            Q_EMIT stragglerDetected(event);
        else
            Q_EMIT stragglerCleared(event);
    }
}

} // namespace accel::monitor
