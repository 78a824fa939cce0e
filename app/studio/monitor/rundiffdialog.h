// RunDiffDialog: the hyperparameters of two or more runs side by side, only those that differ
// (monitor::differingKeys) unless "Show all" is checked; a value a run lacks shows as "–".
#pragma once

#include "monitor/runsmodel.h"

#include <QDialog>

class QCheckBox;
class QLabel;
class QTableWidget;

namespace accel::app {

class RunDiffDialog : public QDialog {
    Q_OBJECT
public:
    explicit RunDiffDialog(const QList<monitor::RunInfo> &runs, QWidget *parent = nullptr);

    QTableWidget *table() const { return m_table; }
    QCheckBox *showAllBox() const { return m_showAll; }
    QStringList shownKeys() const;

private:
    void fill();

    QList<monitor::RunInfo> m_runs;
    QTableWidget *m_table = nullptr;
    QCheckBox *m_showAll = nullptr;
    QLabel *m_summary = nullptr;
};

} // namespace accel::app
