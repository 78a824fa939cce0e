#include "app/studio/monitor/metricplot.h"

#include "app/studio/monitor/plotcurves.h"
#include "monitor/decimation.h"

#include "app/studio/monitor/qcustomplotinclude.h"
#include "app/studio/theme.h"

#include <QFontMetrics>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace accel::app {

namespace {

constexpr int kFallbackPixels = 800;
constexpr double kMarkerSize = 7; // a series of one point

QString axisLabel(const ChartSpec &spec)
{
    switch (spec.unit) {
    case AxisUnit::Bytes:
        return spec.valueLabel; // the ticks carry KiB/MiB/GiB
    case AxisUnit::Percent:
        return spec.valueLabel + QStringLiteral(" (%)");
    case AxisUnit::PerSecond:
        return spec.valueLabel + QStringLiteral(" (/s)");
    case AxisUnit::Seconds:
        return spec.valueLabel + QStringLiteral(" (s)");
    case AxisUnit::Plain:
        break;
    }
    return spec.valueLabel;
}

} // namespace

MetricPlot::MetricPlot(const QString &title, const QStringList &names, bool withMean, QWidget *parent)
    : MetricPlot(ChartSpec{title, names, withMean, false, AxisUnit::Plain, title.toLower()}, parent)
{}

MetricPlot::MetricPlot(const ChartSpec &spec, QWidget *parent)
    : QWidget(parent), m_spec(spec), m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setMinimumSize(160, 120); // three across must fit the smallest main window

    m_plot->plotLayout()->insertRow(0);
    QFont bold = font();
    bold.setBold(true);
    m_titleElement = new QCPTextElement(m_plot, spec.title, bold);
    m_plot->plotLayout()->addElement(0, 0, m_titleElement);
    m_plot->yAxis->setLabel(axisLabel(spec));
    m_plot->yAxis->setTicker(tickerFor(spec.unit));
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    m_plot->xAxis->setLabelFont(small);
    m_plot->yAxis->setLabelFont(small);
    m_plot->xAxis->setTickLabelFont(small);
    m_plot->yAxis->setTickLabelFont(small);
    m_tickLabelLine = std::max(1, QFontMetrics(small).height());

    // The legend goes in a row below the plot, a few entries per line: it never covers a curve.
    // (Between two empty elements: a grid column is never wider than its narrowest element allows,
    // and a legend allows only its text's width, which would squeeze the plot to that.)
    auto *legend = m_plot->legend;
    m_plot->axisRect()->insetLayout()->take(legend);
    auto *legendRow = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(2, 0, legendRow);
    m_plot->plotLayout()->setRowStretchFactor(2, 0.001);
    legendRow->setMargins(QMargins());
    legendRow->addElement(0, 0, new QCPLayoutElement(m_plot));
    legendRow->addElement(0, 1, legend);
    legendRow->addElement(0, 2, new QCPLayoutElement(m_plot));
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    legend->setWrap(4);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    legend->setMargins(QMargins(2, 0, 2, 0));
    legend->setRowSpacing(0);
    legend->setColumnSpacing(8);
    legend->setFont(small);
    legend->setVisible(true);

    m_crosshair = new QCPItemStraightLine(m_plot);
    m_crosshair->setVisible(false);
    m_crosshair->setSelectable(false);
    m_crosshair->setClipToAxisRect(true);
    m_readout = new QCPItemText(m_plot);
    m_readout->setVisible(false);
    m_readout->setSelectable(false);
    m_readout->setClipToAxisRect(false);
    m_readout->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_readout->setTextAlignment(Qt::AlignLeft);
    m_readout->position->setType(QCPItemPosition::ptAbsolute);
    m_readout->setPadding(QMargins(6, 4, 6, 4));
    m_readout->setFont(small);
    m_emptyLabel = new QCPItemText(m_plot);
    m_emptyLabel->setVisible(false);
    m_emptyLabel->setSelectable(false);
    m_emptyLabel->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyLabel->position->setCoords(0.5, 0.5);
    m_emptyLabel->setPositionAlignment(Qt::AlignCenter);
    m_emptyLabel->setFont(small);

    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setNoAntialiasingOnDrag(true);
    m_plot->setMouseTracking(true);
    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    m_plot->installEventFilter(this);
    connect(m_plot, &QCustomPlot::mouseWheel, this, [this] { m_following = false; });
    connect(m_plot, &QCustomPlot::mouseMove, this, &MetricPlot::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, &MetricPlot::resetView);
    connect(m_plot, &QCustomPlot::legendClick, this,
            [this](QCPLegend *, QCPAbstractLegendItem *item, QMouseEvent *) { onLegendClick(item); });
    connect(m_plot, &QWidget::customContextMenuRequested, this,
            [this](const QPoint &at) { Q_EMIT menuRequested(m_plot->mapToGlobal(at)); });

    // As many value ticks as the axis has room for, their labels at least 2.5 lines apart (at
    // 1024x700 a short chart stacked five labels into each other).
    connect(m_plot, &QCustomPlot::afterLayout, this, &MetricPlot::fitTickCount);

    m_timer.setSingleShot(true);
    m_timer.setInterval(33);
    connect(&m_timer, &QTimer::timeout, this, &MetricPlot::replotNow);
    m_axesMode = xMode();
    applyAxes();
    applyPalette();
}

MetricPlot::~MetricPlot() = default;

void MetricPlot::applyPalette()
{
    // Follow the window's palette (dark themes included) instead of QCustomPlot's white defaults.
    const QPalette p = palette();
    applyPaletteToPlot(m_plot, p);
    m_crosshair->setPen(QPen(p.color(QPalette::Highlight), 1, Qt::DashLine));
    QColor box = p.color(QPalette::Base);
    box.setAlpha(235);
    m_readout->setBrush(box);
    m_readout->setPen(QPen(p.color(QPalette::Mid)));
    m_readout->setColor(p.color(QPalette::Text));
    m_emptyLabel->setColor(p.color(QPalette::PlaceholderText));
    scheduleReplot();
}

void MetricPlot::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
}

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

void MetricPlot::setSmoothing(double smoothing)
{
    m_smoothing = (smoothing > 0 && smoothing < 1) ? smoothing : 0;
    scheduleReplot();
}

void MetricPlot::setXMode(XMode mode)
{
    if (m_xMode == mode)
        return;
    m_xMode = mode;
    m_following = true; // the old range means nothing on the new axis
    hideCrosshair();
    scheduleReplot();
}

void MetricPlot::setLogScale(bool logarithmic)
{
    if (m_logScale == logarithmic)
        return;
    m_logScale = logarithmic;
    applyAxes();
    scheduleReplot();
}

void MetricPlot::setEmptyText(const QString &text)
{
    m_emptyText = text;
    scheduleReplot();
}

void MetricPlot::applyAxes()
{
    const XMode mode = xMode();
    if (mode == XMode::WallTime) {
        auto ticker = QSharedPointer<QCPAxisTickerDateTime>::create();
        ticker->setDateTimeFormat(QStringLiteral("HH:mm:ss"));
        m_plot->xAxis->setTicker(ticker);
        m_plot->xAxis->setLabel(tr("wall time"));
    } else {
        m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        m_plot->xAxis->setLabel(mode == XMode::Step ? tr("step") : tr("time since start (s)"));
    }
    if (m_logScale) {
        m_plot->yAxis->setScaleType(QCPAxis::stLogarithmic);
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        m_plot->yAxis->setNumberFormat(QStringLiteral("gb"));
    } else {
        m_plot->yAxis->setScaleType(QCPAxis::stLinear);
        m_plot->yAxis->setTicker(tickerFor(m_spec.unit));
        m_plot->yAxis->setNumberFormat(QStringLiteral("gbd"));
    }
    m_axesMode = mode;
    fitTickCount();
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

void MetricPlot::resetView()
{
    m_following = true;
    replotNow();
}

QList<ChartRun> MetricPlot::chartRuns() const
{
    QList<ChartRun> runs;
    for (const auto &source : m_stores) {
        if (source.store)
            runs.append({source.store.data(), source.label});
    }
    return runs;
}

void MetricPlot::fitTickCount()
{
    // Runs after every layout (every redraw): the label height is measured once, with the font.
    const int count = std::clamp(m_plot->axisRect()->height() * 2 / (m_tickLabelLine * 5), 2, 5);
    if (m_plot->yAxis->ticker()->tickCount() == count)
        return;
    m_plot->yAxis->ticker()->setTickCount(count);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void MetricPlot::replotNow()
{
    m_timer.stop();
    const bool had = m_rawPoints > 0;
    rebuild();
    m_plot->replot();
    ++m_replots;
    if (had != (m_rawPoints > 0))
        Q_EMIT dataPresenceChanged(m_rawPoints > 0);
}

void MetricPlot::rebuild()
{
    if (m_axesMode != xMode())
        applyAxes();
    CurveSet set;
    m_rawPoints = 0;
    QString shownName; // the scalar the first rank has (throughput: samples, tokens or iterations)
    const bool overlay = m_stores.size() > 1;
    CurveOptions options;
    options.x = xMode();
    options.withMean = m_spec.withMean;
    options.smoothing = isSmoothed() ? m_smoothing : 0.0;
    options.positiveOnly = m_logScale;
    options.meanColor = palette().color(QPalette::WindowText);
    for (const auto &source : std::as_const(m_stores)) {
        if (!source.store)
            continue;
        RunCurves run;
        run.label = overlay ? source.label : QString();
        run.color = source.color;
        run.timeOrigin = timeOrigin(*source.store);
        for (const auto &entry : shownSeries(m_spec, *source.store)) {
            m_rawPoints += qint64(entry.series->size());
            run.ranks.append({entry.rank, entry.series, entry.who, entry.device});
            if (shownName.isEmpty())
                shownName = entry.name;
        }
        set.addRun(run, options);
    }

    if (m_spec.unit == AxisUnit::PerSecond && shownName.endsWith(QLatin1String("_per_s")))
        m_plot->yAxis->setLabel(shownName.chopped(6).replace(QLatin1Char('_'), QLatin1Char(' ')) +
                                QStringLiteral(" (/s)"));

    double xMin = 0, xMax = 0;
    const bool any = set.xRange(xMin, xMax);
    double visibleMin = xMin, visibleMax = xMax;
    if (!m_following && any) {
        visibleMin = m_plot->xAxis->range().lower;
        visibleMax = m_plot->xAxis->range().upper;
    }
    int pixels = m_plot->axisRect()->width();
    if (pixels < 10)
        pixels = kFallbackPixels;

    const QList<Curve> &curves = set.curves();
    while (m_plot->graphCount() > curves.size())
        m_plot->removeGraph(m_plot->graphCount() - 1);
    while (m_plot->graphCount() < curves.size())
        m_plot->addGraph();
    int legendEntries = 0;
    for (const auto &c : curves)
        legendEntries += c.faint ? 0 : 1;
    const bool tooMany = legendEntries > kMaxLegendEntries;
    const QString title =
        tooMany ? tr("%1 (%2 curves: hover for values)").arg(m_spec.title).arg(legendEntries) : m_spec.title;
    if (m_titleElement->text() != title)
        m_titleElement->setText(title);
    // Many curves (64 ranks) are drawn without antialiasing and as plain polylines: they overlap
    // anyway, and this halves the redraw time that dominates following a large job.
    m_plot->setPlottingHint(QCP::phFastPolylines, tooMany);
    if (tooMany)
        m_plot->setNotAntialiasedElements(QCP::aePlottables);
    else
        m_plot->setAntialiasedElements(QCP::aePlottables);
    for (qsizetype i = 0; i < curves.size(); ++i) {
        const auto &c = curves[i];
        auto *graph = m_plot->graph(int(i));
        graph->setName(c.name);
        QColor color = c.color;
        if (c.faint)
            color.setAlpha(kRawAlphaUnderAverage);
        graph->setPen(QPen(color, c.width, c.dashed ? Qt::DashLine : Qt::SolidLine));
        graph->setProperty("faint", c.faint);
        auto points = monitor::decimate(c.x, c.y, c.count, c.sorted, visibleMin, visibleMax, pixels);
        graph->setData(points.x, points.y, c.sorted);
        // A single point has no line to draw: it gets a marker (a lone evaluation, a first sample).
        qsizetype finite = 0;
        for (size_t k = 0; k < c.count && finite < 2; ++k)
            finite += std::isfinite(c.x[k]) && std::isfinite(c.y[k]) ? 1 : 0;
        graph->setScatterStyle(finite == 1 ? QCPScatterStyle(QCPScatterStyle::ssDisc, kMarkerSize)
                                           : QCPScatterStyle(QCPScatterStyle::ssNone));
        graph->setVisible(!m_hiddenCurves.contains(c.name));
        // Only a chart with several curves needs a legend; faint raw curves share their average's entry.
        if (c.faint || legendEntries < 2 || tooMany)
            graph->removeFromLegend();
        else if (!m_plot->legend->hasItemWithPlottable(graph))
            graph->addToLegend();
    }
    applyPens();
    const bool empty = m_rawPoints == 0;
    m_emptyLabel->setText(m_emptyText);
    m_emptyLabel->setVisible(empty && !m_emptyText.isEmpty());
    if (empty) {
        // Clean axes: never the range of the runs shown before.
        m_plot->xAxis->setRange(0, 1);
        m_plot->yAxis->setRange(m_logScale ? 0.1 : 0, 1);
        m_following = true;
        return;
    }
    if (any && m_following) {
        m_plot->xAxis->setRange(xMin, xMax);
        if (xMin == xMax)
            m_plot->xAxis->setRange(xMin - 1, xMax + 1);
        // 5 % room over the data's own range (a factor on a log axis); a constant series (a fixed
        // learning rate) gets 10 % of its value (QCustomPlot would centre it in a range of its own).
        QCPRange y;
        bool anyValue = false;
        for (int i = 0; i < m_plot->graphCount(); ++i) {
            if (!m_plot->graph(i)->visible())
                continue;
            bool found = false;
            const QCPRange r = m_plot->graph(i)->getValueRange(found, m_logScale ? QCP::sdPositive : QCP::sdBoth,
                                                               QCPRange(visibleMin, visibleMax));
            if (found) {
                y = anyValue ? QCPRange(std::min(y.lower, r.lower), std::max(y.upper, r.upper)) : r;
                anyValue = true;
            }
        }
        if (anyValue && m_logScale) {
            const double lower = y.lower > 0 ? y.lower : 1e-12;
            m_plot->yAxis->setRange(lower / 1.2, std::max(y.upper, lower) * 1.2);
        } else if (anyValue) {
            double pad = (y.upper - y.lower) * 0.05;
            if (!(pad > 0))
                pad = y.upper != 0 ? std::fabs(y.upper) * 0.1 : 1.0;
            m_plot->yAxis->setRange(y.lower - pad, y.upper + pad);
        }
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
    return writeSamplesCsv(m_spec, chartRuns(), path, error);
}

} // namespace accel::app
