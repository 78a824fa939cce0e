#include "app/studio/monitor/rankmemorypanel.h"

#include "app/studio/monitor/axisunits.h"
#include "core/rundir/runlayout.h"
#include "launcher/accelcommand.h"
#include "monitor/runmonitor.h"

#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace accel::app {

namespace {

const char *const kMetricNames[] = {"mem_params_bytes", "mem_grads_bytes", "mem_optim_bytes"};
const char *const kEstimateKeys[] = {"parameters_bytes", "gradients_bytes", "optimizer_state_bytes", "total_bytes"};

} // namespace

RankMemoryPanel::RankMemoryPanel(QWidget *parent) : QWidget(parent)
{
    m_program = launcher::AccelCommand::defaultProgram();
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("rankMemoryNote"));
    m_note->setWordWrap(true);
    layout->addWidget(m_note);
    m_table = new QTableWidget(0, KindCount, this);
    m_table->setObjectName(QStringLiteral("rankMemoryTable"));
    m_table->setHorizontalHeaderLabels({tr("Parameters"), tr("Gradients"), tr("Optimizer state"), tr("Total")});
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    layout->addWidget(m_table);
}

RankMemoryPanel::~RankMemoryPanel() = default;

void RankMemoryPanel::setRun(monitor::RunMonitor *run, const QString &runDirectory)
{
    if (m_run == run && m_directory == runDirectory)
        return;
    if (m_run)
        disconnect(m_run->store(), nullptr, this, nullptr);
    if (m_command)
        m_command->deleteLater(); // its answer belongs to the previous run
    m_command = nullptr;
    m_run = run;
    m_directory = runDirectory;
    m_predicted.fill(-1);
    m_note->clear();
    if (m_run) {
        connect(m_run->store(), &monitor::MetricStore::samplesAppended, this, &RankMemoryPanel::refresh);
        connect(m_run->store(), &monitor::MetricStore::cleared, this, &RankMemoryPanel::refresh);
        connect(m_run, &monitor::RunMonitor::manifestChanged, this, [this] {
            if (m_predicted[Total] < 0 && !m_command)
                predict();
        });
        predict();
    }
    refresh();
}

double RankMemoryPanel::measured(int rank, Kind kind) const
{
    if (!m_run)
        return -1;
    double sum = 0;
    for (int k = Parameters; k <= OptimizerState; ++k) {
        if (kind != Total && k != kind)
            continue;
        const double value = m_run->store()->lastValue(rank, QLatin1String(kMetricNames[k]));
        if (std::isnan(value))
            return -1;
        sum += value;
    }
    return sum;
}

QString RankMemoryPanel::predictionNote() const
{
    return m_note->text();
}

void RankMemoryPanel::refresh()
{
    QList<int> ranks;
    if (m_run) {
        for (int rank : m_run->store()->ranks()) {
            if (rank >= 0 && measured(rank, Total) >= 0)
                ranks.append(rank);
        }
    }
    m_table->setVisible(!ranks.isEmpty());
    m_table->setRowCount(int(ranks.size()));
    for (int row = 0; row < ranks.size(); ++row) {
        m_table->setVerticalHeaderItem(row, new QTableWidgetItem(tr("rank %1").arg(ranks[row])));
        for (int kind = 0; kind < KindCount; ++kind) {
            const double value = measured(ranks[row], Kind(kind));
            const double expected = m_predicted[kind];
            QString text = formatBytes(value);
            if (expected >= 0)
                text += tr(" (predicted %1)").arg(formatBytes(expected));
            auto *item = new QTableWidgetItem(text);
            item->setToolTip(tr("%1 bytes measured%2")
                                 .arg(qint64(value))
                                 .arg(expected >= 0 ? tr(", %1 predicted").arg(qint64(expected)) : QString()));
            m_table->setItem(row, kind, item);
        }
    }
}

// The prediction for a native job of the run (job.yaml) under the settings its ranks were started
// with (run.json's launch plan), with or without a config file.
void RankMemoryPanel::predict()
{
    const QDir dir(m_directory);
    const QString job = dir.filePath(QLatin1String(rundir::file::Job));
    const int processes = m_run ? m_run->manifest()
                                      .value(QStringLiteral("settings"))
                                      .toObject()
                                      .value(QStringLiteral("num_processes"))
                                      .toInt()
                                : 0;
    if (m_run && processes <= 0 && QFileInfo::exists(job)) {
        m_note->setText(tr("Measured by each rank; the prediction waits for the run's manifest (run.json)."));
        return; // manifestChanged asks again
    }
    if (!QFileInfo::exists(job) || processes <= 0) {
        m_note->setText(tr("Measured by each rank of the native runtime. No prediction: the run has no job.yaml "
                           "(a built-in recipe's run has one)."));
        Q_EMIT predictionChanged();
        return;
    }
    m_note->setText(tr("Measured by each rank; predicting..."));
    m_command = new launcher::AccelCommand(this);
    m_command->setProgram(m_program);
    m_command->setTimeout(30000);
    auto *command = m_command.data();
    connect(command, &launcher::AccelCommand::done, this, [this, command](const launcher::AccelOutcome &outcome) {
        command->deleteLater();
        if (command != m_command)
            return; // asked for a run no longer shown
        const QJsonObject answer = QJsonDocument::fromJson(outcome.standardOutput).object();
        const QJsonObject perRank = answer.value(QStringLiteral("per_rank_training")).toObject();
        const QJsonObject row = perRank.value(QStringLiteral("rows")).toArray().first().toObject();
        if (!outcome.succeeded() || row.isEmpty()) {
            m_note->setText(tr("Measured by each rank. No prediction: %1")
                                .arg(outcome.standardError.trimmed().isEmpty()
                                         ? outcome.describe()
                                         : QString::fromUtf8(outcome.standardError.trimmed())));
        } else {
            for (int kind = 0; kind < KindCount; ++kind)
                m_predicted[kind] = row.value(QLatin1String(kEstimateKeys[kind])).toDouble();
            m_note->setText(tr("Measured by each rank, predicted by accel estimate-memory for %1 parameters (%2):\n%3")
                                .arg(qint64(answer.value(QStringLiteral("parameters")).toDouble()))
                                .arg(answer.value(QStringLiteral("shape")).toString(),
                                     perRank.value(QStringLiteral("strategy")).toString()));
            refresh();
        }
        Q_EMIT predictionChanged();
    });
    command->start(
        {QStringLiteral("estimate-memory"), job, QStringLiteral("--run"), m_directory, QStringLiteral("--json")});
}

} // namespace accel::app
