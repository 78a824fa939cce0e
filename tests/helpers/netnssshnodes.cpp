#include "tests/helpers/netnssshnodes.h"

#include <QDir>
#include <QFile>

namespace accel::test {

NetnsSshNodes::NetnsSshNodes(int nodes) : m_testbed(nodes) {}

NetnsSshNodes::~NetnsSshNodes()
{
    m_servers.clear();
}

QString NetnsSshNodes::makeNetwork()
{
    if (const QString reason = SshTestServer::unavailableReason(); !reason.isEmpty())
        return reason;
    return m_testbed.start();
}

QString NetnsSshNodes::startServers()
{
    QByteArray config;
    QByteArray knownHosts;
    for (int node = 0; node < m_testbed.nodes(); ++node) {
        auto server = std::make_unique<SshTestServer>();
        server->setNetworkNamespace(m_testbed.nodeNamespace(node), m_testbed.nodeAddress(node));
        if (auto entries = m_sessionEnvironment.find(node); entries != m_sessionEnvironment.end())
            server->setSessionEnvironment(entries->second);
        if (const QString error = server->start(); !error.isEmpty())
            return QStringLiteral("node %1: %2").arg(node).arg(error);
        config += QStringLiteral("Host node%1\n  HostName %2\n  User %3\n  IdentityFile %4\n")
                      .arg(node)
                      .arg(m_testbed.nodeAddress(node), server->user(),
                           QDir(server->clientDirectory()).filePath(QStringLiteral("id_ed25519")))
                      .toUtf8();
        knownHosts += server->knownHostsLine().toUtf8() + '\n';
        m_servers.push_back(std::move(server));
    }
    for (const auto &[name, content] :
         {std::pair{QStringLiteral("config"), config}, std::pair{QStringLiteral("known_hosts"), knownHosts}}) {
        QFile file(m_client.filePath(name));
        if (!file.open(QIODevice::WriteOnly) || file.write(content) != content.size())
            return QStringLiteral("cannot write %1").arg(file.fileName());
    }
    return {};
}

} // namespace accel::test
