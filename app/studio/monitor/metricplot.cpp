#include "app/studio/monitor/metricplot.h"

#include "monitor/decimation.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <QFile>
#include <QSaveFile>
#include <QTextStream>
#include <QVBoxLayout>

#include <cmath>

namespace accel::app {

namespace {

constexpr int kFallbackPixels = 800;

QColor rankColor(int rank)
{
    static const QList<QColor> palette = {QColor(31, 119, 180),  QColor(255, 127, 14),  QColor(44, 160, 44),
                                          QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                                          QColor(227, 119, 194), QColor(127, 127, 127)};
    return palette.at(((rank % palette.size()) + palette.size()) % palette.size());
}

// EMA over the raw values (NaN samples leave the average unchanged).
std::vector<double> smoothed(const std::vector<double> &values, double weight)
{
    std::vector<double> out(values.size());
    double average = std::nan("");
    for (size_t i = 0; i < values.size(); ++i) {
        const double v = values[i];
        if (std::isfinite(v))
            average = std::isnan(average) ? v : weight * v + (1.0 - weight) * average;
        out[i] = std::isfinite(v) ? average : v;
    }
    return out;
}

// Mean over ranks at the steps every rank reported; all step vectors must be sorted.
void meanOverRanks(const QList<const monitor::Series *> &series, std::vector<double> &x, std::vector<double> &y)
{
    if (series.size() < 2)
        return;
    for (const auto *s : series) {
        if (!s->stepsSorted)
            return;
    }
    std::vector<size_t> at(series.size(), 0);
    const auto &first = *series.front();
    for (size_t i = 0; i < first.size(); ++i) {
        const double step = first.steps[i];
        double sum = first.values[i];
        bool everyRank = std::isfinite(step);
        for (qsizetype r = 1; r < series.size() && everyRank; ++r) {
            const auto &other = *series[r];
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
            y.push_back(sum / double(series.size()));
        }
    }
}

} // namespace

MetricPlot::MetricPlot(const QString &title, const QStringList &names, bool withMean, QWidget *parent)
    : QWidget(parent), m_title(title), m_names(names), m_withMean(withMean), m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setMinimumSize(160, 120); // three across must fit the smallest main window

    m_plot->plotLayout()->insertRow(0);
    auto *titleElement = new QCPTextElement(m_plot, title, QFont(font().family(), font().pointSize(), QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, titleElement);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->legend->setVisible(false);
    QFont legendFont = font();
    legendFont.setPointSizeF(font().pointSizeF() * 0.8);
    m_plot->legend->setFont(legendFont);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setNoAntialiasingOnDrag(true);

    m_timer.setSingleShot(true);
    m_timer.setInterval(33);
    connect(&m_timer, &QTimer::timeout, this, &MetricPlot::replotNow);
}

MetricPlot::~MetricPlot() = default;

void MetricPlot::addStore(const monitor::MetricStore *store, const QString &runLabel, const QColor &color)
{
    m_stores.append({store, runLabel, color});
    m_connections.append(connect(store, &monitor::MetricStore::samplesAppended, this, &MetricPlot::scheduleReplot));
    m_connections.append(connect(store, &monitor::MetricStore::cleared, this, &MetricPlot::scheduleReplot));
    scheduleReplot();
}

void MetricPlot::clearStores()
{
    for (const auto &c : std::as_const(m_connections))
        disconnect(c);
    m_connections.clear();
    m_stores.clear();
    scheduleReplot();
}

void MetricPlot::setSmoothing(double weight)
{
    m_smoothing = (weight > 0 && weight < 1) ? weight : 0;
    scheduleReplot();
}

void MetricPlot::setRedrawInterval(int milliseconds)
{
    m_timer.setInterval(std::max(0, milliseconds));
}

void MetricPlot::scheduleReplot()
{
    if (!m_timer.isActive())
        m_timer.start();
}

QString MetricPlot::nameFor(const monitor::MetricStore &store, int rank) const
{
    for (const auto &name : m_names) {
        const auto *s = store.series(rank, name);
        if (s && !s->empty())
            return name;
    }
    return {};
}

void MetricPlot::replotNow()
{
    m_timer.stop();
    rebuild();
    m_plot->replot();
    ++m_replots;
}

void MetricPlot::rebuild()
{
    struct Curve {
        QString name;
        QColor color;
        double width = 1;
        const double *x = nullptr;
        const double *y = nullptr;
        size_t count = 0;
        bool sorted = true;
    };
    // Owned buffers (smoothed values, means) must outlive the curves that point into them.
    std::vector<std::unique_ptr<std::vector<double>>> buffers;
    auto keep = [&buffers](std::vector<double> v) {
        buffers.push_back(std::make_unique<std::vector<double>>(std::move(v)));
        return buffers.back().get();
    };
    QList<Curve> curves;
    m_rawPoints = 0;
    const bool overlay = m_stores.size() > 1;
    for (const auto &source : std::as_const(m_stores)) {
        if (!source.store)
            continue;
        QList<const monitor::Series *> rankSeries;
        for (int rank : source.store->ranks()) {
            if (rank < 0)
                continue;
            const QString name = nameFor(*source.store, rank);
            if (name.isEmpty())
                continue;
            const auto *s = source.store->series(rank, name);
            rankSeries.append(s);
            m_rawPoints += qint64(s->size());
            Curve c;
            c.name = overlay ? tr("%1 rank %2").arg(source.label).arg(rank) : tr("rank %1").arg(rank);
            c.color = overlay ? source.color.lighter(100 + 25 * (rank % 4)) : rankColor(rank);
            c.x = s->steps.data();
            c.count = s->size();
            c.sorted = s->stepsSorted;
            c.y = m_smoothing > 0 ? keep(smoothed(s->values, m_smoothing))->data() : s->values.data();
            curves.append(c);
        }
        if (m_withMean && rankSeries.size() > 1) {
            std::vector<double> x, y;
            meanOverRanks(rankSeries, x, y);
            if (!x.empty()) {
                if (m_smoothing > 0)
                    y = smoothed(y, m_smoothing);
                Curve c;
                c.name = overlay ? tr("%1 mean").arg(source.label) : tr("mean");
                c.color = overlay ? source.color.darker(130) : QColor(Qt::black);
                c.width = 2;
                c.count = x.size();
                c.x = keep(std::move(x))->data();
                c.y = keep(std::move(y))->data();
                curves.append(c);
            }
        }
    }

    double xMin = std::numeric_limits<double>::infinity();
    double xMax = -xMin;
    for (const auto &c : std::as_const(curves)) {
        for (size_t i = 0; i < c.count; ++i) { // first and last finite x (whole scan when unsorted)
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
    int pixels = m_plot->axisRect()->width();
    if (pixels < 10)
        pixels = kFallbackPixels;

    while (m_plot->graphCount() > curves.size())
        m_plot->removeGraph(m_plot->graphCount() - 1);
    while (m_plot->graphCount() < curves.size())
        m_plot->addGraph();
    for (qsizetype i = 0; i < curves.size(); ++i) {
        const auto &c = curves[i];
        auto *graph = m_plot->graph(int(i));
        graph->setName(c.name);
        graph->setPen(QPen(c.color, c.width));
        auto points = monitor::decimate(c.x, c.y, c.count, c.sorted, xMin, xMax, pixels);
        graph->setData(points.x, points.y, c.sorted);
    }
    m_plot->legend->setVisible(curves.size() > 1 && curves.size() <= 10);
    if (!curves.isEmpty()) {
        m_plot->rescaleAxes();
        if (xMin == xMax)
            m_plot->xAxis->setRange(xMin - 1, xMax + 1);
        const auto y = m_plot->yAxis->range();
        const double pad = (y.upper - y.lower) * 0.05;
        m_plot->yAxis->setRange(y.lower - (pad > 0 ? pad : 1), y.upper + (pad > 0 ? pad : 1));
    }
}

qint64 MetricPlot::drawnPoints() const
{
    qint64 total = 0;
    for (int i = 0; i < m_plot->graphCount(); ++i)
        total += m_plot->graph(i)->data()->size();
    return total;
}

bool MetricPlot::savePng(const QString &path, int width, int height)
{
    if (m_timer.isActive())
        replotNow();
    return m_plot->savePng(path, width, height);
}

bool MetricPlot::saveCsv(const QString &path, QString *error) const
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error)
            *error = tr("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    QTextStream out(&file);
    out << "run,rank,metric,step,time,value\n";
    for (const auto &source : m_stores) {
        if (!source.store)
            continue;
        QString run = source.label;
        run.replace(QLatin1Char('"'), QLatin1String("\"\""));
        for (int rank : source.store->ranks()) {
            const QString name = nameFor(*source.store, rank);
            if (rank < 0 || name.isEmpty())
                continue;
            const auto *s = source.store->series(rank, name);
            for (size_t i = 0; i < s->size(); ++i) {
                out << '"' << run << "\"," << rank << ',' << name << ',';
                if (std::isfinite(s->steps[i]))
                    out << qint64(s->steps[i]);
                out << ',' << QString::number(s->times[i], 'f', 3) << ',';
                if (std::isfinite(s->values[i]))
                    out << QString::number(s->values[i], 'g', 10);
                out << '\n';
            }
        }
    }
    out.flush();
    if (!file.commit()) {
        if (error)
            *error = tr("cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

} // namespace accel::app
