// RunsFilter: the Runs table's sort and filter over RunsModel. The filter is what a person types:
// words that must all appear (in the id, name, state, host, configuration, tags, notes or a
// hyperparameter's value, any case), "tag:NAME", and hyperparameter conditions "KEY=VALUE",
// "KEY>NUMBER", "KEY<NUMBER" (KEY is a hyperparameter's full key, or its end: "lr" matches
// "config/lr"). Sorting puts numbers in numeric order, before texts, and runs without a value last.
#pragma once

#include <QSortFilterProxyModel>
#include <QStringList>

namespace accel::app {

class RunsFilter : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit RunsFilter(QObject *parent = nullptr);

    void setFilterText(const QString &text);
    QString filterText() const { return m_text; }
    // A term that cannot be applied (a comparison with a non-number), for the filter's tooltip.
    QString problem() const { return m_problem; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;
    bool lessThan(const QModelIndex &left, const QModelIndex &right) const override;

private:
    struct Term {
        enum Kind { Word, Tag, Equals, Greater, Less } kind = Word;
        QString key;
        QString text;
        double number = 0;
    };
    QString m_text;
    QString m_problem;
    QList<Term> m_terms;
};

} // namespace accel::app
