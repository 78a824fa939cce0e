#include "app/studio/cluster/slurmqueuepanel.h"

#include "launcher/accelcommand.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

using launcher::slurm::SlurmJob;

namespace {

constexpr int kCommandLimitMs = 180000; // accel's own SSH steps time out long before

QString failureText(const launcher::AccelOutcome &outcome)
{
    const QString err = QString::fromUtf8(outcome.standardError).trimmed();
    return err.isEmpty() ? outcome.describe() : err.section(QLatin1Char('\n'), -2);
}

} // namespace

Result<SlurmQueueView> parseSlurmQueueJson(const QByteArray &json)
{
    QJsonParseError error{};
    const QJsonObject root = QJsonDocument::fromJson(json, &error).object();
    if (error.error != QJsonParseError::NoError ||
        root.value(QStringLiteral("schema")).toString() != QLatin1String("accel.slurm-queue"))
        return makeError(ErrorCode::Failed, "accel slurm queue printed no accel.slurm-queue report");
    if (root.value(QStringLiteral("version")).toInt() != 1)
        return makeError(ErrorCode::Unsupported, "accel.slurm-queue version " +
                                                     std::to_string(root.value(QStringLiteral("version")).toInt()) +
                                                     " is newer than this studio reads (1)");
    SlurmQueueView view;
    view.host = root.value(QStringLiteral("host")).toString();
    view.accountingMessage = root.value(QStringLiteral("accounting_message")).toString();
    for (const QJsonValue &value : root.value(QStringLiteral("jobs")).toArray()) {
        const QJsonObject o = value.toObject();
        SlurmJob job;
        job.id = o.value(QStringLiteral("id")).toString();
        job.name = o.value(QStringLiteral("name")).toString();
        job.state = o.value(QStringLiteral("state")).toString();
        job.elapsed = o.value(QStringLiteral("elapsed")).toString();
        job.elapsedSeconds = static_cast<qint64>(o.value(QStringLiteral("elapsed_seconds")).toDouble(-1));
        job.nodes = o.value(QStringLiteral("nodes")).toInt();
        job.reason = o.value(QStringLiteral("reason")).toString();
        job.nodeList = o.value(QStringLiteral("node_list")).toString();
        job.workDir = o.value(QStringLiteral("work_dir")).toString();
        job.partition = o.value(QStringLiteral("partition")).toString();
        job.source = o.value(QStringLiteral("source")).toString();
        view.jobs << job;
    }
    return view;
}

SlurmQueuePanel::SlurmQueuePanel(QWidget *parent) : QGroupBox(tr("SLURM queue"), parent)
{
    setObjectName(QStringLiteral("slurmQueuePanel"));
    m_accel = launcher::AccelCommand::defaultProgram();
    m_host = std::make_unique<launcher::LocalHost>(m_accel);
    auto *layout = new QVBoxLayout(this);
    auto *bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Login node:"), this));
    m_hostEdit = new QLineEdit(this);
    m_hostEdit->setObjectName(QStringLiteral("slurmLoginHost"));
    m_hostEdit->setPlaceholderText(tr("login1 (~/.ssh/config alias or [user@]host[:port])"));
    bar->addWidget(m_hostEdit, 1);
    m_refreshButton = new QPushButton(tr("Refresh"), this);
    m_refreshButton->setObjectName(QStringLiteral("slurmRefresh"));
    m_refreshButton->setToolTip(tr("accel slurm queue: squeue, and sacct for the jobs that ended"));
    m_cancelButton = new QPushButton(tr("Cancel job"), this);
    m_cancelButton->setObjectName(QStringLiteral("slurmCancel"));
    m_cancelButton->setToolTip(tr("accel slurm cancel: scancel the selected job"));
    bar->addWidget(m_refreshButton);
    bar->addWidget(m_cancelButton);
    layout->addLayout(bar);
    m_state = new QLabel(tr("Jobs submitted with accel slurm submit (or any of yours) on a SLURM login node."), this);
    m_state->setObjectName(QStringLiteral("slurmState"));
    m_state->setWordWrap(true);
    layout->addWidget(m_state);
    m_table = new QTableWidget(0, 6, this);
    m_table->setObjectName(QStringLiteral("slurmJobs"));
    m_table->setHorizontalHeaderLabels(
        {tr("Job"), tr("Name"), tr("State"), tr("Elapsed"), tr("Nodes"), tr("Reason / nodes")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    m_table->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(m_table);

    connect(m_refreshButton, &QPushButton::clicked, this, &SlurmQueuePanel::refresh);
    connect(m_cancelButton, &QPushButton::clicked, this, &SlurmQueuePanel::cancelSelected);
    connect(m_hostEdit, &QLineEdit::textChanged, this, &SlurmQueuePanel::updateButtons);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &SlurmQueuePanel::updateButtons);
    updateButtons();
}

// A command still running is cancelled with its process group by its destructor.
SlurmQueuePanel::~SlurmQueuePanel() = default;

void SlurmQueuePanel::setAccelProgram(const QString &program)
{
    m_accel = program;
    m_host = std::make_unique<launcher::LocalHost>(program);
}

void SlurmQueuePanel::setLoginHost(const QString &host)
{
    m_hostEdit->setText(host);
}

QString SlurmQueuePanel::loginHost() const
{
    return m_hostEdit->text().trimmed();
}

QString SlurmQueuePanel::stateText() const
{
    return m_state->text();
}

bool SlurmQueuePanel::start(const QStringList &arguments, Handler handler)
{
    if (isBusy()) {
        m_state->setText(tr("accel slurm is still running."));
        return false;
    }
    if (loginHost().isEmpty()) {
        m_state->setText(tr("Give the cluster's login node first."));
        return false;
    }
    QStringList words = arguments;
    words << QStringLiteral("--host") << loginHost() << QStringLiteral("--json");
    for (const QString &entry : m_remoteEnvironment)
        words << QStringLiteral("--remote_env") << entry;
    launcher::HostCommandOptions options;
    options.timeoutMs = kCommandLimitMs;
    m_command = m_host->start(words, options);
    connect(m_command.get(), &launcher::HostCommand::done, this, handler);
    m_state->setText(tr("Running accel %1 on %2...").arg(arguments.join(QLatin1Char(' ')), loginHost()));
    updateButtons();
    return true;
}

bool SlurmQueuePanel::refresh()
{
    return start({QStringLiteral("slurm"), QStringLiteral("queue")}, &SlurmQueuePanel::onQueueDone);
}

bool SlurmQueuePanel::cancelSelected()
{
    const SlurmJob *job = selectedJob();
    if (!job || launcher::slurm::isFinalState(job->state)) {
        m_state->setText(tr("Select a job that has not ended."));
        return false;
    }
    return start({QStringLiteral("slurm"), QStringLiteral("cancel"), job->id}, &SlurmQueuePanel::onCancelDone);
}

void SlurmQueuePanel::onQueueDone(const launcher::AccelOutcome &outcome)
{
    m_command.release()->deleteLater();
    auto view = parseSlurmQueueJson(outcome.standardOutput);
    if (!outcome.succeeded() || !view) {
        m_state->setText(
            tr("The queue could not be read: %1")
                .arg(outcome.succeeded() ? QString::fromStdString(view.error().message) : failureText(outcome)));
    } else {
        m_jobs = view->jobs;
        fillTable();
        QString text = tr("%n job(s) on %1.", nullptr, static_cast<int>(m_jobs.size())).arg(view->host);
        if (!view->accountingMessage.isEmpty())
            text += QLatin1Char(' ') + view->accountingMessage;
        m_state->setText(text);
    }
    updateButtons();
    Q_EMIT refreshed();
}

void SlurmQueuePanel::onCancelDone(const launcher::AccelOutcome &outcome)
{
    m_command.release()->deleteLater();
    const QJsonObject answer = QJsonDocument::fromJson(outcome.standardOutput).object();
    if (answer.value(QStringLiteral("schema")).toString() == QLatin1String("accel.slurm-cancel"))
        m_state->setText(tr("Job %1: %2 -> %3.")
                             .arg(answer.value(QStringLiteral("job_id")).toString(),
                                  answer.value(QStringLiteral("state_before")).toString(),
                                  answer.value(QStringLiteral("state")).toString()));
    else
        m_state->setText(tr("Cancelling failed: %1").arg(failureText(outcome)));
    const QString message = m_state->text();
    updateButtons();
    Q_EMIT cancelFinished();
    if (refresh())
        m_state->setText(message); // keep the answer on screen while the queue is read again
}

void SlurmQueuePanel::fillTable()
{
    const QString selected = selectedJob() ? selectedJob()->id : QString();
    m_table->setRowCount(static_cast<int>(m_jobs.size()));
    for (int row = 0; row < m_jobs.size(); ++row) {
        const SlurmJob &job = m_jobs.at(row);
        const bool waits = job.state == QLatin1String("PENDING") || job.nodeList.isEmpty();
        const QStringList cells = {
            job.id, job.name, job.state, job.elapsed, QString::number(job.nodes), waits ? job.reason : job.nodeList};
        for (int column = 0; column < cells.size(); ++column)
            m_table->setItem(row, column, new QTableWidgetItem(cells.at(column)));
        if (job.id == selected)
            m_table->selectRow(row);
    }
    m_table->resizeColumnsToContents();
}

const SlurmJob *SlurmQueuePanel::selectedJob() const
{
    const QList<QTableWidgetItem *> items = m_table->selectedItems();
    if (items.isEmpty())
        return nullptr;
    const int row = items.first()->row();
    return row >= 0 && row < m_jobs.size() ? &m_jobs.at(row) : nullptr;
}

void SlurmQueuePanel::updateButtons()
{
    const SlurmJob *job = selectedJob();
    m_refreshButton->setEnabled(!isBusy() && !loginHost().isEmpty());
    m_cancelButton->setEnabled(!isBusy() && job && !launcher::slurm::isFinalState(job->state));
}

} // namespace accel::app
