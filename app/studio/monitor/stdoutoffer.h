// StdoutOffer: the line above the Monitor's charts for a run that prints but logs no metrics (a
// print-only script waits for "the first step" forever otherwise). It offers to read metrics from
// the printed output (monitor/stdoutmetricsparser.h: Trainer dicts, key=value pairs with a known
// name, tqdm bars) and previews what that would read from the lines so far, so the user sees the
// result before turning it on. Output with nothing that reads as a metric is not offered.
#pragma once

#include <QPointer>
#include <QTimer>
#include <QWidget>

class QLabel;
class QPushButton;

namespace accel::monitor {
class RunMonitor;
}

namespace accel::app {

// What the stdout parser reads from these log lines (rank, text): how many samples, the keys, and
// the first few samples as "step 10: loss=2.31, accuracy=0.5".
struct StdoutPreview {
    int samples = 0;
    QStringList keys;
    QStringList examples;
};
StdoutPreview previewStdoutMetrics(const QList<std::pair<int, QString>> &lines, int maximumExamples = 3);

class StdoutOffer : public QWidget {
    Q_OBJECT
public:
    explicit StdoutOffer(QWidget *parent = nullptr);

    // The run to watch (nullptr: none) and its name; `reading`: its output is read for metrics already.
    void setRun(monitor::RunMonitor *run, const QString &label, bool reading);
    void refresh();
    QString text() const;
    StdoutPreview preview() const { return m_preview; }
    QPushButton *acceptButton() const { return m_accept; }

Q_SIGNALS:
    void accepted(); // read this run's metrics from its output

private:
    QPointer<monitor::RunMonitor> m_run;
    QString m_label;
    bool m_reading = false;
    StdoutPreview m_preview;
    QLabel *m_text = nullptr;
    QPushButton *m_accept = nullptr;
    QTimer m_timer;
};

} // namespace accel::app
