#include "monitor/derivedseries.h"

#include <algorithm>
#include <map>

namespace accel::monitor {

double median(std::vector<double> values)
{
    values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }), values.end());
    if (values.empty())
        return std::nan("");
    const size_t middle = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
    const double upper = values[middle];
    if (values.size() % 2 == 1)
        return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
    return (lower + upper) / 2.0;
}

Series rateOf(const Series &counter)
{
    Series rate;
    for (size_t i = 1; i < counter.size(); ++i) {
        const double dt = counter.times[i] - counter.times[i - 1];
        const double dv = counter.values[i] - counter.values[i - 1];
        if (dt > 0 && std::isfinite(dv) && dv >= 0)
            rate.append(counter.steps[i], counter.times[i], dv / dt);
    }
    return rate;
}

Series throughput(const MetricStore &store, int rank, const QString &name)
{
    if (const Series *logged = store.series(rank, name); logged && !logged->empty())
        return *logged;
    QString counterName = name;
    if (counterName.endsWith(QLatin1String("_per_s")))
        counterName.chop(6);
    if (const Series *counter = store.series(rank, counterName); counter && counter->size() > 1)
        return rateOf(*counter);
    return {};
}

Series globalSum(const MetricStore &store, const QString &name)
{
    std::map<double, std::pair<double, int>> byStep;
    int contributing = 0;
    for (int rank : store.ranks()) {
        if (rank < 0)
            continue;
        const Series perRank = throughput(store, rank, name);
        if (perRank.empty())
            continue;
        ++contributing;
        // Several samples of one step on one rank: the last one counts.
        std::map<double, std::pair<double, double>> latest;
        for (size_t i = 0; i < perRank.size(); ++i) {
            if (!std::isnan(perRank.steps[i]) && !std::isnan(perRank.values[i]))
                latest[perRank.steps[i]] = {perRank.values[i], perRank.times[i]};
        }
        for (const auto &[step, point] : latest) {
            auto &slot = byStep[step];
            slot.first += point.first;
            slot.second += 1;
        }
    }
    Series sum;
    for (const auto &[step, entry] : byStep) {
        if (entry.second == contributing)
            sum.append(step, std::nan(""), entry.first);
    }
    return sum;
}

namespace {

std::pair<double, int> steadyThroughput(const MetricStore &store, const QString &name, double warmupFraction)
{
    int world = 0;
    for (int rank : store.ranks()) {
        if (rank >= 0 && !throughput(store, rank, name).empty())
            ++world;
    }
    const Series sum = globalSum(store, name);
    if (sum.empty())
        return {std::nan(""), world};
    const auto skip = static_cast<size_t>(std::clamp(warmupFraction, 0.0, 0.9) * static_cast<double>(sum.size()));
    return {median(std::vector<double>(sum.values.begin() + static_cast<std::ptrdiff_t>(skip), sum.values.end())),
            world};
}

} // namespace

std::optional<ScalingEfficiency> scalingEfficiency(const MetricStore &run, const MetricStore &baseline,
                                                   const QString &name, double warmupFraction)
{
    const auto [runThroughput, runWorld] = steadyThroughput(run, name, warmupFraction);
    const auto [baseThroughput, baseWorld] = steadyThroughput(baseline, name, warmupFraction);
    if (!(runThroughput > 0) || !(baseThroughput > 0) || runWorld == 0 || baseWorld == 0)
        return std::nullopt;
    ScalingEfficiency result;
    result.runThroughput = runThroughput;
    result.baselineThroughput = baseThroughput;
    result.runWorldSize = runWorld;
    result.baselineWorldSize = baseWorld;
    result.efficiency = (runThroughput / baseThroughput) / (static_cast<double>(runWorld) / baseWorld);
    return result;
}

} // namespace accel::monitor
