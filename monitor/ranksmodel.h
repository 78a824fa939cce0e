// RanksModel: one row per rank of a run (sorted by rank): state, last step, loss, throughput and
// step time. Rows come from the store (ranks that wrote metrics) and from launcher events (ranks
// that started or exited); values update in place as samples arrive.
#pragma once

#include "monitor/metricstore.h"
#include "monitor/runevent.h"

#include <QAbstractTableModel>
#include <QPointer>

namespace accel::monitor {

class RanksModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { RankColumn, StateColumn, StepColumn, LossColumn, ThroughputColumn, StepTimeColumn, ColumnCount };
    enum Role { RankRole = Qt::UserRole + 1, SortRole, StragglerRole };

    explicit RanksModel(const MetricStore *store, QObject *parent = nullptr);

    // Launcher and monitor events: rank_started, rank_exited, straggler_detected/_cleared,
    // hang_suspected/_cleared.
    void observeEvents(const QList<accel::monitor::RunEvent> &events);

    QList<int> ranks() const;
    QString stateOf(int rank) const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row {
        int rank = 0;
        QString process; // "", "running", "exited 0", "failed (exit 3)", "killed (signal 9)"
        bool straggler = false;
    };
    int ensureRow(int rank); // row index, inserted in order when new
    int rowOfRank(int rank) const;
    void onSamples(const QList<int> &ranks);
    QVariant value(const Row &row, int column, bool forSorting) const;

    QPointer<const MetricStore> m_store;
    QList<Row> m_rows;
    bool m_hang = false;
};

} // namespace accel::monitor
