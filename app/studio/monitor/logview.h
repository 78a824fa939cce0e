// LogView: the log lines of one run's ranks with a rank filter and a search field, over the
// monitor's LogModel through a LogFilterModel. It follows the newest line unless scrolled up.
#pragma once

#include "monitor/logmodel.h"

#include <QPointer>
#include <QSet>
#include <QWidget>

class QComboBox;
class QLineEdit;
class QTableView;

namespace accel::app {

class LogView : public QWidget {
    Q_OBJECT
public:
    explicit LogView(QWidget *parent = nullptr);

    void setLogModel(monitor::LogModel *model); // nullptr shows nothing
    monitor::LogFilterModel *filterModel() { return &m_filter; }
    QComboBox *rankCombo() const { return m_rank; }
    QLineEdit *searchField() const { return m_search; }
    QTableView *view() const { return m_view; }

private:
    void addRanksFrom(int first, int last);
    void addRank(int rank);

    monitor::LogFilterModel m_filter;
    QPointer<monitor::LogModel> m_model;
    QMetaObject::Connection m_rowsConnection;
    QSet<int> m_ranks;
    QComboBox *m_rank = nullptr;
    QLineEdit *m_search = nullptr;
    QTableView *m_view = nullptr;
};

} // namespace accel::app
