#include "monitor/logmodel.h"

namespace accel::monitor {

LogModel::LogModel(QObject *parent) : QAbstractTableModel(parent) {}

void LogModel::setMaximumLines(int lines)
{
    m_maximumLines = std::max(1, lines);
    trim();
}

void LogModel::appendLines(const LogLines &lines)
{
    if (lines.lines.isEmpty())
        return;
    const int first = static_cast<int>(m_lines.size());
    beginInsertRows({}, first, first + static_cast<int>(lines.lines.size()) - 1);
    for (const QString &text : lines.lines)
        m_lines.push_back({lines.rank, text});
    endInsertRows();
    trim();
}

void LogModel::trim()
{
    const int excess = static_cast<int>(m_lines.size()) - m_maximumLines;
    if (excess <= 0)
        return;
    beginRemoveRows({}, 0, excess - 1);
    m_lines.erase(m_lines.begin(), m_lines.begin() + excess);
    endRemoveRows();
}

void LogModel::clear()
{
    if (m_lines.empty())
        return;
    beginRemoveRows({}, 0, static_cast<int>(m_lines.size()) - 1);
    m_lines.clear();
    endRemoveRows();
}

int LogModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_lines.size());
}

int LogModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LogModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Line &line = m_lines[static_cast<size_t>(index.row())];
    if (role == RankRole)
        return line.rank;
    if (role != Qt::DisplayRole)
        return {};
    if (index.column() == RankColumn)
        return line.rank >= 0 ? QVariant(line.rank) : QVariant(QString());
    return line.text;
}

QVariant LogModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    if (section == RankColumn)
        return QStringLiteral("Rank");
    if (section == TextColumn)
        return QStringLiteral("Line");
    return {};
}

LogFilterModel::LogFilterModel(QObject *parent) : QSortFilterProxyModel(parent) {}

void LogFilterModel::setRankFilter(int rank)
{
    if (rank == m_rank)
        return;
    m_rank = rank;
    invalidateFilter();
}

void LogFilterModel::setSearchText(const QString &text)
{
    if (text == m_search)
        return;
    m_search = text;
    invalidateFilter();
}

bool LogFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const
{
    const QAbstractItemModel *source = sourceModel();
    if (!source)
        return false;
    if (m_rank != AllRanks &&
        source->index(sourceRow, LogModel::RankColumn, sourceParent).data(LogModel::RankRole).toInt() != m_rank)
        return false;
    if (m_search.isEmpty())
        return true;
    return source->index(sourceRow, LogModel::TextColumn, sourceParent)
        .data()
        .toString()
        .contains(m_search, Qt::CaseInsensitive);
}

} // namespace accel::monitor
