#include "app/studio/monitor/runspage.h"

#include "app/studio/cluster/hostlist.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/remotehosts.h"
#include "app/studio/monitor/runactions.h"
#include "app/studio/monitor/runscolumns.h"
#include "app/studio/monitor/runsfilter.h"
#include "app/studio/monitor/stackdialog.h"
#include "launcher/accelcommand.h"
#include "launcher/clusterrecord.h"
#include "launcher/host.h"
#include "launcher/rundirectory.h"
#include "monitor/noderuns.h"
#include "monitor/runcatalogue.h"

#include <QAction>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
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
    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("runsFilter"));
    m_filter->setPlaceholderText(tr("Filter: words, tag:NAME, lr>1e-4, recipe=gpt"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setToolTip(tr("Runs whose id, name, state, tags, notes or hyperparameters hold every word; "
                            "tag:NAME; hyperparameters as KEY=VALUE, KEY>NUMBER, KEY<NUMBER (KEY: the full key "
                            "or its last part)"));
    m_filter->setMinimumWidth(160);
    bar->addWidget(m_filter, 1);
    m_diff = new QPushButton(tr("Diff"), this);
    m_diff->setObjectName(QStringLiteral("diffRuns"));
    m_diff->setToolTip(tr("Compare the hyperparameters of the selected runs"));
    bar->addWidget(m_diff);
    m_refresh = new QPushButton(tr("Refresh"), this);
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setToolTip(tr("accel stop: SIGINT, then SIGTERM, then SIGKILL to the run's supervisor"));
    m_stacks = new QPushButton(tr("Stacks"), this);
    m_stacks->setToolTip(tr("accel stack: every rank's stack now, grouped by identical stacks (the hang autopsy)"));
    bar->addWidget(m_refresh);
    bar->addWidget(m_stacks);
    bar->addWidget(m_stop);
    layout->addLayout(bar);
    m_hostsState = new QLabel(this);
    m_hostsState->setObjectName(QStringLiteral("remoteHostsState"));
    m_hostsState->setWordWrap(true);
    m_hostsState->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_hostsState->setVisible(false);
    layout->addWidget(m_hostsState);

    auto *splitter = new QSplitter(Qt::Vertical, this);
    m_splitter = splitter;
    m_view = new QTableView(splitter);
    m_sorted = new RunsFilter(this);
    m_sorted->setSourceModel(&m_model);
    m_view->setModel(m_sorted);
    m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    m_view->horizontalHeader()->setContextMenuPolicy(Qt::CustomContextMenu);
    m_actions = new RunActions(&m_model, this);
    m_columns = new RunsColumns(&m_model, m_view);
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
    connect(m_stacks, &QPushButton::clicked, this, [this] {
        if (const QStringList runs = selectedRuns(); runs.size() == 1)
            captureStacks(runs.first());
    });
    connect(&m_model, &QAbstractItemModel::dataChanged, this, &RunsPage::updateButtons);
    connect(&m_model, &QAbstractItemModel::rowsInserted, this, [this] {
        m_columns->fit();
        // Later, once every row of this refresh is in (and sorted), not on its first row.
        QTimer::singleShot(0, this, &RunsPage::selectNewestOnce);
    });
    connect(m_monitor, &MonitorPage::statusMessage, this, &RunsPage::statusMessage);
    connect(m_compare->menu(), &QMenu::aboutToShow, this, &RunsPage::fillCompareMenu);
    connect(m_actions, &RunActions::statusMessage, this, &RunsPage::statusMessage);
    connect(&m_model, &monitor::RunsModel::editFailed, this, &RunsPage::statusMessage);
    connect(m_filter, &QLineEdit::textChanged, this, [this, filterTip = m_filter->toolTip()](const QString &text) {
        m_sorted->setFilterText(text);
        m_filter->setToolTip(m_sorted->problem().isEmpty() ? filterTip : m_sorted->problem());
        if (!m_sorted->problem().isEmpty())
            Q_EMIT statusMessage(m_sorted->problem());
    });
    connect(m_diff, &QPushButton::clicked, this, [this] { m_actions->showDiff(selectedRuns()); });
    connect(m_view, &QWidget::customContextMenuRequested, this, [this](const QPoint &at) {
        if (m_view->selectionModel()->selectedRows().isEmpty())
            return;
        QMenu *menu = createRunMenu(this);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_view->viewport()->mapToGlobal(at));
    });
    connect(m_view->horizontalHeader(), &QWidget::customContextMenuRequested, this, [this](const QPoint &at) {
        QMenu *menu = createColumnsMenu(this);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_view->horizontalHeader()->mapToGlobal(at));
    });
    connect(&m_model, &QAbstractItemModel::columnsInserted, this, [this] {
        m_columns->update();
        m_columns->fit();
    });
    connect(&m_model, &QAbstractItemModel::rowsInserted, m_columns, &RunsColumns::update);
    connect(&m_model, &QAbstractItemModel::rowsRemoved, m_columns, &RunsColumns::update);
    connect(&m_model, &QAbstractItemModel::dataChanged, this, [this](const QModelIndex &from, const QModelIndex &to) {
        // A row read again (not only its ticking duration): names, notes, hyperparameters.
        if (from.column() <= monitor::RunsModel::NameColumn && to.column() >= monitor::RunsModel::NotesColumn) {
            updateRunNames();
            m_columns->update();
        }
    });

    // Made after the monitor, so destroyed before it: the monitor's followers end their commands
    // on hosts that still exist.
    m_remoteHosts = new RemoteHosts(this);
    m_catalogue = new RemoteCatalogue(m_remoteHosts, this);
    connect(m_catalogue, &RemoteCatalogue::listed, this, &RunsPage::onRemoteListed);
    connect(m_catalogue, &RemoteCatalogue::failed, this, &RunsPage::updateHostsState);
    connect(m_refresh, &QPushButton::clicked, m_catalogue, &RemoteCatalogue::refresh);
    m_monitor->setRemoteHosts(m_remoteHosts);

    m_accel = launcher::AccelCommand::defaultProgram();
    setRunsRoot(launcher::RunDirectory::defaultRunsRoot());
    m_hosts = rememberedHosts();
    reattachClusterRuns();
}

// An `accel stop` still running is ended with its process group by AccelCommand's destructor.
// A listing still running ends (cancelled) when its host goes with the children, after the labels
// it would update: the catalogue's answers are not taken any more.
RunsPage::~RunsPage()
{
    disconnect(m_catalogue, nullptr, this, nullptr);
}

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

void RunsPage::setRunListHeight(int pixels)
{
    const QList<int> sizes = m_splitter->sizes();
    const int total = std::max(sizes.value(0) + sizes.value(1), height());
    m_splitter->setSizes({pixels, std::max(0, total - pixels)});
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
    m_columns->fit();
    selectNewestOnce();
    updateButtons();
}

void RunsPage::selectNewestOnce()
{
    // The newest run of this machine; remote runs are followed when opened or re-attached.
    int newest = -1;
    for (int row = 0; row < m_sorted->rowCount() && newest < 0; ++row) {
        if (m_sorted->index(row, 0).data(monitor::RunsModel::LocationRole).toString().isEmpty())
            newest = row;
    }
    if (m_autoSelected || newest < 0)
        return;
    m_autoSelected = true;
    if (!m_view->selectionModel()->hasSelection())
        m_view->selectRow(newest);
}

int RunsPage::sourceRowOf(const QString &address) const
{
    if (monitor::parseRemoteRunAddress(address))
        return m_model.rowOfAddress(address);
    return m_model.rowOf(QFileInfo(address).fileName());
}

void RunsPage::setRemoteHosts(const QStringList &destinations)
{
    m_hosts = destinations;
    updateSources();
}

void RunsPage::reattachClusterRuns(const QString &directory)
{
    constexpr int kRecords = 20; // the newest launches; older ones are still listed by their hosts
    for (const launcher::ClusterRecord &record : launcher::recentClusterRecords(kRecords, directory)) {
        for (const launcher::ClusterRecordNode &node : record.nodes) {
            if (node.host.isEmpty() || !node.runDir.startsWith(QLatin1Char('/')))
                continue;
            const CatalogueSource source{node.host, QFileInfo(node.runDir).path()};
            if (!m_recordSources.contains(source))
                m_recordSources.append(source);
            m_reattach.insert(monitor::remoteRunAddress(node.host, node.runDir));
        }
    }
    updateSources();
}

void RunsPage::updateSources()
{
    QList<CatalogueSource> sources;
    for (const QString &host : std::as_const(m_hosts))
        sources.append({host, QString()});
    sources += m_recordSources;
    sources += m_followSources;
    for (const QString &address : std::as_const(m_toOpen)) {
        QString host, path;
        if (monitor::parseRemoteRunAddress(address, &host, &path))
            sources.append({host, QFileInfo(path).path()});
    }
    m_catalogue->setSources(sources);
    // Hosts no longer listed: their rows go.
    const QStringList wanted = m_catalogue->destinations();
    for (const QString &location : m_model.remoteLocations()) {
        if (!wanted.contains(location))
            m_model.setRemoteRuns(location, {});
    }
    m_catalogue->refresh();
    updateHostsState();
}

void RunsPage::openRuns(const QStringList &addresses)
{
    QStringList here;
    for (const QString &address : addresses) {
        if (sourceRowOf(address) >= 0)
            here.append(address);
        else if (monitor::parseRemoteRunAddress(address) && !m_toOpen.contains(address))
            m_toOpen.append(address);
    }
    selectRuns(here);
    if (!m_toOpen.isEmpty())
        updateSources();
}

void RunsPage::followRemoteRun(const QString &destination, const QString &path, const QString &name, bool multiNode)
{
    const QString address = monitor::remoteRunAddress(destination, path);
    // A multi-node run's folder is listed for its node<K> runs; one run's folder for its sibling runs.
    const CatalogueSource source{destination, multiNode ? path : QFileInfo(path).path()};
    if (!m_followSources.contains(source))
        m_followSources.append(source);
    if (multiNode)
        m_multiNode.insert(address, name);
    if (sourceRowOf(address) >= 0) {
        m_toFollow.clear();
        selectRuns({address});
    } else {
        m_toFollow = address;
    }
    updateSources();
}

void RunsPage::onRemoteListed(const QString &destination, QList<monitor::RunInfo> runs)
{
    // The node<K> runs of a followed multi-node run's folder make one row, named as given.
    for (auto it = m_multiNode.cbegin(); it != m_multiNode.cend(); ++it) {
        QString host, folder;
        if (!monitor::parseRemoteRunAddress(it.key(), &host, &folder) || host != destination)
            continue;
        QList<monitor::RunInfo> nodes;
        for (qsizetype i = runs.size() - 1; i >= 0; --i) {
            if (QFileInfo(runs.at(i).path).path() == folder && monitor::nodeNumber(runs.at(i).id) >= 0)
                nodes.prepend(runs.takeAt(i));
        }
        if (!nodes.isEmpty())
            runs.append(monitor::combineNodeRuns(folder, it.value(), nodes));
    }
    m_model.setRemoteRuns(destination, runs);
    for (const monitor::RunInfo &info : runs) {
        const QString address = info.address();
        if (address == m_toFollow) {
            m_toFollow.clear();
            selectRuns({address});
        } else if (m_toOpen.removeAll(address) > 0)
            compareWith(address);
        else if (m_reattach.contains(address) && !info.isFinal())
            compareWith(address); // a recorded launch still going: follow it again
    }
    // Recorded runs this host answered for are settled (followed, finished or gone).
    for (auto it = m_reattach.begin(); it != m_reattach.end();) {
        QString host;
        if (monitor::parseRemoteRunAddress(*it, &host) && host == destination)
            it = m_reattach.erase(it);
        else
            ++it;
    }
    updateHostsState();
    updateButtons();
}

void RunsPage::updateHostsState()
{
    QStringList problems;
    for (const QString &destination : m_catalogue->destinations()) {
        const QString problem = m_catalogue->problem(destination);
        if (!problem.isEmpty())
            problems.append(problem);
    }
    m_hostsState->setText(
        problems.isEmpty() ? QString()
                           : tr("Runs of these hosts cannot be listed now:\n%1").arg(problems.join(QLatin1Char('\n'))));
    m_hostsState->setVisible(!problems.isEmpty());
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
        const int sourceRow = sourceRowOf(dir);
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
    const int sourceRow = sourceRowOf(runDirectory);
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
        const int sourceRow = sourceRowOf(path);
        const QString name = m_model.index(sourceRow, monitor::RunsModel::NameColumn).data().toString();
        const QString location = m_model.run(sourceRow).location;
        const QString id =
            location.isEmpty() ? m_model.run(sourceRow).id : tr("%1 on %2").arg(m_model.run(sourceRow).id, location);
        QAction *action = menu->addAction(name.isEmpty() || name == id ? id : tr("%1 (%2)").arg(name, id));
        connect(action, &QAction::triggered, this, [this, path] { compareWith(path); });
    }
    if (menu->isEmpty())
        menu->addAction(tr("No other runs"))->setEnabled(false);
}

void RunsPage::onSelectionChanged()
{
    updateRunNames();
    m_monitor->setRuns(selectedRuns());
    updateButtons();
}

void RunsPage::updateRunNames()
{
    QHash<QString, QString> names;
    for (int row = 0; row < m_model.rowCount(); ++row) {
        const monitor::RunInfo &info = m_model.run(row);
        names.insert(info.address(), info.location.isEmpty() ? info.displayName()
                                                             : tr("%1 on %2").arg(info.displayName(), info.location));
    }
    m_monitor->setRunNames(names);
}

bool RunsPage::isColumnShown(int column) const
{
    return m_columns->isShown(column);
}

void RunsPage::setColumnShown(int column, bool shown)
{
    m_columns->setShown(column, shown);
}

QMenu *RunsPage::createColumnsMenu(QWidget *parent)
{
    return m_columns->createMenu(parent);
}

QMenu *RunsPage::createRunMenu(QWidget *parent)
{
    auto *menu = new QMenu(parent);
    const QStringList runs = selectedRuns();
    const QString first = runs.value(0);
    QString why;
    const bool local = m_actions->isManageable(first, &why);
    auto addAction = [&](const QString &text, bool enabled, auto slot) {
        QAction *action = menu->addAction(text);
        action->setEnabled(enabled);
        if (!enabled && !why.isEmpty())
            action->setToolTip(why);
        connect(action, &QAction::triggered, this, slot);
        return action;
    };
    const bool one = runs.size() == 1;
    addAction(tr("Rename…"), one && local, [this] {
        const auto rows = m_view->selectionModel()->selectedRows(monitor::RunsModel::NameColumn);
        if (!rows.isEmpty())
            m_view->edit(rows.first());
    });
    addAction(tr("Notes…"), one && local, [this, first] { m_actions->editNotes(first); });
    addAction(tr("Tags…"), one && local, [this, first] { m_actions->editTags(first); });
    menu->addSeparator();
    addAction(tr("Open folder"), one && local, [this, first] { m_actions->openFolder(first); });
    addAction(tr("Export as archive…"), one && local, [this, first] { m_actions->askExport(first); });
    addAction(tr("Compare hyperparameters"), runs.size() > 1, [this, runs] { m_actions->showDiff(runs); });
    // The hang autopsy (docs/hang-autopsy.md): where the run lives, as accel stop is.
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    QAction *stacks = addAction(tr("Capture stacks"), one && !rows.isEmpty() && isStoppable(rows.first()),
                                [this, first] { captureStacks(first); });
    stacks->setToolTip(tr("Every rank's stack now, grouped by identical stacks (accel stack)"));
    menu->addSeparator();
    addAction(tr("Delete with its files…"), local, [this, runs] { m_actions->confirmAndDelete(runs); });
    menu->setToolTipsVisible(true);
    return menu;
}

void RunsPage::updateButtons()
{
    bool anyLive = false;
    for (const auto &index : m_view->selectionModel()->selectedRows())
        anyLive = anyLive || isStoppable(index);
    m_stop->setEnabled(anyLive && !isStopping());
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    m_stacks->setEnabled(rows.size() == 1 && isStoppable(rows.first()));
    m_diff->setEnabled(m_view->selectionModel()->selectedRows().size() > 1);
}

// A live run that `accel stop` can stop: not a multi-node run's folder (its nodes' runs end with
// the SLURM job: "Cancel job" on the Hardware page's SLURM queue).
bool RunsPage::isStoppable(const QModelIndex &index) const
{
    return !launcher::runstate::isFinal(index.data(monitor::RunsModel::StateRole).toString()) &&
           !m_multiNode.contains(index.data(monitor::RunsModel::PathRole).toString());
}

bool RunsPage::stopSelected()
{
    bool queued = false;
    for (const auto &index : m_view->selectionModel()->selectedRows()) {
        if (!isStoppable(index))
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

void RunsPage::captureStacks(const QString &run)
{
    QString host, path;
    const bool remote = monitor::parseRemoteRunAddress(run, &host, &path);
    const QStringList arguments{QStringLiteral("stack"), remote ? path : run};
    launcher::HostCommand *command = nullptr;
    if (remote) {
        command = m_remoteHosts->host(host)->start(arguments).release();
    } else {
        auto *local = new launcher::AccelCommand;
        local->setProgram(m_accel);
        local->start(arguments);
        command = local;
    }
    auto *dialog = new StackDialog(command, QFileInfo(remote ? path : run).fileName(), this);
    dialog->show();
}

void RunsPage::startNextStop()
{
    if (m_stopQueue.isEmpty()) {
        m_stopping.clear();
        updateButtons();
        return;
    }
    m_stopping = m_stopQueue.takeFirst();
    const QString run = m_stopping;
    QString host, path;
    const bool remote = monitor::parseRemoteRunAddress(run, &host, &path);
    const QString id = QFileInfo(remote ? path : run).fileName();
    launcher::HostCommand *command = nullptr;
    if (remote) {
        // accel stop there, through the host the run is followed on.
        command = m_remoteHosts->host(host)->start({QStringLiteral("stop"), path}).release();
        command->setParent(this);
    } else {
        auto *local = new launcher::AccelCommand(this);
        local->setProgram(m_accel);
        local->start({QStringLiteral("stop"), run});
        command = local;
    }
    m_process = command;
    // done() comes exactly once, also when `accel` cannot start, so the queue always moves on.
    connect(command, &launcher::HostCommand::done, this,
            [this, command, run, id, remote, host](const launcher::AccelOutcome &outcome) {
                QString output = QString::fromLocal8Bit(outcome.standardOutput + outcome.standardError).trimmed();
                if (outcome.failedToStart)
                    output = remote ? QStringLiteral("%1: %2").arg(host, outcome.error)
                                    : tr("cannot start %1: %2").arg(m_accel, outcome.error);
                const int code = outcome.failedToStart ? -1 : outcome.shellCode();
                Q_EMIT statusMessage(code == 0 ? tr("Stopped %1").arg(id)
                                               : tr("accel stop %1 failed: %2").arg(id, output));
                Q_EMIT stopFinished(run, code, output);
                command->deleteLater();
                m_process = nullptr;
                m_model.refresh();
                if (remote)
                    m_catalogue->refresh();
                startNextStop();
            });
    Q_EMIT statusMessage(tr("Stopping %1…").arg(id));
}

} // namespace accel::app
