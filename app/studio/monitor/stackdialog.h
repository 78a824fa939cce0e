// The hang autopsy in the studio (docs/hang-autopsy.md): the Runs page's "Capture stacks" runs
// `accel stack RUN` where the run lives (locally, or over SSH on the run's host) and this window
// shows what it printed: every rank's stack, grouped by identical stacks.
#pragma once

#include <QDialog>

class QLabel;
class QPlainTextEdit;

namespace accel::launcher {
class HostCommand;
struct AccelOutcome;
} // namespace accel::launcher

namespace accel::app {

class StackDialog : public QDialog {
    Q_OBJECT
public:
    // Shows `command` (an `accel stack` already started; the dialog takes it over) for run `runId`.
    StackDialog(launcher::HostCommand *command, const QString &runId, QWidget *parent = nullptr);

    QString reportText() const;

private:
    void onDone(const launcher::AccelOutcome &outcome);

    QLabel *m_status = nullptr;
    QPlainTextEdit *m_text = nullptr;
};

} // namespace accel::app
