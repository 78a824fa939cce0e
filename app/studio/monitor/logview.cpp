#include "app/studio/monitor/logview.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>

namespace accel::app {

LogView::LogView(QWidget *parent)
    : QWidget(parent), m_rank(new QComboBox(this)), m_search(new QLineEdit(this)), m_view(new QTableView(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto *bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Rank:"), this));
    bar->addWidget(m_rank);
    m_search->setPlaceholderText(tr("Search the logs"));
    m_search->setClearButtonEnabled(true);
    bar->addWidget(m_search, 1);
    layout->addLayout(bar);
    layout->addWidget(m_view, 1);

    m_rank->addItem(tr("All ranks"), monitor::LogFilterModel::AllRanks);
    connect(m_rank, &QComboBox::currentIndexChanged, this,
            [this](int index) { m_filter.setRankFilter(m_rank->itemData(index).toInt()); });
    connect(m_search, &QLineEdit::textChanged, &m_filter, &monitor::LogFilterModel::setSearchText);

    m_view->setModel(&m_filter);
    m_view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_view->verticalHeader()->setVisible(false);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 2);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setWordWrap(false);
    connect(&m_filter, &QAbstractItemModel::rowsInserted, this, [this] {
        auto *bar = m_view->verticalScrollBar();
        if (bar->value() >= bar->maximum() - 2)
            m_view->scrollToBottom();
    });
}

void LogView::setLogModel(monitor::LogModel *model)
{
    disconnect(m_rowsConnection);
    m_model = model;
    m_filter.setSourceModel(model);
    m_ranks.clear();
    m_rank->blockSignals(true);
    while (m_rank->count() > 1)
        m_rank->removeItem(1);
    m_rank->setCurrentIndex(0);
    m_rank->blockSignals(false);
    m_filter.setRankFilter(monitor::LogFilterModel::AllRanks);
    if (!model)
        return;
    m_view->resizeColumnToContents(monitor::LogModel::RankColumn);
    addRanksFrom(0, model->rowCount() - 1);
    m_rowsConnection = connect(model, &QAbstractItemModel::rowsInserted, this,
                               [this](const QModelIndex &, int first, int last) { addRanksFrom(first, last); });
}

void LogView::addRanksFrom(int first, int last)
{
    for (int row = first; m_model && row <= last; ++row)
        addRank(m_model->index(row, 0).data(monitor::LogModel::RankRole).toInt());
}

void LogView::addRank(int rank)
{
    if (m_ranks.contains(rank))
        return;
    m_ranks.insert(rank);
    // Keep the ranks sorted after "All ranks"; -1 (lines of no rank) first.
    int at = 1;
    while (at < m_rank->count() && m_rank->itemData(at).toInt() < rank)
        ++at;
    m_rank->insertItem(at, rank < 0 ? tr("No rank") : tr("Rank %1").arg(rank), rank);
}

} // namespace accel::app
