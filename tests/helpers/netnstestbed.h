// NetnsTestbed: a few "hosts" for multi-node tests on one machine: one network namespace per node
// (ip netns), each joined by a veth pair to a bridge in this namespace, with its own address on a
// private /24 made for the test (10.213.S.0/24, S from the process id, or the next one no interface
// uses; the bridge is .1, node i is .10+i). Processes started with `ip netns exec` see only their node's network.
// Everything is removed again by the destructor. Needs root and a kernel that allows network namespaces.
#pragma once

#include <QString>
#include <QStringList>

namespace accel::test {

class NetnsTestbed {
public:
    explicit NetnsTestbed(int nodes);
    ~NetnsTestbed(); // removes the namespaces, their veth pairs and the bridge

    // Makes everything; returns why it cannot (not root, no ip(8), namespaces refused) or empty.
    QString start();

    int nodes() const { return m_nodes; }
    QString nodeNamespace(int node) const;
    QString nodeAddress(int node) const;
    QString bridgeAddress() const; // this namespace's address on the nodes' subnet

private:
    QString ip(const QStringList &arguments); // error text or empty
    static bool subnetInUse(int subnet);
    void remove();

    int m_nodes;
    int m_subnet;
    QString m_tag;
    QStringList m_created; // namespaces made so far
    bool m_bridge = false;
};

} // namespace accel::test
