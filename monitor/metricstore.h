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
    // Every scalar name of any rank, in the order first seen.
    QStringList allScalarNames() const;
    // True for a name only ever seen on system samples (kind "system": the supervisor's CPU,
    // memory and GPU readings), false for what the ranks logged themselves.
    bool isSystemName(const QString &name) const;
    // The earliest sample time (Unix seconds) of any rank and scalar; NaN before the first.
    double firstTime() const { return m_firstTime; }
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
    // Scalar names no rank had before this batch (emitted before samplesAppended).
    void namesAdded(const QStringList &names);
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
    std::vector<std::uint8_t> m_nameKinds; // per name id: seen on system samples, on others, announced
    bool m_unannounced = false;            // a name of this batch was not announced yet
    double m_firstTime = std::nan("");
    int m_stepTimeNameId = -1;
    std::int64_t m_totalSamples = 0;
    std::int64_t m_lastProgressMs = -1;
    bool m_keepScalars = true;
};

} // namespace accel::monitor
