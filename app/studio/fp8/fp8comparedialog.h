// "Compare FP8 recipes…": runs `accel bench fp8 --json` (one accel-worker per shape and precision,
// all from the same initial weights and batches) through an AccelCommand, shows its progress, and
// then the table (training loss at fixed steps, final evaluation loss and its difference from
// bf16, step time, bytes of weights / gradients / optimizer state) and the training loss curves, a
// chart per model shape. Cancel stops the benchmark and its workers (the command's process group).
#pragma once

#include "app/studio/fp8/fp8comparison.h"

#include <QDialog>
#include <QList>
#include <QPointer>

#include <memory>

class QCheckBox;
class QCustomPlot;
class QHBoxLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTableView;
class QTemporaryDir;

namespace accel::launcher {
class AccelCommand;
struct AccelOutcome;
} // namespace accel::launcher

namespace accel::app {

class Fp8ResultsModel;

class Fp8CompareDialog : public QDialog {
    Q_OBJECT
public:
    explicit Fp8CompareDialog(QWidget *parent = nullptr);
    ~Fp8CompareDialog() override;

    void setAccelProgram(const QString &program) { m_accel = program; }
    // Steps, threads, shapes and precisions into the form (the output folder is the dialog's own).
    void setOptions(const Fp8ComparisonOptions &options);
    Fp8ComparisonOptions options() const;

    // Starts the benchmark (false, with the reason in the status line, when nothing is chosen or
    // one is running); finished() follows.
    bool run();
    void cancel();
    bool isRunning() const;
    qint64 processId() const; // of the running `accel bench`, 0 when none
    QString outputDirectory() const { return m_outputDirectory; }

    Fp8ResultsModel *resultsModel() const { return m_model; }
    QList<QCustomPlot *> plots() const { return m_plots; }
    // Shows a comparison's results: the table (every row visible when the plots keep their
    // minimum height) and one loss chart per shape. run() calls it when the benchmark finishes.
    void showComparison(const Fp8Comparison &comparison);
    QTableView *resultsTable() const { return m_table; }
    QString statusText() const;
    QString progressText() const;

Q_SIGNALS:
    // After run(): the result is shown (succeeded), or the benchmark failed or was cancelled.
    void finished(bool succeeded);

protected:
    void reject() override;
    void changeEvent(QEvent *event) override;

private:
    void onOutput(const QByteArray &standardOutput, const QByteArray &standardError);
    void onDone(const launcher::AccelOutcome &outcome);
    void showProgress(const Fp8Progress &progress);
    void fitTableToRows();
    void clearPlots();
    void applyPalette(QCustomPlot *plot) const;
    void setStatus(const QString &text, bool error);
    void updateButtons();

    QString m_accel;
    QSpinBox *m_steps = nullptr;
    QSpinBox *m_threads = nullptr;
    QList<QCheckBox *> m_shapeBoxes, m_precisionBoxes;
    QPushButton *m_runButton = nullptr;
    QPushButton *m_cancelButton = nullptr;
    QProgressBar *m_progress = nullptr;
    QLabel *m_progressLabel = nullptr;
    QLabel *m_status = nullptr;
    QTableView *m_table = nullptr;
    Fp8ResultsModel *m_model = nullptr;
    QWidget *m_plotArea = nullptr;
    QHBoxLayout *m_plotLayout = nullptr;
    QSplitter *m_splitter = nullptr;
    QList<QCustomPlot *> m_plots;

    QPointer<launcher::AccelCommand> m_command;
    std::unique_ptr<QTemporaryDir> m_runFolder;
    QString m_outputDirectory;
    QByteArray m_errorLine; // stderr not yet ended by a newline
    QString m_lastErrorLine;
};

} // namespace accel::app
