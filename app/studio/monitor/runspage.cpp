#include "app/studio/monitor/runspage.h"

#include "app/studio/monitor/monitorpage.h"
#include "launcher/rundirectory.h"

#include <QAction>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardPaths>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
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
    m_listToggle = new QPushButton(tr("Hide list"), this);
    m_listToggle->setObjectName(QStringLiteral("runListToggle"));
    m_listToggle->setToolTip(tr("Hide the run list so the charts take the page (the selection stays)"));
    bar->addWidget(m_listToggle);
    m_compare = new QToolButton(this);
    m_compare->setText(tr("Compare with…"));
    m_compare->setObjectName(QStringLiteral("compareRuns"));
    m_compare->setToolTip(tr("Overlay another run on the charts (or select several runs in the list)"));
    m_compare->setPopupMode(QToolButton::InstantPopup);
    m_compare->setMenu(new QMenu(m_compare));
    bar->addWidget(m_compare);
    m_refresh = new QPushButton(tr("Refresh"), this);
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setToolTip(tr("accel stop: SIGINT, then SIGTERM, then SIGKILL to the run's supervisor"));
    bar->addWidget(m_refresh);
    bar->addWidget(m_stop);
    layout->addLayout(bar);

    auto *splitter = new QSplitter(Qt::Vertical, this);
    m_splitter = splitter;
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
    // The list gets a few rows; the charts the rest (the list collapses by dragging or "Hide list").
    m_view->setMinimumHeight(0);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({m_view->verticalHeader()->defaultSectionSize() * 5, 10000});
    layout->addWidget(splitter, 1);
    connect(m_listToggle, &QPushButton::clicked, this, [this] { setRunListVisible(!isRunListVisible()); });
    connect(splitter, &QSplitter::splitterMoved, this,
            [this] { m_listToggle->setText(isRunListVisible() ? tr("Hide list") : tr("Show list")); });

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
    connect(m_compare->menu(), &QMenu::aboutToShow, this, &RunsPage::fillCompareMenu);

    m_accel = launcher::AccelCommand::defaultProgram();
    setRunsRoot(launcher::RunDirectory::defaultRunsRoot());
}

// An `accel stop` still running is ended with its process group by AccelCommand's destructor.
RunsPage::~RunsPage() = default;

void RunsPage::setRunListVisible(bool visible)
{
    const QList<int> sizes = m_splitter->sizes();
    const int total = sizes.value(0) + sizes.value(1);
    m_view->setVisible(visible);
    if (visible) {
        const int list = std::max(m_view->verticalHeader()->defaultSectionSize() * 5, total / 5);
        m_splitter->setSizes({list, std::max(0, total - list)});
    }
    m_listToggle->setText(visible ? tr("Hide list") : tr("Show list"));
}

bool RunsPage::isRunListVisible() const
{
    // Hidden with the button, or collapsed by dragging the splitter.
    return !m_view->isHidden() && (!m_splitter->isVisible() || m_splitter->sizes().value(0) > 0);
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

QStringList RunsPage::compareCandidates() const
{
    const QStringList selected = selectedRuns();
    QStringList out;
    for (int row = 0; row < m_sorted->rowCount(); ++row) {
        const QString path = m_sorted->index(row, 0).data(monitor::RunsModel::PathRole).toString();
        if (!selected.contains(path))
            out.append(path);
    }
    return out;
}

bool RunsPage::compareWith(const QString &runDirectory)
{
    const int sourceRow = m_model.rowOf(QFileInfo(runDirectory).fileName());
    if (sourceRow < 0)
        return false;
    const QModelIndex index = m_sorted->mapFromSource(m_model.index(sourceRow, 0));
    m_autoSelected = true;
    m_view->selectionModel()->select(index, QItemSelectionModel::Select | QItemSelectionModel::Rows);
    return true;
}

void RunsPage::fillCompareMenu()
{
    QMenu *menu = m_compare->menu();
    menu->clear();
    for (const QString &path : compareCandidates()) {
        const int sourceRow = m_model.rowOf(QFileInfo(path).fileName());
        const QString name = m_model.index(sourceRow, monitor::RunsModel::NameColumn).data().toString();
        const QString id = QFileInfo(path).fileName();
        QAction *action = menu->addAction(name.isEmpty() || name == id ? id : tr("%1 (%2)").arg(name, id));
        connect(action, &QAction::triggered, this, [this, path] { compareWith(path); });
    }
    if (menu->isEmpty())
        menu->addAction(tr("No other runs"))->setEnabled(false);
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
    auto *command = new launcher::AccelCommand(this);
    m_process = command;
    command->setProgram(m_accel);
    const QString run = m_stopping;
    // done() comes exactly once, also when `accel` cannot start, so the queue always moves on.
    connect(command, &launcher::AccelCommand::done, this, [this, command, run](const launcher::AccelOutcome &outcome) {
        QString output = QString::fromLocal8Bit(outcome.standardOutput + outcome.standardError).trimmed();
        if (outcome.failedToStart)
            output = tr("cannot start %1: %2").arg(m_accel, outcome.error);
        const int code = outcome.failedToStart ? -1 : outcome.shellCode();
        Q_EMIT statusMessage(code == 0 ? tr("Stopped %1").arg(QFileInfo(run).fileName())
                                       : tr("accel stop %1 failed: %2").arg(QFileInfo(run).fileName(), output));
        Q_EMIT stopFinished(run, code, output);
        command->deleteLater();
        m_process = nullptr;
        m_model.refresh();
        startNextStop();
    });
    Q_EMIT statusMessage(tr("Stopping %1…").arg(QFileInfo(run).fileName()));
    command->start({QStringLiteral("stop"), run});
}

} // namespace accel::app
