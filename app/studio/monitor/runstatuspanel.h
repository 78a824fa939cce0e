// RunStatusPanel: the strip above the Monitor's charts for the run chosen in "Details for": its
// state (running, stopped, failed, ... each in its own colour, a stop never shown as a failure),
// progress as step of max steps with the time per step and an ETA, a triage card when the run
// failed (first error line, likely cause, fix), a one-line hint naming the tracker when a
// script logs no training metrics, and "Open in Playground" when a fine-tuning run has succeeded
// and written its model or LoRA adapter (runoutput.h).
#pragma once

#include "app/studio/monitor/failuretriage.h"
#include "app/studio/monitor/runoutput.h"

#include <QPointer>
#include <QTimer>
#include <QWidget>

class QFrame;
class QLabel;
class QProgressBar;
class QPushButton;

namespace accel::monitor {
class RunMonitor;
}

namespace accel::app {

class RunStatusPanel : public QWidget {
    Q_OBJECT
public:
    explicit RunStatusPanel(QWidget *parent = nullptr);

    // Follows this run (nullptr: none). `directory` is where its job.yaml (max steps) lives.
    void setRun(monitor::RunMonitor *run, const QString &directory);
    void refresh();

    QString state() const { return m_state; } // run.json's state, "" before it is known
    QString stateText() const;
    QString progressText() const;
    int maxSteps() const { return m_maxSteps; }
    bool isTriageShown() const;
    Triage triage() const { return m_triage; }
    bool isHintShown() const;
    QString hintText() const;

    // Where the Python tracker is (installed share folder or the source tree), empty when absent.
    static QString trackerPath();
    // The succeeded fine-tuning run's model / adapter ("Open in Playground" shown), else empty.
    RunOutput output() const { return m_output; }
    QPushButton *playgroundButton() const { return m_playground; }

Q_SIGNALS:
    void openInPlaygroundRequested(const QString &model, const QString &adapter);

private:
    void updateTriage();
    bool hasStepMetrics() const;

    QPointer<monitor::RunMonitor> m_run;
    QString m_directory;
    QString m_state;
    QString m_stateDetail;
    int m_maxSteps = 0;
    Triage m_triage;
    QLabel *m_stateChip = nullptr;
    QLabel *m_progress = nullptr;
    QProgressBar *m_bar = nullptr;
    QFrame *m_card = nullptr;
    QLabel *m_cardTitle = nullptr;
    QLabel *m_cardError = nullptr;
    QLabel *m_cardCause = nullptr;
    QLabel *m_hint = nullptr;
    QPushButton *m_playground = nullptr;
    RunOutput m_output;
    QTimer m_timer;
    QTimer m_triageTimer;
};

} // namespace accel::app
