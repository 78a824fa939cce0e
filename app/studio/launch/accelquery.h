// One `accel ... --json` question a Launch page panel asks again whenever its inputs change (the
// memory prediction, the data preview): debounced, never two at once (when the inputs changed while
// one ran, its answer is dropped and the question asked anew), with a timeout; the command runs in
// its own process group (launcher::AccelCommand), killed with this object.
//
//     connect(query, &AccelQuery::due, panel, [=] { query->run({"estimate-memory", job, "--json"}); });
//     connect(query, &AccelQuery::answered, panel, &Panel::show);
//     connect(query, &AccelQuery::failed, panel, &Panel::showError);
//     query->schedule(); // on every change of the inputs
#pragma once

#include <QObject>
#include <QStringList>
#include <QTimer>

namespace accel::launcher {
class AccelCommand;
}

namespace accel::app {

class AccelQuery : public QObject {
    Q_OBJECT
public:
    AccelQuery(int debounceMs, int timeoutMs, QObject *parent = nullptr);
    ~AccelQuery() override;

    void setProgram(const QString &program) { m_program = program; }
    void schedule();                        // the inputs changed: due() after the debounce
    void run(const QStringList &arguments); // from due(): asks `accel arguments...` now
    bool isRunning() const { return m_command != nullptr; }
    bool isPending() const { return m_debounce.isActive() || m_command != nullptr; }

Q_SIGNALS:
    void due();                                      // time to ask (or to say why it cannot be asked)
    void answered(const QByteArray &standardOutput); // the command succeeded
    void failed(const QString &message);             // accel's standard error, else how it ended

private:
    void fire();

    QString m_program;
    QTimer m_debounce;
    int m_timeoutMs = 0;
    launcher::AccelCommand *m_command = nullptr;
    bool m_again = false; // the inputs changed while the command ran
};

} // namespace accel::app
