#include "app/studio/monitor/runsfilter.h"

#include "monitor/runsmodel.h"

#include <QRegularExpression>

#include <cmath>

namespace accel::app {

using monitor::RunsModel;

namespace {

// The hyperparameter values of `key` (a full key or the end of one after '/' or '.').
QStringList valuesOf(const monitor::RunInfo &info, const QString &key)
{
    QStringList values;
    for (auto it = info.hyperparameters.cbegin(); it != info.hyperparameters.cend(); ++it) {
        const QString &full = it.key();
        if (full.compare(key, Qt::CaseInsensitive) == 0 ||
            (full.endsWith(key, Qt::CaseInsensitive) && full.size() > key.size() &&
             (full.at(full.size() - key.size() - 1) == QLatin1Char('/') ||
              full.at(full.size() - key.size() - 1) == QLatin1Char('.'))))
            values.append(it.value());
    }
    return values;
}

} // namespace

RunsFilter::RunsFilter(QObject *parent) : QSortFilterProxyModel(parent)
{
    setSortRole(RunsModel::SortRole);
}

void RunsFilter::setFilterText(const QString &text)
{
    static const QRegularExpression comparison(QStringLiteral("^([^=<>]+)(=|>|<)(.*)$"));
    m_text = text;
    m_problem.clear();
    m_terms.clear();
    for (const QString &word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        Term term;
        const auto match = comparison.match(word);
        if (word.startsWith(QLatin1String("tag:"), Qt::CaseInsensitive)) {
            term.kind = Term::Tag;
            term.text = word.mid(4);
        } else if (match.hasMatch() && !match.captured(3).isEmpty()) {
            term.key = match.captured(1);
            term.text = match.captured(3);
            const QString op = match.captured(2);
            term.kind = op == QLatin1String("=") ? Term::Equals : op == QLatin1String(">") ? Term::Greater : Term::Less;
            if (term.kind != Term::Equals) {
                bool ok = false;
                term.number = term.text.toDouble(&ok);
                if (!ok) {
                    m_problem = tr("%1: %2 is not a number").arg(word, term.text);
                    continue;
                }
            }
        } else {
            term.text = word;
        }
        m_terms.append(term);
    }
    invalidateFilter();
}

bool RunsFilter::filterAcceptsRow(int sourceRow, const QModelIndex &) const
{
    const auto *model = qobject_cast<const RunsModel *>(sourceModel());
    if (!model || m_terms.isEmpty())
        return true;
    const monitor::RunInfo &info = model->run(sourceRow);
    for (const Term &term : m_terms) {
        switch (term.kind) {
        case Term::Tag:
            if (!info.annotations.tags.contains(term.text, Qt::CaseInsensitive))
                return false;
            break;
        case Term::Equals: {
            const QStringList values = valuesOf(info, term.key);
            const bool any = std::any_of(values.begin(), values.end(), [&](const QString &v) {
                const double a = monitor::hyperparameterNumber(v), b = monitor::hyperparameterNumber(term.text);
                return v.compare(term.text, Qt::CaseInsensitive) == 0 || (!std::isnan(a) && a == b);
            });
            if (!any)
                return false;
            break;
        }
        case Term::Greater:
        case Term::Less: {
            const QStringList values = valuesOf(info, term.key);
            const bool any = std::any_of(values.begin(), values.end(), [&](const QString &v) {
                const double a = monitor::hyperparameterNumber(v);
                return term.kind == Term::Greater ? a > term.number : a < term.number;
            });
            if (!any)
                return false;
            break;
        }
        case Term::Word: {
            bool found = false;
            for (int column = 0; column < model->columnCount() && !found; ++column)
                found = model->index(sourceRow, column).data().toString().contains(term.text, Qt::CaseInsensitive);
            found = found || info.annotations.notes.contains(term.text, Qt::CaseInsensitive) ||
                    info.id.contains(term.text, Qt::CaseInsensitive);
            if (!found)
                return false;
            break;
        }
        }
    }
    return true;
}

bool RunsFilter::lessThan(const QModelIndex &left, const QModelIndex &right) const
{
    const QVariant a = left.data(sortRole());
    const QVariant b = right.data(sortRole());
    // Runs without a value go last in ascending order; numbers before texts; each in its order.
    if (!a.isValid() || !b.isValid())
        return a.isValid() && !b.isValid();
    const bool an = a.typeId() == QMetaType::Double, bn = b.typeId() == QMetaType::Double;
    if (an != bn)
        return an;
    if (an)
        return a.toDouble() < b.toDouble();
    return QString::localeAwareCompare(a.toString(), b.toString()) < 0;
}

} // namespace accel::app
