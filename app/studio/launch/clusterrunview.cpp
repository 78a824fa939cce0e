#include "app/studio/launch/clusterrunview.h"

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
    m_nodes = new QTableWidget(0, 6, this);
    m_nodes->setObjectName(QStringLiteral("nodeResults"));
    m_nodes->setHorizontalHeaderLabels(
        {tr("Host"), tr("Machine"), tr("State"), tr("Run id"), tr("Run directory (on the host)"), tr("Message")});
    m_nodes->verticalHeader()->setVisible(false);
    m_nodes->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_nodes->horizontalHeader()->setStretchLastSection(true);
    m_nodes->setMaximumHeight(160);
    layout->addWidget(m_record);
    layout->addWidget(m_nodes);
    setVisible(false);
}

void ClusterRunView::showReport(const ClusterLaunchReport &report)
{
    m_record->setText(
        report.record.isEmpty()
            ? tr("Nothing was started (no record written).")
            : tr("Record: %1 (main address %2:%3)").arg(report.record, report.mainIp).arg(report.mainPort));
    m_nodes->setRowCount(static_cast<int>(report.nodes.size()));
    for (size_t i = 0; i < report.nodes.size(); ++i) {
        const ClusterNode &node = report.nodes[i];
        const QString state = !node.state.isEmpty() ? node.state : node.started ? tr("started") : tr("not started");
        const QStringList cells = {node.host,   QString::number(node.machineRank), state, node.runId, node.runDir,
                                   node.message};
        for (int column = 0; column < cells.size(); ++column)
            m_nodes->setItem(static_cast<int>(i), column, new QTableWidgetItem(cells[column]));
    }
    m_nodes->resizeColumnsToContents();
    setVisible(true);
}

} // namespace accel::app
