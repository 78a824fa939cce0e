#include "app/studio/fp8/fp8resultsmodel.h"

#include "app/studio/monitor/axisunits.h"

#include <cmath>

namespace accel::app {

void Fp8ResultsModel::setComparison(const Fp8Comparison &comparison)
{
    beginResetModel();
    m_comparison = comparison;
    endResetModel();
    Q_EMIT headerDataChanged(Qt::Horizontal, LossAtFifth, LossAtEnd); // the steps are in the titles
}

void Fp8ResultsModel::clear()
{
    setComparison({});
}

int Fp8ResultsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_comparison.runs.size());
}

int Fp8ResultsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

double Fp8ResultsModel::value(const Fp8ComparisonRun &run, int column) const
{
    switch (column) {
    case LossAtFifth:
    case LossAtHalf:
    case LossAtEnd: {
        const size_t i = size_t(column - LossAtFifth);
        return i < run.lossAt.size() ? run.lossAt[i].second : NAN;
    }
    case EvalLoss:
        return run.finalEvalLoss;
    case VsBf16:
        return run.evalVsBf16Percent;
    case StepTime:
        return run.stepTimeS * 1000;
    case WeightBytes:
        return run.weightBytes;
    case GradientBytes:
        return run.gradientBytes;
    case OptimizerBytes:
        return run.optimizerBytes;
    default:
        return NAN;
    }
}

QVariant Fp8ResultsModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    const Fp8ComparisonRun &run = m_comparison.runs[size_t(index.row())];
    const int column = index.column();
    if (role == Qt::TextAlignmentRole)
        return column <= Precision ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole && column == Precision && run.fp8Layers > 0)
        return tr("%n Linear layer(s) in FP8", nullptr, run.fp8Layers);
    if (role != Qt::DisplayRole && role != ValueRole)
        return {};
    if (column == Shape)
        return run.shape;
    if (column == Precision)
        return run.precision;
    const double v = value(run, column);
    if (role == ValueRole)
        return v;
    if (std::isnan(v))
        return QStringLiteral("–");
    switch (column) {
    case VsBf16:
        return QString::asprintf("%+.2f %%", v);
    case StepTime:
        return QString::asprintf("%.1f ms", v);
    case WeightBytes:
    case GradientBytes:
    case OptimizerBytes:
        return formatBytes(v);
    default:
        return QString::number(v, 'f', 4);
    }
}

QVariant Fp8ResultsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    // The steps the benchmark read the loss at (1/5, 1/2 and all of the steps).
    auto lossAt = [&](int i) {
        if (m_comparison.runs.empty() || m_comparison.runs.front().lossAt.size() <= size_t(i))
            return tr("Loss");
        return tr("Loss @%1").arg(QString::number(m_comparison.runs.front().lossAt[size_t(i)].first));
    };
    switch (section) {
    case Shape:
        return tr("Shape");
    case Precision:
        return tr("Precision");
    case LossAtFifth:
        return lossAt(0);
    case LossAtHalf:
        return lossAt(1);
    case LossAtEnd:
        return lossAt(2);
    case EvalLoss:
        return tr("Eval loss");
    case VsBf16:
        return tr("vs bf16");
    case StepTime:
        return tr("Step time");
    case WeightBytes:
        return tr("Weights");
    case GradientBytes:
        return tr("Gradients");
    case OptimizerBytes:
        return tr("Optimizer");
    default:
        return {};
    }
}

} // namespace accel::app
