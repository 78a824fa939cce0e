// The Launch page's per-rank memory prediction: the bytes of parameters, gradients and optimizer
// state one rank will hold under the chosen config's strategy, beside DDP's on the same processes,
// from `accel estimate-memory MODEL --config_file CONFIG [--num_processes N] --json` asked through
// AccelQuery (the studio never links libtorch). MODEL is the native job (the recipe form written
// to a file of the panel's own, or the job file) or, for other programs, a model folder typed here.
// Re-estimated (debounced) whenever the program, the config or the process count changes; a
// failed estimate shows accel's message.
#pragma once

#include <QTemporaryDir>
#include <QWidget>

class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableWidget;

namespace accel::launcher {
class JobFile;
} // namespace accel::launcher

namespace accel::app {

class AccelQuery;

class MemoryEstimatePanel : public QWidget {
    Q_OBJECT
public:
    explicit MemoryEstimatePanel(QWidget *parent = nullptr);
    ~MemoryEstimatePanel() override;

    void setAccelProgram(const QString &program);
    // What to estimate: a recipe form's job, a job file, or nothing (the model folder field is used).
    void setRecipeJob(const launcher::JobFile &job);
    void setJobFile(const QString &path);
    void setModelFromField();
    void setConfigFile(const QString &path);
    void setProcesses(int processes); // 0: the config's num_processes
    int processes() const;
    QLineEdit *modelField() const { return m_model; }

    // The figures shown (bytes per rank), for tests; -1 before an estimate succeeded.
    qint64 predictedTotal() const { return m_total; }
    qint64 ddpTotal() const { return m_ddpTotal; }
    QString message() const; // the strategy line, or the error
    QTableWidget *table() const { return m_table; }
    bool isEstimating() const;

Q_SIGNALS:
    void estimated(); // a result or an error is shown

private:
    void start();
    void show(const QByteArray &json);
    void showError(const QString &text);

    QString m_modelPath; // the job or model the next estimate reads
    bool m_fromField = true;
    QString m_config;
    QTemporaryDir m_jobDir; // the recipe form's job, written for estimate-memory
    AccelQuery *m_query = nullptr;
    QFormLayout *m_form = nullptr;
    QLineEdit *m_model = nullptr;
    QSpinBox *m_processes = nullptr;
    QLabel *m_summary = nullptr;
    QTableWidget *m_table = nullptr;
    qint64 m_total = -1;
    qint64 m_ddpTotal = -1;
};

} // namespace accel::app
