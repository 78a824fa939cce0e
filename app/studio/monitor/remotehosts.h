// The hosts the studio lists and follows runs on: one Host per destination (launcher/hostfactory), made at first
// use and kept (its session is reused by every command: run listings, accel tail, accel stop).
// The SSH folder, known_hosts and the accel there are accel's own ($ACCEL_SSH_DIR, else ~/.ssh;
// $ACCEL_REMOTE_BIN, else accel on the host's PATH), so a host checked on the Hardware page's
// Cluster tab is trusted here too; an unknown host key is refused, never accepted here.
#pragma once

#include "launcher/hostfactory.h"

#include <QObject>

#include <map>
#include <memory>

namespace accel::app {

class RemoteHosts : public QObject {
    Q_OBJECT
public:
    explicit RemoteHosts(QObject *parent = nullptr);
    ~RemoteHosts() override; // stops the commands still running there

    launcher::Host *host(const QString &destination);
    // Applies to hosts made from now on (tests: a shorter timeout or stop grace).
    void setTimeout(int milliseconds) { m_timeoutMs = milliseconds; }

private:
    std::map<QString, std::unique_ptr<launcher::Host>> m_hosts;
    int m_timeoutMs = 15000;
};

} // namespace accel::app
