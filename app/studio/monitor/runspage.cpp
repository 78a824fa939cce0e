#include "app/studio/monitor/runspage.h"

#include "app/studio/monitor/monitorpage.h"
#include "launcher/rundirectory.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardPaths>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace accel::app {

RunsPage::RunsPage(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    auto *bar = new QHBoxLayout;
    auto *title = new QLabel(tr("Runs"), this);
    QFont big = title->font();
    big.setPointSizeF(big.pointSizeF() * 1.4);
    big.setBold(true);
    title->setFont(big);
    bar->addWidget(title);
    m_rootLabel = new QLabel(this);
    m_rootLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_rootLabel->setStyleSheet(QStringLiteral("color: palette(mid);"));
    m_rootLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // long paths never widen the window
    bar->addWidget(m_rootLabel, 1);
    m_refresh = new QPushButton(tr("Refresh"), this);
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setToolTip(tr("accel stop: SIGINT, then SIGTERM, then SIGKILL to the run's supervisor"));
    bar->addWidget(m_refresh);
    bar->addWidget(m_stop);
    layout->addLayout(bar);

    auto *splitter = new QSplitter(Qt::Vertical, this);
    m_view = new QTableView(splitter);
    m_sorted = new QSortFilterProxyModel(this);
    m_sorted->setSourceModel(&m_model);
    m_sorted->setSortRole(monitor::RunsModel::SortRole);
    m_view->setModel(m_sorted);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(monitor::RunsModel::StartedColumn, Qt::DescendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->verticalHeader()->setVisible(false);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setAlternatingRowColors(true);
    m_monitor = new MonitorPage(splitter);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 4);
    layout->addWidget(splitter, 1);

    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsPage::onSelectionChanged);
    connect(m_refresh, &QPushButton::clicked, &m_model, &monitor::RunsModel::refresh);
    connect(m_stop, &QPushButton::clicked, this, &RunsPage::stopSelected);
    connect(&m_model, &QAbstractItemModel::dataChanged, this, &RunsPage::updateButtons);
    connect(&m_model, &QAbstractItemModel::rowsInserted, this, [this] {
        m_view->resizeColumnsToContents();
        // Later, once every row of this refresh is in (and sorted), not on its first row.
        QTimer::singleShot(0, this, &RunsPage::selectNewestOnce);
    });
    connect(m_monitor, &MonitorPage::statusMessage, this, &RunsPage::statusMessage);

    const QString besideUs = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("accel"));
    m_accel = QFileInfo(besideUs).isExecutable() ? besideUs : QStringLiteral("accel");
    setRunsRoot(launcher::RunDirectory::defaultRunsRoot());
}

RunsPage::~RunsPage()
{
    if (m_process) {
        m_process->disconnect(this);
        m_process->waitForFinished(2000); // accel stop is short; never leave it orphaned
    }
}

void RunsPage::setRunsRoot(const QString &root)
{
    m_autoSelected = false;
    m_monitor->setRuns({});
    m_model.setRunsRoot(root);
    m_rootLabel->setText(QDir::toNativeSeparators(root));
    m_rootLabel->setToolTip(QDir::toNativeSeparators(root));
    m_view->resizeColumnsToContents();
    selectNewestOnce();
    updateButtons();
}

void RunsPage::selectNewestOnce()
{
    if (m_autoSelected || m_sorted->rowCount() == 0)
        return;
    m_autoSelected = true;
    if (!m_view->selectionModel()->hasSelection())
        m_view->selectRow(0);
}

QStringList RunsPage::selectedRuns() const
{
    QStringList out;
    const auto rows = m_view->selectionModel()->selectedRows();
    QList<int> order;
    for (const auto &index : rows)
        order.append(index.row());
    std::sort(order.begin(), order.end());
    for (int row : order)
        out.append(m_sorted->index(row, 0).data(monitor::RunsModel::PathRole).toString());
    return out;
}

void RunsPage::selectRuns(const QStringList &runDirectories)
{
    QItemSelection selection;
    for (const QString &dir : runDirectories) {
        const int sourceRow = m_model.rowOf(QFileInfo(dir).fileName());
        if (sourceRow < 0)
            continue;
        const QModelIndex index = m_sorted->mapFromSource(m_model.index(sourceRow, 0));
        selection.select(index, index.siblingAtColumn(monitor::RunsModel::ColumnCount - 1));
    }
    m_autoSelected = true;
    m_view->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

void RunsPage::onSelectionChanged()
{
    m_monitor->setRuns(selectedRuns());
    updateButtons();
}

void RunsPage::updateButtons()
{
    bool anyLive = false;
    for (const auto &index : m_view->selectionModel()->selectedRows()) {
        const QString state = index.data(monitor::RunsModel::StateRole).toString();
        anyLive = anyLive || !launcher::runstate::isFinal(state);
    }
    m_stop->setEnabled(anyLive && !isStopping());
}

bool RunsPage::stopSelected()
{
    bool queued = false;
    for (const auto &index : m_view->selectionModel()->selectedRows()) {
        if (launcher::runstate::isFinal(index.data(monitor::RunsModel::StateRole).toString()))
            continue;
        const QString path = index.data(monitor::RunsModel::PathRole).toString();
        if (!m_stopQueue.contains(path) && path != m_stopping) {
            m_stopQueue.append(path);
            queued = true;
        }
    }
    if (queued && !m_process)
        startNextStop();
    updateButtons();
    return queued;
}

void RunsPage::startNextStop()
{
    if (m_stopQueue.isEmpty()) {
        m_stopping.clear();
        updateButtons();
        return;
    }
    m_stopping = m_stopQueue.takeFirst();
    auto *process = new QProcess(this);
    m_process = process;
    process->setProcessChannelMode(QProcess::MergedChannels);
    const QString run = m_stopping;
    connect(process, &QProcess::finished, this, [this, process, run](int exitCode, QProcess::ExitStatus status) {
        const QString output = QString::fromLocal8Bit(process->readAll()).trimmed();
        const int code = status == QProcess::NormalExit ? exitCode : -1;
        Q_EMIT statusMessage(code == 0 ? tr("Stopped %1").arg(QFileInfo(run).fileName())
                                       : tr("accel stop %1 failed: %2").arg(QFileInfo(run).fileName(), output));
        Q_EMIT stopFinished(run, code, output);
        process->deleteLater();
        m_process = nullptr;
        m_model.refresh();
        startNextStop();
    });
    connect(process, &QProcess::errorOccurred, this, [this, process, run](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart)
            return;
        const QString message = tr("cannot start %1: %2").arg(m_accel, process->errorString());
        Q_EMIT statusMessage(tr("accel stop %1 failed: %2").arg(QFileInfo(run).fileName(), message));
        Q_EMIT stopFinished(run, -1, message);
        process->deleteLater();
        m_process = nullptr;
        startNextStop();
    });
    Q_EMIT statusMessage(tr("Stopping %1…").arg(QFileInfo(run).fileName()));
    process->start(m_accel, {QStringLiteral("stop"), run});
}

} // namespace accel::app
