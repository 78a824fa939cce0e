#include "monitor/ranksmodel.h"

#include <QJsonValue>

#include <algorithm>
#include <cmath>

namespace accel::monitor {

RanksModel::RanksModel(const MetricStore *store, QObject *parent) : QAbstractTableModel(parent), m_store(store)
{
    if (!store)
        return;
    for (int rank : store->ranks()) {
        if (rank >= 0)
            ensureRow(rank);
    }
    connect(store, &MetricStore::ranksAdded, this, [this](const QList<int> &ranks) {
        for (int rank : ranks) {
            if (rank >= 0)
                ensureRow(rank);
        }
    });
    connect(store, &MetricStore::samplesAppended, this, &RanksModel::onSamples);
    connect(store, &MetricStore::cleared, this, [this] {
        beginResetModel();
        m_rows.clear();
        m_hang = false;
        endResetModel();
    });
}

int RanksModel::rowOfRank(int rank) const
{
    const auto it =
        std::lower_bound(m_rows.begin(), m_rows.end(), rank, [](const Row &row, int r) { return row.rank < r; });
    return it != m_rows.end() && it->rank == rank ? static_cast<int>(it - m_rows.begin()) : -1;
}

int RanksModel::ensureRow(int rank)
{
    const auto it =
        std::lower_bound(m_rows.begin(), m_rows.end(), rank, [](const Row &row, int r) { return row.rank < r; });
    const int position = static_cast<int>(it - m_rows.begin());
    if (it != m_rows.end() && it->rank == rank)
        return position;
    beginInsertRows({}, position, position);
    Row row;
    row.rank = rank;
    m_rows.insert(position, row);
    endInsertRows();
    return position;
}

void RanksModel::onSamples(const QList<int> &ranks)
{
    for (int rank : ranks) {
        const int row = rowOfRank(rank);
        if (row >= 0)
            Q_EMIT dataChanged(index(row, StateColumn), index(row, ColumnCount - 1));
    }
}

void RanksModel::observeEvents(const QList<RunEvent> &events)
{
    for (const RunEvent &event : events) {
        const rundir::EventKind kind = event.kind();
        if (kind == rundir::EventKind::HangSuspected || kind == rundir::EventKind::HangCleared) {
            m_hang = kind == rundir::EventKind::HangSuspected;
            if (!m_rows.isEmpty())
                Q_EMIT dataChanged(index(0, StateColumn), index(static_cast<int>(m_rows.size()) - 1, StateColumn));
            continue;
        }
        if (event.rank < 0)
            continue;
        QString process;
        int straggler = -1;
        if (kind == rundir::EventKind::RankStarted) {
            process = QStringLiteral("running");
        } else if (kind == rundir::EventKind::RankExited) {
            const QJsonValue code = event.fields.value(QLatin1String("exit_code"));
            const QJsonValue signal = event.fields.value(QLatin1String("signal"));
            if (signal.isDouble() && signal.toInt() != 0)
                process = QStringLiteral("killed (signal %1)").arg(signal.toInt());
            else if (code.isDouble() && code.toInt() == 0)
                process = QStringLiteral("exited 0");
            else if (code.isDouble())
                process = QStringLiteral("failed (exit %1)").arg(code.toInt());
            else
                process = QStringLiteral("failed");
        } else if (kind == rundir::EventKind::StragglerDetected) {
            straggler = 1;
        } else if (kind == rundir::EventKind::StragglerCleared) {
            straggler = 0;
        } else {
            continue;
        }
        const int row = ensureRow(event.rank);
        Row &entry = m_rows[row];
        if (!process.isEmpty())
            entry.process = process;
        if (straggler >= 0)
            entry.straggler = straggler == 1;
        Q_EMIT dataChanged(index(row, StateColumn), index(row, StateColumn));
    }
}

QList<int> RanksModel::ranks() const
{
    QList<int> result;
    for (const Row &row : m_rows)
        result.append(row.rank);
    return result;
}

QString RanksModel::stateOf(int rank) const
{
    const int row = rowOfRank(rank);
    return row < 0 ? QString() : value(m_rows[row], StateColumn, false).toString();
}

int RanksModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int RanksModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RanksModel::value(const Row &row, int column, bool forSorting) const
{
    const bool haveStore = !m_store.isNull();
    auto number = [&](double v, int decimals) -> QVariant {
        if (!std::isfinite(v))
            return forSorting ? QVariant(std::nan("")) : QVariant(QString());
        return forSorting ? QVariant(v) : QVariant(QString::number(v, 'g', decimals));
    };
    switch (column) {
    case RankColumn:
        return row.rank;
    case StateColumn: {
        QString state = row.process;
        const RankStatus status = haveStore ? m_store->rankStatus(row.rank) : RankStatus{};
        if (state.isEmpty())
            state = status.samples > 0 ? QStringLiteral("running") : QStringLiteral("waiting");
        const bool live = state == QLatin1String("running");
        if (live && m_hang)
            state = QStringLiteral("no progress");
        else if (live && row.straggler)
            state = QStringLiteral("straggler");
        return state;
    }
    case StepColumn: {
        const std::int64_t step = haveStore ? m_store->rankStatus(row.rank).lastStep : -1;
        if (step < 0)
            return forSorting ? QVariant(-1) : QVariant(QString());
        return static_cast<qlonglong>(step);
    }
    case LossColumn:
        return number(haveStore ? m_store->lastValue(row.rank, QStringLiteral("loss")) : std::nan(""), 5);
    case ThroughputColumn: {
        double v = haveStore ? m_store->lastValue(row.rank, QStringLiteral("samples_per_s")) : std::nan("");
        QString unit = QStringLiteral(" samples/s");
        if (!std::isfinite(v) && haveStore) {
            v = m_store->lastValue(row.rank, QStringLiteral("tokens_per_s"));
            unit = QStringLiteral(" tokens/s");
        }
        if (forSorting || !std::isfinite(v))
            return number(v, 4);
        return QString::number(v, 'f', v >= 100 ? 0 : 1) + unit;
    }
    case StepTimeColumn: {
        const Series *times = haveStore ? m_store->stepTimes(row.rank) : nullptr;
        const double v = times && !times->empty() ? times->values.back() : std::nan("");
        if (forSorting || !std::isfinite(v))
            return number(v, 4);
        return QString::number(v, 'f', 3) + QStringLiteral(" s");
    }
    default:
        return {};
    }
}

QVariant RanksModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row &row = m_rows.at(index.row());
    switch (role) {
    case Qt::DisplayRole:
        return value(row, index.column(), false);
    case SortRole:
        return value(row, index.column(), true);
    case RankRole:
        return row.rank;
    case StragglerRole:
        return row.straggler;
    case Qt::TextAlignmentRole:
        return index.column() == StateColumn ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    default:
        return {};
    }
}

QVariant RanksModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const titles[] = {"Rank", "State", "Step", "Loss", "Throughput", "Step time"};
    return section >= 0 && section < ColumnCount ? QString::fromLatin1(titles[section]) : QVariant();
}

} // namespace accel::monitor
