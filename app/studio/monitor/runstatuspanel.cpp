#include "app/studio/monitor/runstatuspanel.h"

#include "app/studio/monitor/axisunits.h"
#include "app/studio/studioresources.h"
#include "core/rundir/runlayout.h"
#include "launcher/jobfile.h"
#include "launcher/rundirectory.h"
#include "monitor/runmonitor.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFrame>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace accel::app {

namespace {

// Seconds per step: the median of the newest step times of the first rank that has some.
double secondsPerStep(const monitor::MetricStore &store)
{
    for (int rank : store.ranks()) {
        const auto *times = rank >= 0 ? store.stepTimes(rank) : nullptr;
        if (!times || times->empty())
            continue;
        const size_t count = std::min<size_t>(times->size(), 20);
        std::vector<double> recent(times->values.end() - std::ptrdiff_t(count), times->values.end());
        std::sort(recent.begin(), recent.end());
        return recent[recent.size() / 2];
    }
    return std::nan("");
}

QString chipStyle(const QString &state)
{
    QString color = QStringLiteral("#1f77b4"); // running, starting, restarting, stopping
    if (state == QLatin1String(rundir::state::Succeeded))
        color = QStringLiteral("#2ca02c");
    else if (state == QLatin1String(rundir::state::Failed))
        color = QStringLiteral("#d62728");
    else if (state == QLatin1String(rundir::state::Stopped))
        color = QStringLiteral("#7f7f7f");
    else if (state == QLatin1String(rundir::state::Lost))
        color = QStringLiteral("#ff7f0e");
    return QStringLiteral("QLabel { color: white; background: %1; border-radius: 3px; padding: 2px 8px; "
                          "font-weight: bold; }")
        .arg(color);
}

} // namespace

RunStatusPanel::RunStatusPanel(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    auto *line = new QHBoxLayout;
    m_stateChip = new QLabel(this);
    m_stateChip->setObjectName(QStringLiteral("runState"));
    m_progress = new QLabel(this);
    m_progress->setObjectName(QStringLiteral("runProgress"));
    m_progress->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_bar = new QProgressBar(this);
    m_bar->setRange(0, 1000);
    m_bar->setTextVisible(false);
    m_bar->setMaximumHeight(8);
    m_bar->setMaximumWidth(240);
    m_playground = new QPushButton(tr("Open in Playground"), this);
    m_playground->setObjectName(QStringLiteral("openInPlayground"));
    m_playground->setVisible(false);
    connect(m_playground, &QPushButton::clicked, this,
            [this] { Q_EMIT openInPlaygroundRequested(m_output.model, m_output.adapter); });
    line->addWidget(m_stateChip);
    line->addWidget(m_progress, 1);
    line->addWidget(m_bar);
    line->addWidget(m_playground);
    layout->addLayout(line);

    m_card = new QFrame(this);
    m_card->setObjectName(QStringLiteral("triageCard"));
    m_card->setStyleSheet(QStringLiteral("QFrame#triageCard { border-left: 4px solid #d62728; "
                                         "background: rgba(214, 39, 40, 30); padding: 4px; }"));
    auto *cardLayout = new QVBoxLayout(m_card);
    cardLayout->setContentsMargins(8, 4, 8, 4);
    cardLayout->setSpacing(2);
    m_cardTitle = new QLabel(m_card);
    QFont bold = m_cardTitle->font();
    bold.setBold(true);
    m_cardTitle->setFont(bold);
    m_cardError = new QLabel(m_card);
    m_cardError->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_cardError->setWordWrap(true);
    m_cardError->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_cardCause = new QLabel(m_card);
    m_cardCause->setWordWrap(true);
    m_cardCause->setTextInteractionFlags(Qt::TextSelectableByMouse);
    cardLayout->addWidget(m_cardTitle);
    cardLayout->addWidget(m_cardError);
    cardLayout->addWidget(m_cardCause);
    layout->addWidget(m_card);
    m_card->setVisible(false);

    m_hint = new QLabel(this);
    m_hint->setObjectName(QStringLiteral("noMetricsHint"));
    m_hint->setWordWrap(true);
    m_hint->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_hint->setStyleSheet(QStringLiteral("QLabel { border-left: 4px solid #1f77b4; padding: 4px 8px; }"));
    layout->addWidget(m_hint);
    m_hint->setVisible(false);

    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &RunStatusPanel::refresh);
    m_triageTimer.setSingleShot(true);
    m_triageTimer.setInterval(250); // coalesces bursts of log lines
    connect(&m_triageTimer, &QTimer::timeout, this, &RunStatusPanel::updateTriage);
}

QString RunStatusPanel::trackerPath()
{
    return findResourceFile(QStringLiteral("python/accel_studio_tracker.py"));
}

void RunStatusPanel::setRun(monitor::RunMonitor *run, const QString &directory)
{
    if (m_run)
        disconnect(m_run, nullptr, this, nullptr);
    if (m_run && m_run->logModel())
        disconnect(m_run->logModel(), nullptr, this, nullptr);
    m_run = run;
    m_directory = directory;
    m_state.clear();
    m_stateDetail.clear();
    m_triage = {};
    m_card->setVisible(false);
    m_output = {};
    m_playground->setVisible(false);
    m_maxSteps = 0;
    if (auto job = launcher::JobFile::load(QDir(directory).filePath(QLatin1String(rundir::file::Job)).toStdString()))
        m_maxSteps = QString::fromStdString(job->value("training.max_steps")).toInt();
    if (run) {
        connect(run, &monitor::RunMonitor::manifestChanged, this, &RunStatusPanel::refresh);
        connect(run->logModel(), &QAbstractItemModel::rowsInserted, this, [this] {
            if (m_state == QLatin1String(rundir::state::Failed))
                m_triageTimer.start();
        });
        m_timer.start();
    } else {
        m_timer.stop();
    }
    refresh();
}

bool RunStatusPanel::hasStepMetrics() const
{
    const auto *store = m_run ? m_run->store() : nullptr;
    if (!store)
        return false;
    for (int rank : store->ranks()) {
        if (rank >= 0 && store->rankStatus(rank).lastStep >= 0)
            return true;
    }
    return false;
}

void RunStatusPanel::refresh()
{
    setVisible(m_run);
    if (!m_run)
        return;
    const QJsonObject manifest = m_run->manifest();
    // The lost rule, as the runs list applies it: a live state whose supervisor is gone reads "lost".
    const QJsonObject supervisor = manifest.value(QLatin1String(rundir::key::Supervisor)).toObject();
    const QString state = QString::fromStdString(rundir::effectiveState(
        manifest.value(QStringLiteral("state")).toString().toStdString(),
        rundir::parseSupervisorRecord(QJsonDocument(supervisor).toJson(QJsonDocument::Compact).toStdString())));
    const QJsonArray states = manifest.value(QStringLiteral("states")).toArray();
    m_stateDetail = states.isEmpty() ? QString() : states.last().toObject().value(QStringLiteral("detail")).toString();
    const bool changed = state != m_state;
    m_state = state;
    const bool final = !state.isEmpty() && launcher::runstate::isFinal(state);
    if (final)
        m_timer.stop();

    const auto *store = m_run->store();
    qint64 step = -1;
    for (int rank : store->ranks()) {
        if (rank >= 0)
            step = std::max<qint64>(step, store->rankStatus(rank).lastStep);
    }
    int maxSteps = m_maxSteps;
    if (maxSteps <= 0) { // a script may log its own total
        const double logged = store->lastValue(0, QStringLiteral("max_steps"));
        maxSteps = std::isfinite(logged) ? int(logged) : 0;
    }
    const double perStep = secondsPerStep(*store);
    QStringList parts;
    if (step < 0) {
        if (!final)
            parts << tr("waiting for the first step");
    } else if (maxSteps > 0) {
        parts << tr("step %1 of %2 (%3 %)").arg(step).arg(maxSteps).arg(std::min<qint64>(100, step * 100 / maxSteps));
    } else {
        parts << tr("step %1").arg(step);
    }
    if (std::isfinite(perStep) && step >= 0)
        parts << tr("%1 s/step").arg(perStep, 0, 'g', 3);
    if (!final && maxSteps > step && step >= 0 && std::isfinite(perStep))
        parts << tr("ETA %1").arg(formatDuration(double(maxSteps - step) * perStep));
    m_progress->setText(parts.join(QStringLiteral(" · ")));
    m_bar->setVisible(maxSteps > 0 && step >= 0);
    m_bar->setValue(maxSteps > 0 ? int(std::clamp<qint64>(step * 1000 / maxSteps, 0, 1000)) : 0);
    m_stateChip->setText(stateText());
    m_stateChip->setStyleSheet(chipStyle(state));
    m_stateChip->setToolTip(m_stateDetail);
    m_stateChip->setVisible(!state.isEmpty());

    if (changed || (state == QLatin1String(rundir::state::Failed) && !m_card->isVisibleTo(this)))
        updateTriage();
    if (changed) {
        // A fine-tuning run that succeeded offers what it wrote to the Playground.
        m_output = state == QLatin1String(rundir::state::Succeeded) ? fineTunedOutput(m_directory) : RunOutput();
        m_playground->setVisible(!m_output.isEmpty());
        m_playground->setToolTip(
            m_output.adapter.isEmpty()
                ? tr("Load %1 in the Playground").arg(QDir::toNativeSeparators(m_output.model))
                : tr("Load %1 with the LoRA adapter %2 in the Playground")
                      .arg(QDir::toNativeSeparators(m_output.model), QDir::toNativeSeparators(m_output.adapter)));
    }

    const bool showHint = !hasStepMetrics() && (final || store->ranks().contains(0));
    m_hint->setText(hintText());
    m_hint->setVisible(showHint);
}

QString RunStatusPanel::stateText() const
{
    if (m_state == QLatin1String(rundir::state::Stopped))
        return m_stateDetail.isEmpty() ? tr("Stopped") : tr("Stopped: %1").arg(m_stateDetail);
    if (m_state == QLatin1String(rundir::state::Failed))
        return m_stateDetail.isEmpty() ? tr("Failed") : tr("Failed: %1").arg(m_stateDetail);
    if (m_state.isEmpty())
        return {};
    return m_state.left(1).toUpper() + m_state.mid(1);
}

QString RunStatusPanel::progressText() const
{
    return m_progress->text();
}

bool RunStatusPanel::isTriageShown() const
{
    return m_card->isVisibleTo(this);
}

bool RunStatusPanel::isHintShown() const
{
    return m_hint->isVisibleTo(this);
}

QString RunStatusPanel::hintText() const
{
    const QString tracker = trackerPath();
    return tr("No training metrics from this run (yet), so only CPU and memory are plotted. To plot loss and more, log "
              "them from the script: from accel_studio_tracker import log; log({\"loss\": loss.item()}, step=step)%1")
        .arg(tracker.isEmpty()
                 ? QString()
                 : tr(" (put %1 beside the script or on PYTHONPATH)").arg(QDir::toNativeSeparators(tracker)));
}

void RunStatusPanel::updateTriage()
{
    if (!m_run || m_state != QLatin1String(rundir::state::Failed)) {
        m_card->setVisible(false);
        return;
    }
    const auto *logs = m_run->logModel();
    QList<TriageLogLine> lines;
    lines.reserve(logs->rowCount());
    for (int row = 0; row < logs->rowCount(); ++row) {
        lines.append({logs->index(row, monitor::LogModel::RankColumn).data(monitor::LogModel::RankRole).toInt(),
                      logs->index(row, monitor::LogModel::TextColumn).data().toString()});
    }
    m_triage = triageFailure(lines, m_stateDetail, m_run->manifest().value(QStringLiteral("failed_rank")).toInt(-1));
    m_cardTitle->setText(m_triage.title);
    m_cardError->setText(m_triage.errorLine);
    m_cardError->setVisible(!m_triage.errorLine.isEmpty());
    m_cardCause->setText(tr("Likely cause: %1\nFix: %2").arg(m_triage.cause, m_triage.fix));
    m_card->setVisible(true);
}

} // namespace accel::app
