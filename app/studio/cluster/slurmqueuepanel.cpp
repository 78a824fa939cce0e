#include "app/studio/cluster/slurmqueuepanel.h"

#include "launcher/accelcommand.h"
#include "launcher/jsonoutput.h"
#include "monitor/tailstream.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

using launcher::slurm::SlurmJob;

namespace {

constexpr int kCommandLimitMs = 180000; // accel's own SSH steps time out long before
enum Column { JobColumn, NameColumn, StateColumn, ElapsedColumn, NodesColumn, ReasonColumn, FollowColumn, Columns };

QString failureText(const launcher::AccelOutcome &outcome)
{
    const QString err = QString::fromUtf8(outcome.standardError).trimmed();
    return err.isEmpty() ? outcome.describe() : err.section(QLatin1Char('\n'), -2);
}

} // namespace

// A job whose run directory is awaited: `accel slurm follow` runs until its stream starts.
struct SlurmQueuePanel::Follow {
    std::unique_ptr<launcher::HostCommand> command;
    QString host;
    QString name; // "<job name> (job <id>)"
    bool multiNode = false;
    QByteArray output;
    QByteArray errors;
    bool found = false;
};

Result<SlurmQueueView> parseSlurmQueueJson(const QByteArray &json)
{
    QJsonParseError error{};
    const QJsonObject root = QJsonDocument::fromJson(json, &error).object();
    if (error.error != QJsonParseError::NoError ||
        root.value(QStringLiteral("schema")).toString() != QLatin1String(launcher::SlurmQueueSchema))
        return makeError(ErrorCode::Failed,
                         std::string("accel slurm queue printed no ") + launcher::SlurmQueueSchema + " report");
    if (root.value(QStringLiteral("version")).toInt() != launcher::SlurmQueueVersion)
        return makeError(ErrorCode::Unsupported, std::string(launcher::SlurmQueueSchema) + " version " +
                                                     std::to_string(root.value(QStringLiteral("version")).toInt()) +
                                                     " is newer than this studio reads (" +
                                                     std::to_string(launcher::SlurmQueueVersion) + ")");
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
    m_followButton = new QPushButton(tr("Follow"), this);
    m_followButton->setObjectName(QStringLiteral("slurmFollow"));
    m_followButton->setToolTip(tr("Follow the selected job's run in the Runs page (once its run directory is there)"));
    bar->addWidget(m_refreshButton);
    bar->addWidget(m_followButton);
    bar->addWidget(m_cancelButton);
    layout->addLayout(bar);
    m_state = new QLabel(tr("Jobs submitted with accel slurm submit (or any of yours) on a SLURM login node."), this);
    m_state->setObjectName(QStringLiteral("slurmState"));
    m_state->setWordWrap(true);
    layout->addWidget(m_state);
    m_table = new QTableWidget(0, Columns, this);
    m_table->setObjectName(QStringLiteral("slurmJobs"));
    m_table->setHorizontalHeaderLabels(
        {tr("Job"), tr("Name"), tr("State"), tr("Elapsed"), tr("Nodes"), tr("Reason / nodes"), tr("Follow")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    m_table->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(m_table);

    connect(m_refreshButton, &QPushButton::clicked, this, &SlurmQueuePanel::refresh);
    connect(m_cancelButton, &QPushButton::clicked, this, &SlurmQueuePanel::cancelSelected);
    connect(m_followButton, &QPushButton::clicked, this, &SlurmQueuePanel::followSelected);
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

bool SlurmQueuePanel::canFollow(const SlurmJob &job)
{
    // A job that ended without ever starting has nothing to follow (sacct: "None assigned").
    const bool started =
        job.elapsedSeconds > 0 || (!job.nodeList.isEmpty() && job.nodeList != QLatin1String("None assigned"));
    return !job.workDir.isEmpty() && (!launcher::slurm::isFinalState(job.state) || started);
}

QString SlurmQueuePanel::followNote(const QString &jobId) const
{
    return m_followNotes.value(jobId);
}

bool SlurmQueuePanel::followSelected()
{
    const SlurmJob *job = selectedJob();
    if (!job || !canFollow(*job)) {
        m_state->setText(tr("Select a job that has started or waits to start (with a working directory)."));
        return false;
    }
    if (loginHost().isEmpty()) {
        m_state->setText(tr("Give the cluster's login node first."));
        return false;
    }
    if (m_follows.count(job->id) > 0) {
        m_state->setText(tr("Job %1: its run directory is awaited already.").arg(job->id));
        return false;
    }
    const QString jobId = job->id;
    // The queue is looked at every 2 s (follow's default) while the job waits, as the CLI does.
    QStringList words{QStringLiteral("slurm"),  QStringLiteral("follow"),  QStringLiteral("--host"), loginHost(), jobId,
                      QStringLiteral("--json"), QStringLiteral("--events")};
    for (const QString &entry : m_remoteEnvironment)
        words << QStringLiteral("--remote_env") << entry;
    launcher::HostCommandOptions options;
    options.keepOutput = false; // read as it comes; the job may wait in the queue for hours
    auto follow = std::make_unique<Follow>();
    follow->host = loginHost();
    follow->name = tr("%1 (job %2)").arg(job->name, jobId);
    follow->multiNode = job->nodes > 1;
    follow->command = m_host->start(words, options);
    connect(follow->command.get(), &launcher::HostCommand::outputReceived, this,
            [this, jobId](const QByteArray &out, const QByteArray &err) { onFollowOutput(jobId, out, err); });
    connect(follow->command.get(), &launcher::HostCommand::done, this,
            [this, jobId](const launcher::AccelOutcome &outcome) { onFollowDone(jobId, outcome); });
    m_follows[jobId] = std::move(follow);
    setFollowNote(jobId, tr("waiting for its run directory…"));
    m_state->setText(tr("Job %1: waiting for its run directory on %2; it is followed in Runs once it is there.")
                         .arg(jobId, loginHost()));
    updateButtons();
    return true;
}

void SlurmQueuePanel::onFollowOutput(const QString &jobId, const QByteArray &standardOutput,
                                     const QByteArray &standardError)
{
    auto it = m_follows.find(jobId);
    if (it == m_follows.end() || it->second->found)
        return;
    Follow &follow = *it->second;
    follow.errors += standardError;
    // While the job waits: "job 12 is PENDING (Priority); waiting for DIR/run.json".
    const QList<QByteArray> lines = follow.errors.split('\n');
    for (qsizetype i = lines.size() - 2; i >= 0; --i) {
        if (lines.at(i).startsWith("job ") && lines.at(i).contains("waiting for")) {
            setFollowNote(jobId, tr("waiting for its run directory: %1").arg(QString::fromUtf8(lines.at(i))));
            break;
        }
    }
    follow.output += standardOutput;
    const qsizetype newline = follow.output.indexOf('\n');
    if (newline < 0)
        return;
    // The accel.tail stream's first line: the run directory (or the folder of the nodes') is there.
    const QJsonObject header = QJsonDocument::fromJson(follow.output.left(newline)).object();
    const QString runDirectory = header.value(QStringLiteral("run")).toString();
    if (header.value(QStringLiteral("schema")).toString() != QLatin1String(monitor::TailSchema) ||
        runDirectory.isEmpty()) {
        follow.found = true; // not a stream: the end says why
        setFollowNote(jobId, tr("accel slurm follow printed no %1 stream").arg(QLatin1String(monitor::TailSchema)));
        follow.command->cancel();
        return;
    }
    follow.found = true;
    setFollowNote(jobId, tr("followed in Runs: %1").arg(runDirectory));
    m_state->setText(tr("Job %1: following %2 on %3 in Runs.").arg(jobId, runDirectory, follow.host));
    const QString host = follow.host, name = follow.name;
    const bool multiNode = follow.multiNode;
    follow.command->cancel(); // the Runs page follows the run itself (accel tail over SSH)
    Q_EMIT followRequested(host, runDirectory, name, multiNode);
}

void SlurmQueuePanel::onFollowDone(const QString &jobId, const launcher::AccelOutcome &outcome)
{
    auto it = m_follows.find(jobId);
    if (it == m_follows.end())
        return;
    const std::unique_ptr<Follow> follow = std::move(it->second);
    m_follows.erase(it);
    follow->command.release()->deleteLater(); // it is emitting this signal
    if (!follow->found) {
        // E.g. "job 12 ended (FAILED) without a run directory at DIR: see slurm-12.out ...".
        QString message = QString::fromUtf8(follow->errors).trimmed().section(QLatin1Char('\n'), -1);
        if (message.isEmpty() || outcome.failedToStart || outcome.timedOut)
            message = outcome.error.isEmpty() ? outcome.describe() : outcome.error;
        message.remove(QRegularExpression(QStringLiteral("^accel slurm follow: ")));
        setFollowNote(jobId, tr("not followed: %1").arg(message));
        m_state->setText(tr("Job %1 cannot be followed: %2").arg(jobId, message));
        Q_EMIT followFailed(jobId, message);
    }
    updateButtons();
}

void SlurmQueuePanel::setFollowNote(const QString &jobId, const QString &note)
{
    m_followNotes.insert(jobId, note);
    for (int row = 0; row < m_table->rowCount(); ++row) {
        if (m_table->item(row, JobColumn) && m_table->item(row, JobColumn)->text() == jobId) {
            m_table->setItem(row, FollowColumn, new QTableWidgetItem(note));
            m_table->item(row, FollowColumn)->setToolTip(note);
        }
    }
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
    if (answer.value(QStringLiteral("schema")).toString() == QLatin1String(launcher::SlurmCancelSchema))
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
        const QStringList cells = {job.id,
                                   job.name,
                                   job.state,
                                   job.elapsed,
                                   QString::number(job.nodes),
                                   waits ? job.reason : job.nodeList,
                                   m_followNotes.value(job.id)};
        for (int column = 0; column < cells.size(); ++column)
            m_table->setItem(row, column, new QTableWidgetItem(cells.at(column)));
        m_table->item(row, FollowColumn)->setToolTip(cells.at(FollowColumn));
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
    m_followButton->setEnabled(job && canFollow(*job) && m_follows.count(job->id) == 0 && !loginHost().isEmpty());
}

} // namespace accel::app
