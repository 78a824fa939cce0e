// RunsColumns: which columns the Runs table shows and in what order. Hyperparameters whose
// values differ between the listed runs are shown, the others hidden, Notes when a run has some;
// what the header's menu chose wins and is kept in the settings. Name, state, tags and the
// hyperparameters come first, then when, how and where; no column is wider than a few words.
#pragma once

#include <QObject>

class QMenu;
class QTableView;
class QWidget;

namespace accel::monitor {
class RunsModel;
}

namespace accel::app {

class RunsColumns : public QObject {
    Q_OBJECT
public:
    RunsColumns(monitor::RunsModel *model, QTableView *view);

    void update(); // shown columns and their order, after rows or columns changed
    void fit();    // widths to the contents, capped
    bool isShown(int column) const;
    void setShown(int column, bool shown); // remembered
    QMenu *createMenu(QWidget *parent);    // a check per column

private:
    monitor::RunsModel *m_model;
    QTableView *m_view;
};

} // namespace accel::app
