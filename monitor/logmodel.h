// LogModel: the log lines of a run's ranks in arrival order (rank, text), appended incrementally
// and capped (oldest lines removed first). LogFilterModel filters it by rank and by a search
// text (case-insensitive substring) for the studio's log view.
#pragma once

#include "monitor/runevent.h"

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include <deque>

namespace accel::monitor {

class LogModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { RankColumn, TextColumn, ColumnCount };
    enum Role { RankRole = Qt::UserRole + 1 };

    explicit LogModel(QObject *parent = nullptr);

    void setMaximumLines(int lines); // default 200000
    void appendLines(const accel::monitor::LogLines &lines);
    void clear();

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Line {
        int rank;
        QString text;
    };
    void trim();

    std::deque<Line> m_lines;
    int m_maximumLines = 200000;
};

class LogFilterModel : public QSortFilterProxyModel {
    Q_OBJECT
public:
    static constexpr int AllRanks = -2;

    explicit LogFilterModel(QObject *parent = nullptr);

    void setRankFilter(int rank); // AllRanks (default) or one rank (-1: lines of no rank)
    int rankFilter() const { return m_rank; }
    void setSearchText(const QString &text);
    QString searchText() const { return m_search; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;

private:
    int m_rank = AllRanks;
    QString m_search;
};

} // namespace accel::monitor
