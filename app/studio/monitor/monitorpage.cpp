#include "app/studio/monitor/monitorpage.h"

#include "app/studio/monitor/bannerbar.h"
#include "app/studio/monitor/eventstimeline.h"
#include "app/studio/monitor/logview.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/rankmemorypanel.h"
#include "app/studio/monitor/remotehosts.h"
#include "app/studio/monitor/runstatuspanel.h"
#include "launcher/remoterunfollower.h"
#include "monitor/runcatalogue.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace accel::app {

namespace {

// The order charts appear in: training curves first, then the machine's.
constexpr MonitorPage::Chart kDisplayOrder[MonitorPage::ChartCount] = {
    MonitorPage::LossChart,     MonitorPage::EvalLossChart,   MonitorPage::LrChart,
    MonitorPage::GradNormChart, MonitorPage::ThroughputChart, MonitorPage::CpuChart,
    MonitorPage::MemoryChart,   MonitorPage::GpuUtilChart,    MonitorPage::GpuMemoryChart};

QColor runColor(int index)
{
    static const QList<QColor> palette = {QColor(31, 119, 180),  QColor(214, 39, 40),  QColor(44, 160, 44),
                                          QColor(148, 103, 189), QColor(255, 127, 14), QColor(23, 190, 207)};
    return palette.at(index % palette.size());
}

} // namespace

MonitorPage::MonitorPage(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);

    auto *bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Details for:"), this));
    m_detailCombo = new QComboBox(this);
    m_detailCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_detailCombo->setMinimumContentsLength(12);
    bar->addWidget(m_detailCombo);
    m_smoothBox = new QCheckBox(tr("Smooth"), this);
    m_smoothBox->setToolTip(tr("Draw an exponential moving average over the raw curve of noisy series (loss, "
                               "grad norm, throughput); schedules and memory are never smoothed"));
    m_smoothBox->setChecked(true);
    m_smoothWeight = new QDoubleSpinBox(this);
    m_smoothWeight->setRange(0.01, 0.99);
    m_smoothWeight->setSingleStep(0.05);
    m_smoothWeight->setValue(0.3);
    m_smoothWeight->setToolTip(tr("Weight of the newest sample in the exponential moving average"));
    bar->addSpacing(12);
    bar->addWidget(m_smoothBox);
    bar->addWidget(m_smoothWeight);
    bar->addStretch(1);
    m_exportChart = new QComboBox(this);
    bar->addWidget(m_exportChart);
    auto *png = new QPushButton(tr("PNG…"), this);
    png->setToolTip(tr("Export the chart chosen on the left as a PNG image"));
    auto *csv = new QPushButton(tr("CSV…"), this);
    csv->setToolTip(tr("Export the raw samples behind the chart chosen on the left as CSV"));
    bar->addWidget(png);
    bar->addWidget(csv);
    layout->addLayout(bar);

    m_status = new RunStatusPanel(this);
    m_status->setVisible(false);
    layout->addWidget(m_status);
    m_banners = new BannerBar(this);
    layout->addWidget(m_banners);
    m_remoteState = new QLabel(this);
    m_remoteState->setObjectName(QStringLiteral("remoteState"));
    m_remoteState->setWordWrap(true);
    m_remoteState->setVisible(false);
    layout->addWidget(m_remoteState);
    m_empty = new QLabel(tr("Select one or several runs above to follow their losses, throughput, ranks, logs "
                            "and events."),
                         this);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    layout->addWidget(m_empty, 1);
    m_gpuNote = new QLabel(tr("No GPU samples in these runs: the launcher records GPU utilisation and memory "
                              "only where NVIDIA's NVML (libnvidia-ml.so.1) is installed."),
                           this);
    m_gpuNote->setObjectName(QStringLiteral("gpuNote"));
    m_gpuNote->setWordWrap(true);
    m_gpuNote->setStyleSheet(QStringLiteral("color: palette(mid);"));
    m_gpuNote->setVisible(false);
    layout->addWidget(m_gpuNote);

    auto *splitter = new QSplitter(Qt::Vertical, this);
    m_content = splitter;
    auto *grid = new QWidget(splitter);
    m_grid = new QGridLayout(grid);
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_grid->setSpacing(4);
    using monitor::XAxis;
    const ChartSpec specs[ChartCount] = {
        {tr("Loss"), {QStringLiteral("loss")}, true, true, AxisUnit::Plain, tr("loss")},
        {tr("Learning rate"),
         {QStringLiteral("lr"), QStringLiteral("learning_rate")},
         false,
         false,
         AxisUnit::Plain,
         tr("learning rate")},
        {tr("Throughput"),
         {QStringLiteral("samples_per_s"), QStringLiteral("tokens_per_s"), QStringLiteral("it_per_s")},
         false,
         true,
         AxisUnit::PerSecond,
         tr("samples")},
        {tr("Memory per rank"),
         {QStringLiteral("mem_rss_bytes")},
         false,
         false,
         AxisUnit::Bytes,
         tr("resident memory"),
         XAxis::Time},
        {tr("Grad norm"), {QStringLiteral("grad_norm")}, false, true, AxisUnit::Plain, tr("grad norm")},
        {tr("Eval loss"), {QStringLiteral("eval_loss")}, true, false, AxisUnit::Plain, tr("eval loss")},
        {tr("CPU per rank"),
         {QStringLiteral("cpu_percent")},
         false,
         false,
         AxisUnit::Percent,
         tr("CPU, 100 = one core"),
         XAxis::Time},
        // NVML's utilisation: the share of the last sample period in which a kernel ran.
        {tr("GPU utilisation"),
         {QStringLiteral("gpu_util_percent")},
         false,
         false,
         AxisUnit::Percent,
         tr("GPU busy"),
         XAxis::Time,
         QStringLiteral("gpu"),
         QStringLiteral("_util_percent"),
         tr("GPU %1")},
        {tr("GPU memory"),
         {QStringLiteral("mem_device_bytes")},
         false,
         false,
         AxisUnit::Bytes,
         tr("GPU memory in use"),
         XAxis::Time,
         QStringLiteral("gpu"),
         QStringLiteral("_mem_used_bytes"),
         tr("GPU %1 (all processes)")},
    };
    for (int i = 0; i < ChartCount; ++i) {
        auto *plot = new MetricPlot(specs[i], grid);
        m_charts.append(plot);
        connect(plot, &MetricPlot::dataPresenceChanged, this, &MonitorPage::layoutCharts);
    }
    for (const Chart chart : kDisplayOrder)
        m_exportChart->addItem(specs[chart].title, int(chart));
    layoutCharts();
    m_tabs = new QTabWidget(splitter);
    m_ranksView = new QTableView(m_tabs);
    m_ranksView->verticalHeader()->setVisible(false);
    m_ranksView->horizontalHeader()->setStretchLastSection(true);
    m_ranksView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_logView = new LogView(m_tabs);
    m_eventsView = new EventsTimeline(m_tabs);
    m_tabs->addTab(m_ranksView, tr("Ranks"));
    m_tabs->addTab(m_logView, tr("Logs"));
    m_tabs->addTab(m_eventsView, tr("Events"));
    m_memory = new RankMemoryPanel(m_tabs);
    m_tabs->addTab(m_memory, tr("Memory"));
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);
    layout->addWidget(splitter, 1);
    m_content->setVisible(false);
    setSmoothing(m_smoothWeight->value());

    connect(m_detailCombo, &QComboBox::currentIndexChanged, this, &MonitorPage::updateDetails);
    auto applySmoothing = [this] { setSmoothing(m_smoothBox->isChecked() ? m_smoothWeight->value() : 0.0); };
    connect(m_smoothBox, &QCheckBox::toggled, this, applySmoothing);
    connect(m_smoothWeight, &QDoubleSpinBox::valueChanged, this, applySmoothing);
    connect(png, &QPushButton::clicked, this, [this] { askExport(true); });
    connect(csv, &QPushButton::clicked, this, [this] { askExport(false); });
}

MonitorPage::~MonitorPage()
{
    for (auto *chart : std::as_const(m_charts))
        chart->clearStores();
}

void MonitorPage::setRuns(const QStringList &runDirectories)
{
    QList<Run> kept;
    for (const QString &directory : runDirectories) {
        QString host, path;
        const bool remote = monitor::parseRemoteRunAddress(directory, &host, &path);
        const QString clean = remote ? directory : QDir::cleanPath(QFileInfo(directory).absoluteFilePath());
        auto it = std::find_if(m_runs.begin(), m_runs.end(), [&](const Run &r) { return r.directory == clean; });
        if (it != m_runs.end()) {
            kept.append(*it);
            m_runs.erase(it);
            continue;
        }
        Run run;
        run.directory = clean;
        run.label = remote ? tr("%1 on %2").arg(QFileInfo(path).fileName(), host) : QFileInfo(clean).fileName();
        run.monitor = remote ? followRemote(host, path, run.label) : monitor::RunMonitor::forDirectory(clean, this);
        if (!run.monitor)
            continue;
        const QString label = run.label;
        connect(run.monitor->store(), &monitor::MetricStore::ranksAdded, this, &MonitorPage::updateRedrawInterval);
        connect(run.monitor, &monitor::RunMonitor::eventsAppended, this,
                [this, label](const QList<monitor::RunEvent> &events) { m_banners->observe(label, events); });
        run.monitor->start();
        kept.append(run);
    }
    // Runs no longer selected: stop following them (their banners go with them; the banners of
    // runs just opened stay, a finished run writes no more events to bring them back).
    for (const auto &run : std::as_const(m_runs)) {
        for (auto *chart : std::as_const(m_charts))
            chart->clearStores();
        m_banners->removeRun(run.label);
        setRemoteLine(run.label, QString());
        run.monitor->stop();
        run.monitor->deleteLater();
    }
    m_runs = kept;

    const QString previous = m_detailCombo->currentData().toString();
    m_detailCombo->blockSignals(true);
    m_detailCombo->clear();
    for (const auto &run : std::as_const(m_runs))
        m_detailCombo->addItem(run.label, run.directory);
    const int again = m_detailCombo->findData(previous);
    m_detailCombo->setCurrentIndex(again >= 0 ? again : 0);
    m_detailCombo->blockSignals(false);
    m_detailCombo->setEnabled(m_runs.size() > 1);

    m_empty->setVisible(m_runs.isEmpty());
    m_content->setVisible(!m_runs.isEmpty());
    rebuildCharts();
    updateDetails();
}

monitor::RunMonitor *MonitorPage::followRemote(const QString &host, const QString &path, const QString &label)
{
    if (!m_remoteHosts) {
        setRemoteLine(label, tr("%1: remote runs cannot be followed here").arg(label));
        return nullptr;
    }
    auto *follower = new launcher::RemoteRunFollower(m_remoteHosts->host(host), path);
    auto *monitor = new monitor::RunMonitor(follower, this); // takes the follower
    connect(follower, &launcher::RemoteRunFollower::connectionLost, this,
            [this, host, label](const QString &, const QString &message, int attempt, int retryInMs) {
                setRemoteLine(label, tr("Reconnecting to %1… (%2, attempt %3 in %4 s): %5")
                                         .arg(host, label)
                                         .arg(attempt)
                                         .arg(retryInMs / 1000.0, 0, 'f', 1)
                                         .arg(message));
            });
    connect(follower, &launcher::RemoteRunFollower::streamStarted, this,
            [this, label](int) { setRemoteLine(label, QString()); });
    connect(follower, &monitor::RunSource::ended, this, [this, follower, label](const QString &reason) {
        // The run ended there (its final state is in the manifest), or the host was given up on.
        setRemoteLine(label, follower->failure().isEmpty() ? QString() : tr("%1: %2").arg(label, reason));
    });
    return monitor;
}

void MonitorPage::setRemoteLine(const QString &label, const QString &line)
{
    if (line.isEmpty())
        m_remoteLines.remove(label);
    else
        m_remoteLines.insert(label, line);
    const QStringList lines = m_remoteLines.values();
    m_remoteState->setText(lines.join(QLatin1Char('\n')));
    m_remoteState->setVisible(!lines.isEmpty());
}

QStringList MonitorPage::runs() const
{
    QStringList out;
    for (const auto &run : m_runs)
        out.append(run.directory);
    return out;
}

int MonitorPage::detailRun() const
{
    return m_detailCombo->currentIndex();
}

void MonitorPage::setDetailRun(int index)
{
    m_detailCombo->setCurrentIndex(index);
}

void MonitorPage::setSmoothing(double weight)
{
    for (auto *chart : std::as_const(m_charts))
        chart->setSmoothing(weight);
}

void MonitorPage::layoutCharts()
{
    // Charts without data give their room to the others, unless no chart has data yet (a run
    // that is starting shows every chart, empty).
    bool anyData = false;
    for (const auto *chart : std::as_const(m_charts))
        anyData = anyData || chart->hasData();
    QList<MetricPlot *> shown;
    for (const Chart chart : kDisplayOrder) {
        MetricPlot *plot = m_charts.at(chart);
        m_grid->removeWidget(plot);
        const bool show = !anyData || plot->hasData();
        plot->setVisible(show);
        if (show)
            shown.append(plot);
    }
    const bool gpuData = m_charts.at(GpuUtilChart)->hasData() || m_charts.at(GpuMemoryChart)->hasData();
    m_gpuNote->setVisible(!m_runs.isEmpty() && anyData && !gpuData);
    const int columns = shown.size() <= 4 ? 2 : 3;
    for (int i = 0; i < shown.size(); ++i)
        m_grid->addWidget(shown[i], i / columns, i % columns);
    for (int c = 0; c < 3; ++c)
        m_grid->setColumnStretch(c, c < columns ? 1 : 0);
}

void MonitorPage::updateRedrawInterval()
{
    // Many curves are costly to draw (each rank has its own, and its legend entry): with 32 or more
    // the charts redraw at most once a second (what a run logging at 1 Hz brings anyway), else at
    // about 30 Hz. The data is never dropped, only drawn in fewer passes.
    constexpr int kManyCurves = 32;
    qsizetype curves = 0;
    for (const auto &run : std::as_const(m_runs))
        curves += run.monitor->store()->ranks().size();
    const int interval = curves >= kManyCurves ? 1000 : 33;
    for (auto *chart : std::as_const(m_charts))
        chart->setRedrawInterval(interval);
}

void MonitorPage::rebuildCharts()
{
    for (auto *chart : std::as_const(m_charts)) {
        chart->clearStores();
        for (int i = 0; i < m_runs.size(); ++i)
            chart->addStore(m_runs[i].monitor->store(), m_runs[i].label, runColor(i));
    }
    updateRedrawInterval();
}

void MonitorPage::updateDetails()
{
    const int index = m_detailCombo->currentIndex();
    monitor::RunMonitor *run = (index >= 0 && index < m_runs.size()) ? m_runs[index].monitor : nullptr;
    m_ranksView->setModel(run ? run->ranksModel() : nullptr);
    // Size the columns to their contents now and again when ranks first appear (a run followed
    // over SSH has none yet when it is chosen; sized to the titles alone, State and Loss were cut).
    disconnect(m_ranksSizing);
    if (run) {
        auto fit = [this] { m_ranksView->horizontalHeader()->resizeSections(QHeaderView::ResizeToContents); };
        fit();
        m_ranksSizing = connect(run->ranksModel(), &QAbstractItemModel::rowsInserted, m_ranksView, fit);
    }
    m_logView->setLogModel(run ? run->logModel() : nullptr);
    m_eventsView->setEventsModel(run ? run->eventsModel() : nullptr);
    m_status->setRun(run, index >= 0 && index < m_runs.size() ? m_runs[index].directory : QString());
    m_memory->setRun(run, index >= 0 && index < m_runs.size() ? m_runs[index].directory : QString());
}

bool MonitorPage::exportPng(Chart chart, const QString &path)
{
    auto *plot = m_charts.value(chart);
    return plot && plot->savePng(path);
}

bool MonitorPage::exportCsv(Chart chart, const QString &path, QString *error)
{
    auto *plot = m_charts.value(chart);
    return plot && plot->saveCsv(path, error);
}

void MonitorPage::askExport(bool png)
{
    const auto chart = static_cast<Chart>(m_exportChart->currentData().toInt());
    const QString base = m_charts.at(chart)->names().first();
    const QString path = QFileDialog::getSaveFileName(
        this, png ? tr("Export chart as PNG") : tr("Export series as CSV"),
        QDir::home().filePath(base + (png ? QStringLiteral(".png") : QStringLiteral(".csv"))),
        png ? tr("PNG images (*.png)") : tr("CSV files (*.csv)"));
    if (path.isEmpty())
        return;
    QString error;
    const bool ok = png ? exportPng(chart, path) : exportCsv(chart, path, &error);
    Q_EMIT statusMessage(ok ? tr("Exported %1").arg(path)
                            : tr("Export failed: %1").arg(error.isEmpty() ? tr("cannot write %1").arg(path) : error));
}

} // namespace accel::app
