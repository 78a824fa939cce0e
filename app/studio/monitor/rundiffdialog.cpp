#include "app/studio/monitor/rundiffdialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace accel::app {

RunDiffDialog::RunDiffDialog(const QList<monitor::RunInfo> &runs, QWidget *parent) : QDialog(parent), m_runs(runs)
{
    setWindowTitle(tr("Compare hyperparameters"));
    auto *layout = new QVBoxLayout(this);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_table = new QTableWidget(this);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(m_table, 1);
    m_showAll = new QCheckBox(tr("Show all hyperparameters, also those that are the same"), this);
    layout->addWidget(m_showAll);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_showAll, &QCheckBox::toggled, this, &RunDiffDialog::fill);
    resize(900, 520);
    fill();
}

QStringList RunDiffDialog::shownKeys() const
{
    QStringList keys;
    for (int row = 0; row < m_table->rowCount(); ++row)
        keys.append(m_table->verticalHeaderItem(row)->text());
    return keys;
}

void RunDiffDialog::fill()
{
    QList<monitor::Hyperparameters> values;
    QStringList all;
    for (const monitor::RunInfo &run : std::as_const(m_runs)) {
        values.append(run.hyperparameters);
        all += run.hyperparameters.keys();
    }
    all.removeDuplicates();
    all.sort();
    const QStringList differing = monitor::differingKeys(values);
    const QStringList keys = m_showAll->isChecked() ? all : differing;
    m_summary->setText(
        differing.isEmpty()
            ? tr("These %1 runs have the same hyperparameters (%2 keys).").arg(m_runs.size()).arg(all.size())
            : tr("%1 of %2 hyperparameters differ between these %3 runs.")
                  .arg(differing.size())
                  .arg(all.size())
                  .arg(m_runs.size()));
    m_table->clear();
    m_table->setColumnCount(int(m_runs.size()));
    m_table->setRowCount(int(keys.size()));
    for (int column = 0; column < m_runs.size(); ++column) {
        auto *header = new QTableWidgetItem(m_runs[column].displayName());
        header->setToolTip(m_runs[column].id);
        m_table->setHorizontalHeaderItem(column, header);
    }
    for (int row = 0; row < keys.size(); ++row) {
        m_table->setVerticalHeaderItem(row, new QTableWidgetItem(keys[row]));
        for (int column = 0; column < m_runs.size(); ++column) {
            const auto found = values[column].constFind(keys[row]);
            auto *item = new QTableWidgetItem(found == values[column].constEnd() ? QStringLiteral("–") : *found);
            if (differing.contains(keys[row])) {
                QFont bold = item->font();
                bold.setBold(true);
                item->setFont(bold);
            }
            m_table->setItem(row, column, item);
        }
    }
    m_table->resizeColumnsToContents();
}

} // namespace accel::app
