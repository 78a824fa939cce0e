#include "app/studio/monitor/plotcurves.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>

namespace accel::app {

namespace {

// Mean over ranks at the steps every rank reported; all step vectors must be sorted.
void meanOverRanks(const QList<RunCurves::Rank> &ranks, std::vector<double> &x, std::vector<double> &y)
{
    if (ranks.size() < 2)
        return;
    for (const auto &r : ranks) {
        if (!r.series->stepsSorted)
            return;
    }
    std::vector<size_t> at(ranks.size(), 0);
    const auto &first = *ranks.front().series;
    for (size_t i = 0; i < first.size(); ++i) {
        const double step = first.steps[i];
        double sum = first.values[i];
        bool everyRank = std::isfinite(step);
        for (qsizetype r = 1; r < ranks.size() && everyRank; ++r) {
            const auto &other = *ranks[r].series;
            size_t &j = at[r];
            while (j < other.size() && other.steps[j] < step)
                ++j;
            if (j >= other.size() || other.steps[j] != step)
                everyRank = false;
            else
                sum += other.values[j];
        }
        if (everyRank) {
            x.push_back(step);
            y.push_back(sum / double(ranks.size()));
        }
    }
}

QString tr(const char *text)
{
    return QCoreApplication::translate("accel::app::MetricPlot", text);
}

} // namespace

QColor rankColor(int rank)
{
    static const QList<QColor> palette = {QColor(31, 119, 180),  QColor(255, 127, 14),  QColor(44, 160, 44),
                                          QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                                          QColor(227, 119, 194), QColor(127, 127, 127)};
    return palette.at(((rank % palette.size()) + palette.size()) % palette.size());
}

std::vector<double> smoothed(const std::vector<double> &values, double smoothing)
{
    // Debiased like TensorBoard's: the average starts at zero and is divided by the weight it has
    // gathered, so the first points are not pulled towards the first value (no apparent lag at
    // the start of a run, a warm-up peak stays where it is).
    const double weight = 1.0 - std::clamp(smoothing, 0.0, 0.999);
    std::vector<double> out(values.size());
    double biased = 0;
    double gathered = 0; // 1 - (1 - weight)^n after n finite values
    for (size_t i = 0; i < values.size(); ++i) {
        const double v = values[i];
        if (std::isfinite(v)) {
            biased = weight * v + (1.0 - weight) * biased;
            gathered = weight + (1.0 - weight) * gathered;
            out[i] = biased / gathered;
        } else {
            out[i] = v;
        }
    }
    return out;
}

std::optional<size_t> nearestSample(const monitor::Series &series, monitor::XAxis axis, double x)
{
    const std::vector<double> &xs = series.xs(axis);
    std::optional<size_t> best;
    double bestDistance = std::numeric_limits<double>::infinity();
    auto consider = [&](size_t i) {
        const double d = std::fabs(xs[i] - x);
        if (std::isfinite(d) && d < bestDistance) {
            bestDistance = d;
            best = i;
        }
    };
    if (series.sorted(axis)) {
        const auto it = std::lower_bound(xs.begin(), xs.end(), x);
        const auto i = size_t(it - xs.begin());
        if (i < xs.size())
            consider(i);
        if (i > 0)
            consider(i - 1);
        if (best)
            return best;
    }
    for (size_t i = 0; i < xs.size(); ++i) // unsorted (a restart), or NaN steps around x
        consider(i);
    return best;
}

const double *CurveSet::keep(std::vector<double> values)
{
    m_buffers.push_back(std::make_unique<std::vector<double>>(std::move(values)));
    return m_buffers.back()->data();
}

void CurveSet::addRun(const RunCurves &run, const CurveOptions &options)
{
    const bool overlay = !run.label.isEmpty();
    const double smoothing = options.smoothing;
    auto add = [&](Curve c, const std::vector<double> &raw) {
        const std::vector<double> *values = &raw;
        if (options.positiveOnly && std::any_of(raw.begin(), raw.end(), [](double v) { return !(v > 0); })) {
            std::vector<double> positive(raw);
            for (double &v : positive)
                v = v > 0 ? v : std::nan("");
            values = m_buffers.emplace_back(std::make_unique<std::vector<double>>(std::move(positive))).get();
            c.y = values->data();
        }
        if (smoothing > 0) {
            Curve average = c;
            average.y = keep(smoothed(*values, smoothing));
            average.width = c.width; // a wider pen leaves Qt's fast path: 10x slower on 1M points
            m_smoothed.append(average);
            c.faint = true;
        }
        m_raw.append(c);
    };
    QList<RunCurves::Rank> ranks; // without the devices: they take no part in the mean
    const bool single = run.ranks.size() == 1;
    for (const auto &r : run.ranks) {
        const monitor::Series &s = *r.series;
        const int index = r.device >= 0 ? r.device : std::max(0, r.rank);
        const QString who = r.who.isEmpty() ? tr("rank %1").arg(r.rank) : r.who;
        Curve c;
        c.name = !overlay ? who : single ? run.label : tr("%1 %2").arg(run.label, who);
        // A run's curves share its hue in overlays (its colour family); devices are dashed.
        c.color = overlay ? run.color.lighter(100 + 25 * (index % 4)) : rankColor(index);
        c.dashed = r.device >= 0;
        if (r.device < 0)
            ranks.append(r);
        switch (options.x) {
        case XMode::RelativeTime: {
            std::vector<double> seconds(s.times);
            for (double &t : seconds)
                t -= run.timeOrigin;
            c.x = keep(std::move(seconds));
            c.sorted = s.timesSorted;
            break;
        }
        case XMode::WallTime:
            c.x = s.times.data();
            c.sorted = s.timesSorted;
            break;
        case XMode::Step:
            c.x = s.steps.data();
            c.sorted = s.stepsSorted;
            break;
        }
        c.y = s.values.data();
        c.count = s.size();
        add(c, s.values);
    }
    if (options.withMean && options.x == XMode::Step && ranks.size() > 1) {
        std::vector<double> x, y;
        meanOverRanks(ranks, x, y);
        if (!x.empty()) {
            Curve c;
            c.name = overlay ? tr("%1 mean").arg(run.label) : tr("mean");
            c.color = overlay ? run.color.darker(130) : options.meanColor;
            c.width = 2;
            c.count = x.size();
            c.x = keep(std::move(x));
            const std::vector<double> &values =
                *m_buffers.emplace_back(std::make_unique<std::vector<double>>(std::move(y)));
            c.y = values.data();
            add(c, values);
        }
    }
}

bool CurveSet::xRange(double &xMin, double &xMax) const
{
    xMin = std::numeric_limits<double>::infinity();
    xMax = -xMin;
    for (const auto &c : m_raw) {
        for (size_t i = 0; i < c.count; ++i) { // first finite x (whole scan when unsorted)
            if (!std::isfinite(c.x[i]))
                continue;
            xMin = std::min(xMin, c.x[i]);
            xMax = std::max(xMax, c.x[i]);
            if (c.sorted)
                break;
        }
        for (size_t i = c.count; c.sorted && i-- > 0;) {
            if (std::isfinite(c.x[i])) {
                xMax = std::max(xMax, c.x[i]);
                break;
            }
        }
    }
    return xMin <= xMax;
}

} // namespace accel::app
