#include "app/studio/monitor/remotehosts.h"

namespace accel::app {

RemoteHosts::RemoteHosts(QObject *parent) : QObject(parent) {}

RemoteHosts::~RemoteHosts() = default;

launcher::Host *RemoteHosts::host(const QString &destination)
{
    auto it = m_hosts.find(destination);
    if (it == m_hosts.end()) {
        launcher::SshHostOptions options;
        options.destination = destination;
        options.timeoutMs = m_timeoutMs;
        options.stopGraceMs = 1000;
        it = m_hosts.emplace(destination, launcher::makeHost(options)).first;
    }
    return it->second.get();
}

} // namespace accel::app
