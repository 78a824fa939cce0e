// The FP8 comparison's table: a row per run (shape, precision), columns as `accel bench fp8`
// prints them: training loss at 1/5, 1/2 and all of the steps, final evaluation loss and its
// difference from bf16, median step time, bytes of weights, gradients and optimizer state.
#pragma once

#include "app/studio/fp8/fp8comparison.h"

#include <QAbstractTableModel>

namespace accel::app {

class Fp8ResultsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Shape,
        Precision,
        LossAtFifth,
        LossAtHalf,
        LossAtEnd,
        EvalLoss,
        VsBf16,
        StepTime,
        WeightBytes,
        GradientBytes,
        OptimizerBytes,
        ColumnCount
    };
    // Qt::UserRole: the number behind a cell (NaN where there is none).
    static constexpr int ValueRole = Qt::UserRole;

    using QAbstractTableModel::QAbstractTableModel;

    void setComparison(const Fp8Comparison &comparison);
    void clear();
    const Fp8Comparison &comparison() const { return m_comparison; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    double value(const Fp8ComparisonRun &run, int column) const;

    Fp8Comparison m_comparison;
};

} // namespace accel::app
