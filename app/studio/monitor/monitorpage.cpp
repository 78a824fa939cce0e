#include "app/studio/monitor/monitorpage.h"

#include "app/remote/remoterunfollower.h"
#include "app/studio/monitor/bannerbar.h"
#include "app/studio/monitor/eventstimeline.h"
#include "app/studio/monitor/logview.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitortexts.h"
#include "app/studio/monitor/panelgrid.h"
#include "app/studio/monitor/rankmemorypanel.h"
#include "app/studio/monitor/remotehosts.h"
#include "app/studio/monitor/runstatuspanel.h"
#include "app/studio/monitor/stdoutoffer.h"
#include "monitor/runcatalogue.h"
#include "monitor/runsmodel.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QScrollArea>
#include <QSettings>
#include <QSlider>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

namespace accel::app {

namespace {

constexpr double kDefaultSmoothing = 0.6; // TensorBoard's default

QColor runColor(int index)
{
    static const QList<QColor> palette = {QColor(31, 119, 180),  QColor(214, 39, 40),  QColor(44, 160, 44),
                                          QColor(148, 103, 189), QColor(255, 127, 14), QColor(23, 190, 207)};
    return palette.at(index % palette.size());
}

QString stdoutSettingsKey(const QString &project)
{
    return QStringLiteral("monitor/stdoutMetrics/") + QString::fromLatin1(project.toUtf8().toPercentEncoding());
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
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("X:"), this));
    m_xMode = new QComboBox(this);
    m_xMode->setObjectName(QStringLiteral("xMode"));
    m_xMode->addItem(tr("Step"), int(XMode::Step));
    m_xMode->addItem(tr("Wall time"), int(XMode::WallTime));
    m_xMode->addItem(tr("Relative time"), int(XMode::RelativeTime));
    m_xMode->setToolTip(tr("The x axis of every chart: optimizer step, wall-clock time, or seconds since each "
                           "run's start (charts of system samples, which have no steps, show time)"));
    bar->addWidget(m_xMode);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("Smoothing:"), this));
    m_smoothSlider = new QSlider(Qt::Horizontal, this);
    m_smoothSlider->setObjectName(QStringLiteral("smoothing"));
    m_smoothSlider->setRange(0, 99);
    m_smoothSlider->setMaximumWidth(140);
    m_smoothValue = new QDoubleSpinBox(this);
    m_smoothValue->setRange(0, 0.99);
    m_smoothValue->setSingleStep(0.05);
    m_smoothValue->setDecimals(2);
    const QString smoothingTip = tr("Exponential moving average over the noisy charts, as in W&B and TensorBoard: 0 "
                                    "draws the raw values, 0.99 is very smooth; the raw curve stays, faint");
    m_smoothSlider->setToolTip(smoothingTip);
    m_smoothValue->setToolTip(smoothingTip);
    bar->addWidget(m_smoothSlider);
    bar->addWidget(m_smoothValue);
    bar->addStretch(1);
    m_panelsButton = new QToolButton(this);
    m_panelsButton->setObjectName(QStringLiteral("panelsMenu"));
    m_panelsButton->setText(tr("Panels"));
    m_panelsButton->setToolTip(tr("Show or hide panels, read metrics from printed output, reset the layout. On a "
                                  "panel: right click for its options, wheel zooms, drag pans, double-click follows "
                                  "the data again, a click on a legend entry hides that curve"));
    m_panelsButton->setPopupMode(QToolButton::InstantPopup);
    m_panelsButton->setMenu(new QMenu(m_panelsButton));
    bar->addWidget(m_panelsButton);
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
    m_stdoutOffer = new StdoutOffer(this);
    layout->addWidget(m_stdoutOffer);
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
    m_chartsArea = new QStackedWidget(splitter);
    auto *scroll = new QScrollArea(m_chartsArea);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_grid = new PanelGrid(scroll);
    scroll->setWidget(m_grid);
    m_noData = new QLabel(m_chartsArea);
    m_noData->setObjectName(QStringLiteral("noMetrics"));
    m_noData->setAlignment(Qt::AlignCenter);
    m_noData->setWordWrap(true);
    m_noData->setMargin(24);
    m_noData->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_chartsArea->addWidget(scroll);
    m_chartsArea->addWidget(m_noData);
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
    // The charts get four fifths; the tables below may shrink to a few rows (their own minimum
    // left the charts less than a panel's height at 1024x700).
    m_tabs->setMinimumHeight(80);
    m_chartsArea->setMinimumHeight(120);
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({4000, 1000});
    layout->addWidget(splitter, 1);
    m_content->setVisible(false);

    // The page's choices are kept for next time.
    QSettings settings;
    const int mode = m_xMode->findData(settings.value(QStringLiteral("monitor/xMode"), int(XMode::Step)).toInt());
    m_xMode->setCurrentIndex(std::max(0, mode));
    const double smoothing = settings.value(QStringLiteral("monitor/smoothing"), kDefaultSmoothing).toDouble();
    m_smoothValue->setValue(smoothing);
    m_smoothSlider->setValue(int(std::lround(smoothing * 100)));
    m_grid->setXMode(xMode());
    m_grid->setSmoothing(m_smoothValue->value());

    connect(m_detailCombo, &QComboBox::currentIndexChanged, this, &MonitorPage::updateDetails);
    connect(m_xMode, &QComboBox::currentIndexChanged, this, [this] {
        QSettings().setValue(QStringLiteral("monitor/xMode"), int(xMode()));
        m_grid->setXMode(xMode());
    });
    connect(m_smoothSlider, &QSlider::valueChanged, this, [this](int value) { setSmoothing(value / 100.0); });
    connect(m_smoothValue, &QDoubleSpinBox::valueChanged, this, [this](double value) { setSmoothing(value); });
    connect(m_panelsButton->menu(), &QMenu::aboutToShow, this, &MonitorPage::fillPanelsMenu);
    connect(m_grid, &PanelGrid::dataPresenceChanged, this, &MonitorPage::updateEmptyState);
    connect(m_grid, &PanelGrid::exportRequested, this, &MonitorPage::askExport);
    connect(m_stdoutOffer, &StdoutOffer::accepted, this, [this] { setStdoutMetrics(detailRun(), true); });
    m_emptyTimer.setInterval(1000);
    connect(&m_emptyTimer, &QTimer::timeout, this, &MonitorPage::updateEmptyState);
}

MonitorPage::~MonitorPage()
{
    m_grid->setRuns({});
}

bool MonitorPage::startMonitor(Run &run)
{
    QString host, path;
    const bool remote = monitor::parseRemoteRunAddress(run.directory, &host, &path);
    run.monitor = remote ? followRemote(host, path, run.label) : monitor::RunMonitor::forDirectory(run.directory, this);
    if (!run.monitor)
        return false;
    run.monitor->source()->setStdoutMetricsEnabled(run.stdoutMetrics);
    const QString directory = run.directory;
    connect(run.monitor->store(), &monitor::MetricStore::ranksAdded, this, &MonitorPage::updateRedrawInterval);
    connect(run.monitor, &monitor::RunMonitor::eventsAppended, this,
            [this, directory](const QList<monitor::RunEvent> &events) {
                for (const Run &r : std::as_const(m_runs)) {
                    if (r.directory == directory)
                        m_banners->observe(r.label, events);
                }
            });
    connect(run.monitor, &monitor::RunMonitor::manifestChanged, this, [this, directory](const QJsonObject &manifest) {
        // A remote run's project is known once its run.json came.
        for (Run &r : m_runs) {
            if (r.directory == directory && r.project.isEmpty())
                r.project = manifest.value(QLatin1String("name")).toString();
        }
        if (m_project.isEmpty() && !m_runs.isEmpty() && m_runs.first().directory == directory &&
            !m_runs.first().project.isEmpty()) {
            m_project = m_runs.first().project;
            m_grid->setProject(m_project);
        }
        updateEmptyState();
    });
    run.monitor->start();
    return true;
}

void MonitorPage::setRuns(const QStringList &runDirectories)
{
    QList<Run> kept;
    QList<qsizetype> fresh; // runs to start following, once they have their names
    for (const QString &directory : runDirectories) {
        const bool remote = monitor::parseRemoteRunAddress(directory);
        const QString clean = remote ? directory : QDir::cleanPath(QFileInfo(directory).absoluteFilePath());
        auto it = std::find_if(m_runs.begin(), m_runs.end(), [&](const Run &r) { return r.directory == clean; });
        if (it != m_runs.end()) {
            kept.append(*it);
            m_runs.erase(it);
            continue;
        }
        Run run;
        run.directory = clean;
        monitor::RunInfo info;
        if (!remote && monitor::readRunInfo(clean, info))
            run.project = info.name;
        run.stdoutMetrics = !run.project.isEmpty() && QSettings().value(stdoutSettingsKey(run.project), false).toBool();
        fresh.append(kept.size());
        kept.append(run);
    }
    // Runs no longer selected: stop following them (their banners go with them; the banners of
    // runs just opened stay, a finished run writes no more events to bring them back).
    m_grid->setRuns({});
    for (const auto &run : std::as_const(m_runs)) {
        m_banners->removeRun(run.label);
        setRemoteLine(run.label, QString());
        run.monitor->stop();
        run.monitor->deleteLater();
    }
    m_runs = kept;
    relabel(); // before the first events, which the banners keep under the run's name
    for (qsizetype i = fresh.size() - 1; i >= 0; --i) {
        if (!startMonitor(m_runs[fresh[i]]))
            m_runs.removeAt(fresh[i]);
    }
    relabel();
    const QString project = m_runs.isEmpty() ? QString() : m_runs.first().project;
    if (project != m_project || m_grid->project() != project) {
        m_project = project;
        m_grid->setProject(project);
    }
    rebuildCharts();
    m_empty->setVisible(m_runs.isEmpty());
    m_content->setVisible(!m_runs.isEmpty());
    if (m_runs.isEmpty())
        m_emptyTimer.stop();
    else
        m_emptyTimer.start();
    updateDetails();
}

void MonitorPage::setRunNames(const QHash<QString, QString> &names)
{
    m_names = names;
    if (relabel())
        rebuildCharts();
}

bool MonitorPage::relabel()
{
    QStringList addresses;
    for (const Run &run : std::as_const(m_runs))
        addresses.append(run.directory);
    const QStringList labels = app::runLabels(addresses, m_names);
    bool changed = false;
    for (qsizetype i = 0; i < m_runs.size(); ++i) {
        Run &run = m_runs[i];
        if (run.label == labels[i])
            continue;
        // The run's banners go over to its new name (the events it had are read again).
        m_banners->removeRun(run.label);
        run.label = labels[i];
        changed = true;
        if (!run.monitor)
            continue;
        QList<monitor::RunEvent> events;
        const monitor::EventsModel *model = run.monitor->eventsModel();
        for (int row = 0; row < model->rowCount(); ++row)
            events.append(model->event(row));
        if (!events.isEmpty())
            m_banners->observe(run.label, events);
    }
    bool comboSame = m_detailCombo->count() == m_runs.size();
    for (int i = 0; comboSame && i < m_runs.size(); ++i)
        comboSame = m_detailCombo->itemText(i) == m_runs[i].label && m_detailCombo->itemData(i) == m_runs[i].directory;
    if (!comboSame) {
        const QString previous = m_detailCombo->currentData().toString();
        m_detailCombo->blockSignals(true);
        m_detailCombo->clear();
        for (const auto &run : std::as_const(m_runs))
            m_detailCombo->addItem(run.label, run.directory);
        const int again = m_detailCombo->findData(previous);
        m_detailCombo->setCurrentIndex(again >= 0 ? again : 0);
        m_detailCombo->blockSignals(false);
    }
    m_detailCombo->setEnabled(m_runs.size() > 1);
    return changed;
}

QStringList MonitorPage::runLabels() const
{
    QStringList labels;
    for (const Run &run : m_runs)
        labels.append(run.label);
    return labels;
}

monitor::RunMonitor *MonitorPage::followRemote(const QString &host, const QString &path, const QString &label)
{
    if (!m_remoteHosts) {
        setRemoteLine(label, tr("%1: remote runs cannot be followed here").arg(label));
        return nullptr;
    }
    auto *follower = new RemoteRunFollower(m_remoteHosts->host(host), path);
    auto *monitor = new monitor::RunMonitor(follower, this); // takes the follower
    connect(follower, &RemoteRunFollower::connectionLost, this,
            [this, host, label](const QString &, const QString &message, int attempt, int retryInMs) {
                setRemoteLine(label, tr("Reconnecting to %1… (%2, attempt %3 in %4 s): %5")
                                         .arg(host, label)
                                         .arg(attempt)
                                         .arg(retryInMs / 1000.0, 0, 'f', 1)
                                         .arg(message));
            });
    connect(follower, &RemoteRunFollower::streamStarted, this, [this, label](int) { setRemoteLine(label, QString()); });
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

MetricPlot *MonitorPage::chart(Chart chart) const
{
    return m_grid->builtIn(chart);
}

MetricPlot *MonitorPage::panel(const QString &key) const
{
    return m_grid->panel(key);
}

void MonitorPage::setSmoothing(double smoothing)
{
    smoothing = std::clamp(smoothing, 0.0, 0.99);
    const QSignalBlocker sliderBlock(m_smoothSlider);
    const QSignalBlocker valueBlock(m_smoothValue);
    m_smoothSlider->setValue(int(std::lround(smoothing * 100)));
    m_smoothValue->setValue(smoothing);
    QSettings().setValue(QStringLiteral("monitor/smoothing"), smoothing);
    m_grid->setSmoothing(smoothing);
}

double MonitorPage::smoothing() const
{
    return m_smoothValue->value();
}

void MonitorPage::setXMode(XMode mode)
{
    m_xMode->setCurrentIndex(m_xMode->findData(int(mode)));
}

XMode MonitorPage::xMode() const
{
    return XMode(m_xMode->currentData().toInt());
}

void MonitorPage::setStdoutMetrics(int runIndex, bool enabled)
{
    if (runIndex < 0 || runIndex >= m_runs.size() || m_runs[runIndex].stdoutMetrics == enabled)
        return;
    Run &run = m_runs[runIndex];
    if (!run.project.isEmpty())
        QSettings().setValue(stdoutSettingsKey(run.project), enabled);
    // The run is read again from the start, now with (or without) its printed metrics.
    m_grid->setRuns({});
    run.monitor->stop();
    run.monitor->deleteLater();
    run.stdoutMetrics = enabled;
    if (!startMonitor(run)) {
        m_runs.removeAt(runIndex);
        relabel();
    }
    rebuildCharts();
    updateDetails();
    Q_EMIT statusMessage(enabled ? tr("Reading metrics from the printed output of %1").arg(run.label)
                                 : tr("No longer reading metrics from the printed output of %1").arg(run.label));
}

void MonitorPage::fillPanelsMenu()
{
    QMenu *menu = m_panelsButton->menu();
    menu->clear();
    const int index = detailRun();
    if (index >= 0 && index < m_runs.size()) {
        QAction *stdoutAction = menu->addAction(tr("Read metrics from %1's printed output").arg(m_runs[index].label));
        stdoutAction->setCheckable(true);
        stdoutAction->setChecked(m_runs[index].stdoutMetrics);
        connect(stdoutAction, &QAction::toggled, this, [this, index](bool on) { setStdoutMetrics(index, on); });
    }
    m_grid->fillPanelsMenu(menu);
}

void MonitorPage::updateRedrawInterval()
{
    // Many curves are costly to draw (each rank has its own, and its legend entry): with 32 or more
    // the charts redraw at most once a second (what a run logging at 1 Hz brings anyway), else at
    // about 30 Hz. The data is never dropped, only drawn in fewer passes.
    constexpr int kManyCurves = 32;
    qsizetype curves = 0;
    for (const auto &run : std::as_const(m_runs))
        curves += run.monitor ? run.monitor->store()->ranks().size() : 0;
    m_grid->setRedrawInterval(curves >= kManyCurves ? 1000 : 33);
}

void MonitorPage::rebuildCharts()
{
    QList<GridRun> runs;
    for (int i = 0; i < m_runs.size(); ++i) {
        if (m_runs[i].monitor)
            runs.append({m_runs[i].monitor->store(), m_runs[i].label, runColor(i)});
    }
    m_grid->setRuns(runs);
    updateRedrawInterval();
    updateEmptyState();
}

QString MonitorPage::emptyStateText() const
{
    return m_chartsArea->currentWidget() == m_noData ? m_noData->text() : QString();
}

void MonitorPage::updateEmptyState()
{
    const bool any = m_grid->hasData();
    if (any || m_runs.isEmpty()) {
        m_chartsArea->setCurrentWidget(m_chartsArea->widget(0));
        const bool gpuData = chart(GpuUtilChart)->hasData() || chart(GpuMemoryChart)->hasData();
        m_gpuNote->setVisible(any && !gpuData);
        return;
    }
    m_gpuNote->setVisible(false);
    // Why each run has no chart, from its state and what it printed.
    QStringList lines;
    for (const Run &run : std::as_const(m_runs)) {
        if (!run.monitor)
            continue; // being started
        lines << whyNoMetrics(run.label, run.monitor->manifest().value(QLatin1String("state")).toString(),
                              run.monitor->logModel()->rowCount() > 0, run.stdoutMetrics);
    }
    m_noData->setText(lines.join(QLatin1Char('\n')));
    m_chartsArea->setCurrentWidget(m_noData);
}

void MonitorPage::updateDetails()
{
    const int index = m_detailCombo->currentIndex();
    const bool valid = index >= 0 && index < m_runs.size();
    monitor::RunMonitor *run = valid ? m_runs[index].monitor : nullptr;
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
    m_status->setRun(run, valid ? m_runs[index].directory : QString());
    m_memory->setRun(run, valid ? m_runs[index].directory : QString());
    m_stdoutOffer->setRun(run, valid ? m_runs[index].label : QString(), valid && m_runs[index].stdoutMetrics);
}

bool MonitorPage::exportPng(Chart chart, const QString &path)
{
    auto *plot = this->chart(chart);
    return plot && plot->savePng(path);
}

bool MonitorPage::exportCsv(Chart chart, const QString &path, QString *error)
{
    auto *plot = this->chart(chart);
    return plot && plot->saveCsv(path, error);
}

void MonitorPage::askExport(const QString &key, bool png)
{
    MetricPlot *plot = m_grid->panel(key);
    if (!plot)
        return;
    QString base = key;
    base.replace(QLatin1Char('/'), QLatin1Char('_'));
    const QString path = QFileDialog::getSaveFileName(
        this, png ? tr("Export chart as PNG") : tr("Export series as CSV"),
        QDir::home().filePath(base + (png ? QStringLiteral(".png") : QStringLiteral(".csv"))),
        png ? tr("PNG images (*.png)") : tr("CSV files (*.csv)"));
    if (path.isEmpty())
        return;
    QString error;
    const bool ok = png ? plot->savePng(path) : plot->saveCsv(path, &error);
    Q_EMIT statusMessage(ok ? tr("Exported %1").arg(path)
                            : tr("Export failed: %1").arg(error.isEmpty() ? tr("cannot write %1").arg(path) : error));
}

} // namespace accel::app
