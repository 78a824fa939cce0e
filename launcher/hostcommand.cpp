#include "launcher/hostcommand.h"

#include <cstring>

namespace accel::launcher {

int AccelOutcome::shellCode() const
{
    if (failedToStart)
        return 127;
    if (timedOut)
        return 124;
    return signal ? 128 + signal : exitCode;
}

QString AccelOutcome::describe() const
{
    if (failedToStart)
        return QStringLiteral("failed to start: ") + error;
    if (timedOut)
        return error.isEmpty() ? QStringLiteral("timed out") : QStringLiteral("timed out: ") + error;
    if (cancelled)
        return QStringLiteral("cancelled");
    if (signal) {
        const char *name = sigabbrev_np(signal);
        return QStringLiteral("signal %1 (SIG%2)").arg(signal).arg(QString::fromLatin1(name ? name : "?"));
    }
    if (!error.isEmpty())
        return error;
    return QStringLiteral("exit %1").arg(exitCode);
}

} // namespace accel::launcher
