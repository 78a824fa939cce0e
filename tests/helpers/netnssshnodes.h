// NetnsSshNodes: every node of a NetnsTestbed running its own SshTestServer, and one client folder
// (point ACCEL_SSH_DIR or SshHostOptions::sshDirectory at it) whose config names the nodes node0,
// node1, ... and whose known_hosts trusts them all: a workstation and its cluster on one machine.
#pragma once

#include "tests/helpers/netnstestbed.h"
#include "tests/helpers/sshtestserver.h"

#include <QTemporaryDir>

#include <map>
#include <memory>
#include <vector>

namespace accel::test {

class NetnsSshNodes {
public:
    explicit NetnsSshNodes(int nodes);
    ~NetnsSshNodes(); // sshd's first, then the network

    // Why network namespaces cannot be made here (the test QSKIPs with it), or empty.
    QString makeNetwork();
    // Before startServers(): KEY=VALUE for every session on that node (SshTestServer::setSessionEnvironment).
    void setSessionEnvironment(int node, const QStringList &entries) { m_sessionEnvironment[node] = entries; }
    // Starts every node's sshd and writes the client folder. Returns an error or empty.
    QString startServers();

    QString clientDirectory() const { return m_client.path(); }
    QString nodeNamespace(int node) const { return m_testbed.nodeNamespace(node); }
    QString nodeAddress(int node) const { return m_testbed.nodeAddress(node); }

private:
    NetnsTestbed m_testbed;
    std::vector<std::unique_ptr<SshTestServer>> m_servers;
    QTemporaryDir m_client;
    std::map<int, QStringList> m_sessionEnvironment;
};

} // namespace accel::test
