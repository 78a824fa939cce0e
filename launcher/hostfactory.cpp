#include "launcher/hostfactory.h"

namespace accel::launcher {

bool isLocalDestination(const QString &destination)
{
    return destination.trimmed() == QLatin1String(kLocalDestination);
}

std::unique_ptr<Host> makeHost(const SshHostOptions &options)
{
    if (isLocalDestination(options.destination))
        return std::make_unique<LocalHost>(options.accelProgram);
    return std::make_unique<SshHost>(options);
}

} // namespace accel::launcher
