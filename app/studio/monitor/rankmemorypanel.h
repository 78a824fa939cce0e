// The Monitor's per-rank training memory: for each rank the bytes of parameters, gradients and
// optimizer state it holds, as its runtime measured them (mem_params_bytes, mem_grads_bytes,
// mem_optim_bytes in metrics/rank<N>.jsonl; docs/metrics.md), beside the prediction for the run's
// job under the settings its ranks were started with (`accel estimate-memory RUN/job.yaml --run RUN
// --json`, run once per run through AccelCommand). The table lists the ranks that
// reported (a Python script's ranks write no such fields).
#pragma once

#include <QPointer>
#include <QString>
#include <QWidget>

#include <array>

class QLabel;
class QTableWidget;

namespace accel::launcher {
class AccelCommand;
}
namespace accel::monitor {
class RunMonitor;
}

namespace accel::app {

class RankMemoryPanel : public QWidget {
    Q_OBJECT
public:
    enum Kind { Parameters, Gradients, OptimizerState, Total, KindCount };

    explicit RankMemoryPanel(QWidget *parent = nullptr);
    ~RankMemoryPanel() override;

    void setAccelProgram(const QString &program) { m_program = program; }
    // The run whose ranks are shown (nullptr: none).
    void setRun(monitor::RunMonitor *run, const QString &runDirectory);

    // For tests: the figures shown, -1 when absent.
    double measured(int rank, Kind kind) const;
    double predicted(Kind kind) const { return m_predicted[kind]; }
    QString predictionNote() const;
    QTableWidget *table() const { return m_table; }

Q_SIGNALS:
    void predictionChanged(); // the prediction arrived, or why there is none

private:
    void refresh();
    void predict();

    QString m_program;
    QPointer<monitor::RunMonitor> m_run;
    QString m_directory;
    QPointer<launcher::AccelCommand> m_command;
    std::array<double, KindCount> m_predicted{-1, -1, -1, -1};
    QLabel *m_note = nullptr;
    QTableWidget *m_table = nullptr;
};

} // namespace accel::app
