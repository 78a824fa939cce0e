#include "launcher/host.h"

#include "launcher/accelcommand.h"

namespace accel::launcher {

LocalHost::LocalHost(QString accelProgram) : m_accelProgram(std::move(accelProgram)) {}

QString LocalHost::accelProgram() const
{
    return m_accelProgram.isEmpty() ? AccelCommand::defaultProgram() : m_accelProgram;
}

std::unique_ptr<HostCommand> LocalHost::start(const QStringList &arguments, const HostCommandOptions &options)
{
    auto command = std::make_unique<AccelCommand>();
    if (!options.program.isEmpty())
        command->setProgram(options.program);
    else if (!m_accelProgram.isEmpty())
        command->setProgram(m_accelProgram);
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const QString &entry : options.environment) {
        const qsizetype eq = entry.indexOf(QLatin1Char('='));
        if (eq > 0)
            environment.insert(entry.left(eq), entry.mid(eq + 1));
    }
    command->setEnvironment(environment);
    command->setTimeout(options.timeoutMs);
    command->setKeepOutput(options.keepOutput);
    command->start(arguments);
    return command;
}

} // namespace accel::launcher
