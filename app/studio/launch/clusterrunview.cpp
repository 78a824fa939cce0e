#include "app/studio/launch/clusterrunview.h"

#include "app/studio/monitor/remotecatalogue.h"
#include "app/studio/monitor/remotehosts.h"
#include "core/rundir/runlayout.h"
#include "monitor/runcatalogue.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

ClusterRunView::ClusterRunView(QWidget *parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("clusterRun"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_record = new QLabel(this);
    m_record->setObjectName(QStringLiteral("clusterRecord"));
    m_record->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_record->setWordWrap(true);
    m_state = new QLabel(this);
    m_state->setObjectName(QStringLiteral("clusterRunState"));
    m_state->setWordWrap(true);
    m_state->setVisible(false);
    m_nodes = new QTableWidget(0, 6, this);
    m_nodes->setObjectName(QStringLiteral("nodeResults"));
    m_nodes->setHorizontalHeaderLabels(
        {tr("Host"), tr("Machine"), tr("State"), tr("Run id"), tr("Run directory (on the host)"), tr("Message")});
    m_nodes->verticalHeader()->setVisible(false);
    m_nodes->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_nodes->horizontalHeader()->setStretchLastSection(true);
    m_nodes->setMaximumHeight(160);
    layout->addWidget(m_record);
    layout->addWidget(m_state);
    layout->addWidget(m_nodes);
    setVisible(false);

    m_hosts = new RemoteHosts(this);
    m_catalogue = new RemoteCatalogue(m_hosts, this);
    m_catalogue->setRefreshInterval(3000);
    connect(m_catalogue, &RemoteCatalogue::listed, this, &ClusterRunView::onListed);
}

ClusterRunView::~ClusterRunView() = default;

void ClusterRunView::setPollInterval(int milliseconds)
{
    m_catalogue->setRefreshInterval(milliseconds);
}

QStringList ClusterRunView::runAddresses() const
{
    QStringList out;
    for (const ClusterNode &node : m_report.nodes) {
        if (node.started && node.runDir.startsWith(QLatin1Char('/')))
            out.append(monitor::remoteRunAddress(node.host, node.runDir));
    }
    return out;
}

void ClusterRunView::showReport(const ClusterLaunchReport &report)
{
    const bool sameLaunch = !m_report.record.isEmpty() && report.record == m_report.record;
    m_report = report;
    if (!sameLaunch) {
        m_listedStates.clear();
        m_ended = false;
        m_state->setVisible(false);
    }
    m_record->setText(
        report.record.isEmpty()
            ? tr("Nothing was started (no record written).")
            : tr("Record: %1 (main address %2:%3)").arg(report.record, report.mainIp).arg(report.mainPort));
    // Follow the started nodes' runs until they end (a stop's report says so too).
    QList<CatalogueSource> sources;
    bool allStopped = !report.nodes.empty();
    for (const ClusterNode &node : report.nodes) {
        if (node.started && node.runDir.startsWith(QLatin1Char('/')))
            sources.append({node.host, QFileInfo(node.runDir).path()});
        allStopped = allStopped && !node.state.isEmpty() && rundir::isFinalState(node.state.toStdString());
    }
    if (m_ended || allStopped || report.record.isEmpty())
        sources.clear();
    m_catalogue->setSources(sources);
    if (!sources.isEmpty())
        m_catalogue->refresh();
    fillTable();
    setVisible(true);
    Q_EMIT changed();
}

void ClusterRunView::fillTable()
{
    m_nodes->setRowCount(static_cast<int>(m_report.nodes.size()));
    for (size_t i = 0; i < m_report.nodes.size(); ++i) {
        const ClusterNode &node = m_report.nodes[i];
        const QString listed = m_listedStates.value(monitor::remoteRunAddress(node.host, node.runDir));
        const QString state = !node.state.isEmpty() ? node.state
                              : !listed.isEmpty()   ? listed
                              : node.started        ? tr("started")
                                                    : tr("not started");
        const QStringList cells = {node.host,   QString::number(node.machineRank), state, node.runId, node.runDir,
                                   node.message};
        for (int column = 0; column < cells.size(); ++column)
            m_nodes->setItem(static_cast<int>(i), column, new QTableWidgetItem(cells[column]));
    }
    m_nodes->resizeColumnsToContents();
}

void ClusterRunView::onListed(const QString &destination, const QList<monitor::RunInfo> &runs)
{
    for (const ClusterNode &node : m_report.nodes) {
        if (node.host != destination)
            continue;
        for (const monitor::RunInfo &info : runs) {
            if (info.path == node.runDir)
                m_listedStates.insert(monitor::remoteRunAddress(node.host, node.runDir), info.state);
        }
    }
    fillTable();
    if (m_ended)
        return;
    QStringList states;
    for (const ClusterNode &node : m_report.nodes) {
        if (!node.started)
            continue;
        const QString state = m_listedStates.value(monitor::remoteRunAddress(node.host, node.runDir));
        if (state.isEmpty() || !rundir::isFinalState(state.toStdString()))
            return; // still going somewhere (or not listed yet)
        states.append(QStringLiteral("%1: %2").arg(node.host, state));
    }
    if (states.isEmpty())
        return;
    m_ended = true;
    m_catalogue->setSources({});
    m_state->setText(tr("The run has ended on every node (%1).").arg(states.join(QStringLiteral(", "))));
    m_state->setVisible(true);
    Q_EMIT ended();
    Q_EMIT changed();
}

} // namespace accel::app
