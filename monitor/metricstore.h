// MetricStore: every sample of one run, by rank and scalar name, as columnar Series, plus the
// derived step-time series per rank. Lives on the GUI thread; sources deliver batches to
// append(), views pull series when they redraw and listen to the coarse signals below.
#pragma once

#include "monitor/metricbatch.h"
#include "monitor/series.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QStringList>

#include <map>
#include <memory>

namespace accel::monitor {

struct RankStatus {
    std::int64_t lastStep = -1;       // highest step seen since the last restart of the rank
    double lastTime = std::nan("");   // time of the newest sample
    std::int64_t lastProgressMs = -1; // monotonicMs() when the step last advanced
    std::int64_t samples = 0;
};

class MetricStore : public QObject {
    Q_OBJECT
public:
    explicit MetricStore(QObject *parent = nullptr);
    ~MetricStore() override;

    void append(const MetricBatch &batch);
    void clear();
    // false: only rank status and step times are kept, no scalar series (for detectors in a
    // long-running supervisor, whose memory should not grow with every logged value).
    void setKeepScalars(bool keep) { m_keepScalars = keep; }

    QList<int> ranks() const; // sorted; -1 (host samples) first when present
    bool hasRank(int rank) const;
    QStringList scalarNames(int rank) const;
    const Series *series(int rank, const QString &name) const;
    // Seconds per step: the logged step_time_s when the line has it, else the time between steps.
    const Series *stepTimes(int rank) const;
    // Newest value of a scalar on a rank, NaN when none.
    double lastValue(int rank, const QString &name) const;
    RankStatus rankStatus(int rank) const;
    std::int64_t totalSamples() const { return m_totalSamples; }
    // monotonicMs() of the most recent step advance on any rank, -1 before the first.
    std::int64_t lastProgressMs() const { return m_lastProgressMs; }

Q_SIGNALS:
    void ranksAdded(const QList<int> &ranks);
    void samplesAppended(const QList<int> &ranks);
    void cleared();

private:
    struct RankData;
    RankData &rankData(int rank, QList<int> &added);
    int storeNameId(const QByteArray &name);

    std::map<int, std::unique_ptr<RankData>> m_ranks;
    std::vector<RankData *> m_rankCache; // by rank + 1, for the usual small ranks
    std::uint64_t m_appendGeneration = 0;
    QHash<QByteArray, int> m_nameIds;
    QList<QByteArray> m_names;
    int m_stepTimeNameId = -1;
    std::int64_t m_totalSamples = 0;
    std::int64_t m_lastProgressMs = -1;
    bool m_keepScalars = true;
};

} // namespace accel::monitor
