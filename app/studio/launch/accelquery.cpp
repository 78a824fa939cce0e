#include "app/studio/launch/accelquery.h"

#include "launcher/accelcommand.h"

namespace accel::app {

AccelQuery::AccelQuery(int debounceMs, int timeoutMs, QObject *parent) : QObject(parent), m_timeoutMs(timeoutMs)
{
    m_program = launcher::AccelCommand::defaultProgram();
    m_debounce.setSingleShot(true);
    m_debounce.setInterval(debounceMs);
    connect(&m_debounce, &QTimer::timeout, this, &AccelQuery::fire);
}

// A running command is killed with its process group (AccelCommand's destructor).
AccelQuery::~AccelQuery() = default;

void AccelQuery::schedule()
{
    m_debounce.start();
}

void AccelQuery::fire()
{
    if (m_command) {
        m_again = true; // its answer would be stale: ask again when it is in
        return;
    }
    Q_EMIT due();
}

void AccelQuery::run(const QStringList &arguments)
{
    if (m_command) {
        m_again = true;
        return;
    }
    m_command = new launcher::AccelCommand(this);
    m_command->setProgram(m_program);
    m_command->setTimeout(m_timeoutMs);
    connect(m_command, &launcher::AccelCommand::done, this, [this](const launcher::AccelOutcome &outcome) {
        m_command->deleteLater();
        m_command = nullptr;
        if (m_again) {
            m_again = false;
            Q_EMIT due();
        } else if (outcome.succeeded()) {
            Q_EMIT answered(outcome.standardOutput);
        } else {
            const QByteArray error = outcome.standardError.trimmed();
            Q_EMIT failed(error.isEmpty() ? outcome.describe() : QString::fromUtf8(error));
        }
    });
    m_command->start(arguments);
}

} // namespace accel::app
