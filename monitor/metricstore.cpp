#include "monitor/metricstore.h"

#include "monitor/monotonicclock.h"

#include <algorithm>

namespace accel::monitor {

namespace {
constexpr std::uint8_t kSeenOnSystem = 1;
constexpr std::uint8_t kSeenOnOthers = 2;
constexpr std::uint8_t kAnnounced = 4;
} // namespace

struct MetricStore::RankData {
    std::vector<Series> series;
    std::vector<int> seriesOfName; // store name id -> index into series, -1 when absent
    std::vector<int> nameOfSeries;
    Series stepTimes;
    RankStatus status;
    std::uint64_t appendGeneration = 0; // last append() that touched this rank
    double lastStepTime = std::nan(""); // time of the sample that advanced lastStep
    bool lastStepTimeDerived = false;   // stepTimes' last entry came from the time gap, not a log

    Series &seriesFor(int nameId)
    {
        if (static_cast<size_t>(nameId) >= seriesOfName.size())
            seriesOfName.resize(static_cast<size_t>(nameId) + 1, -1);
        int &index = seriesOfName[static_cast<size_t>(nameId)];
        if (index < 0) {
            index = static_cast<int>(series.size());
            series.emplace_back();
            nameOfSeries.push_back(nameId);
        }
        return series[static_cast<size_t>(index)];
    }
    const Series *find(int nameId) const
    {
        if (nameId < 0 || static_cast<size_t>(nameId) >= seriesOfName.size() ||
            seriesOfName[static_cast<size_t>(nameId)] < 0)
            return nullptr;
        return &series[static_cast<size_t>(seriesOfName[static_cast<size_t>(nameId)])];
    }
};

MetricStore::MetricStore(QObject *parent) : QObject(parent) {}

MetricStore::~MetricStore() = default;

int MetricStore::storeNameId(const QByteArray &name)
{
    const auto found = m_nameIds.constFind(name);
    if (found != m_nameIds.constEnd())
        return found.value();
    const int id = static_cast<int>(m_names.size());
    m_names.append(name);
    m_nameKinds.push_back(0);
    m_nameIds.insert(name, id);
    if (name == "step_time_s")
        m_stepTimeNameId = id;
    return id;
}

MetricStore::RankData &MetricStore::rankData(int rank, QList<int> &added)
{
    const auto slot = static_cast<size_t>(rank + 1);
    if (slot < m_rankCache.size() && m_rankCache[slot])
        return *m_rankCache[slot];
    auto &owner = m_ranks[rank];
    if (!owner) {
        owner = std::make_unique<RankData>();
        added.append(rank);
    }
    if (rank >= -1 && slot < 65536) {
        if (slot >= m_rankCache.size())
            m_rankCache.resize(slot + 1, nullptr);
        m_rankCache[slot] = owner.get();
    }
    return *owner;
}

void MetricStore::append(const MetricBatch &batch)
{
    if (batch.rows.empty())
        return;
    // Batch name index -> store name id; eval rows get an "eval_" prefix unless they have one
    // ("eval_" or "eval/", the section an Accelerate script gives its evaluation metrics).
    std::vector<int> nameMap(batch.names.size(), -1);
    std::vector<int> evalNameMap;
    QList<int> added;
    QList<int> touched;
    const std::int64_t now = monotonicMs();
    const std::uint64_t generation = ++m_appendGeneration;
    int cachedRank = 0;
    RankData *data = nullptr;
    for (const MetricRow &row : batch.rows) {
        if (!data || row.rank != cachedRank) {
            data = &rankData(row.rank, added);
            cachedRank = row.rank;
            if (data->appendGeneration != generation) {
                data->appendGeneration = generation;
                touched.append(row.rank);
            }
        }
        const bool eval = row.kind == SampleKind::Eval;
        if (eval && evalNameMap.empty())
            evalNameMap.assign(batch.names.size(), -1);
        const double step = row.step == kNoStep ? std::nan("") : static_cast<double>(row.step);
        double loggedStepTime = std::nan("");
        for (std::uint32_t i = 0; i < row.valueCount; ++i) {
            const MetricValue &value = batch.values[row.firstValue + i];
            const auto batchName = static_cast<size_t>(value.name);
            int id;
            if (eval) {
                id = evalNameMap[batchName];
                if (id < 0) {
                    const QByteArray &name = batch.names[batchName];
                    const bool prefixed = name.startsWith("eval_") || name.startsWith("eval/");
                    id = evalNameMap[batchName] = storeNameId(prefixed ? name : "eval_" + name);
                }
            } else {
                id = nameMap[batchName];
                if (id < 0)
                    id = nameMap[batchName] = storeNameId(batch.names[batchName]);
            }
            if (m_keepScalars)
                data->seriesFor(id).append(step, row.time, value.value);
            std::uint8_t &kinds = m_nameKinds[static_cast<size_t>(id)];
            if (!(kinds & kAnnounced))
                m_unannounced = true;
            kinds |= row.kind == SampleKind::System ? kSeenOnSystem : kSeenOnOthers;
            if (id == m_stepTimeNameId)
                loggedStepTime = value.value;
        }
        if (!(row.time >= m_firstTime))
            m_firstTime = std::isnan(m_firstTime) ? row.time : std::min(m_firstTime, row.time);
        RankStatus &status = data->status;
        ++status.samples;
        status.lastTime = row.time;
        if (row.step != kNoStep && (row.kind == SampleKind::Train || row.kind == SampleKind::Other)) {
            if (row.step > status.lastStep) {
                if (status.lastStep >= 0) {
                    double seconds = loggedStepTime;
                    if (!std::isfinite(seconds))
                        seconds = (row.time - data->lastStepTime) / static_cast<double>(row.step - status.lastStep);
                    if (std::isfinite(seconds)) {
                        data->stepTimes.append(step, row.time, seconds);
                        data->lastStepTimeDerived = !std::isfinite(loggedStepTime);
                    }
                }
                status.lastStep = row.step;
                data->lastStepTime = row.time;
                status.lastProgressMs = now;
                m_lastProgressMs = now;
            } else if (row.step == status.lastStep && std::isfinite(loggedStepTime) && data->lastStepTimeDerived &&
                       !data->stepTimes.empty() && data->stepTimes.steps.back() == step) {
                // Another line of the step came first (the runtime's memory line) and its time gap
                // stood in for the step time: the step time the rank logged replaces it.
                data->stepTimes.values.back() = loggedStepTime;
                data->lastStepTimeDerived = false;
            } else if (row.step < status.lastStep) {
                // The rank restarted from an earlier checkpoint: count from here again.
                status.lastStep = row.step;
                data->lastStepTime = row.time;
                status.lastProgressMs = now;
                m_lastProgressMs = now;
            }
        }
    }
    m_totalSamples += static_cast<std::int64_t>(batch.rows.size());
    if (!added.isEmpty()) {
        std::sort(added.begin(), added.end());
        Q_EMIT ranksAdded(added);
    }
    if (m_keepScalars && m_unannounced) {
        QStringList names;
        for (size_t id = 0; id < m_nameKinds.size(); ++id) {
            if (m_nameKinds[id] != 0 && !(m_nameKinds[id] & kAnnounced)) {
                m_nameKinds[id] |= kAnnounced;
                names.append(QString::fromUtf8(m_names[qsizetype(id)]));
            }
        }
        m_unannounced = false;
        if (!names.isEmpty())
            Q_EMIT namesAdded(names);
    }
    std::sort(touched.begin(), touched.end());
    Q_EMIT samplesAppended(touched);
}

void MetricStore::clear()
{
    m_rankCache.clear();
    m_ranks.clear();
    m_totalSamples = 0;
    m_lastProgressMs = -1;
    m_firstTime = std::nan("");
    // Names keep their ids; they are announced again when samples of them return.
    std::fill(m_nameKinds.begin(), m_nameKinds.end(), 0);
    m_unannounced = false;
    Q_EMIT cleared();
}

QList<int> MetricStore::ranks() const
{
    QList<int> result;
    for (const auto &entry : m_ranks)
        result.append(entry.first);
    return result;
}

QStringList MetricStore::allScalarNames() const
{
    QStringList names;
    for (qsizetype id = 0; id < m_names.size(); ++id) {
        if (m_nameKinds[size_t(id)] & (kSeenOnSystem | kSeenOnOthers))
            names.append(QString::fromUtf8(m_names[id]));
    }
    return names;
}

bool MetricStore::isSystemName(const QString &name) const
{
    const int id = m_nameIds.value(name.toUtf8(), -1);
    return id >= 0 && (m_nameKinds[size_t(id)] & (kSeenOnSystem | kSeenOnOthers)) == kSeenOnSystem;
}

bool MetricStore::hasRank(int rank) const
{
    return m_ranks.count(rank) != 0;
}

QStringList MetricStore::scalarNames(int rank) const
{
    QStringList names;
    const auto found = m_ranks.find(rank);
    if (found == m_ranks.end())
        return names;
    for (int id : found->second->nameOfSeries)
        names.append(QString::fromUtf8(m_names[id]));
    return names;
}

const Series *MetricStore::series(int rank, const QString &name) const
{
    const auto found = m_ranks.find(rank);
    if (found == m_ranks.end())
        return nullptr;
    return found->second->find(m_nameIds.value(name.toUtf8(), -1));
}

const Series *MetricStore::stepTimes(int rank) const
{
    const auto found = m_ranks.find(rank);
    return found == m_ranks.end() ? nullptr : &found->second->stepTimes;
}

double MetricStore::lastValue(int rank, const QString &name) const
{
    const Series *s = series(rank, name);
    return s && !s->empty() ? s->values.back() : std::nan("");
}

RankStatus MetricStore::rankStatus(int rank) const
{
    const auto found = m_ranks.find(rank);
    return found == m_ranks.end() ? RankStatus{} : found->second->status;
}

} // namespace accel::monitor
