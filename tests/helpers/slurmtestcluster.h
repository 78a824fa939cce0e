// SlurmTestCluster: a single-node SLURM cluster for tests (Debian's slurm-wlm and munge): munged
// with a key made for the test, slurmctld and slurmd, all started in the foreground as children of
// the test (no systemd; CI containers run as root), configured in a folder the test gives: free
// loopback ports, SlurmctldHost=localhost, NodeName=localhost CPUs=2, one partition "debug",
// proctrack/linuxproc, task/none, no cgroups, accounting storage off and the job completion log
// (jobcomp/filetxt) on, state and spool in that folder. start() sets SLURM_CONF for this process;
// remote commands need it too (e.g. --remote_env SLURM_CONF=...). stop() (and the destructor)
// ends the daemons: SIGTERM, then SIGKILL.
//
// startNodes() makes a multi-node cluster instead: slurmctld in this network namespace, reached at
// the testbed's bridge address (SlurmctldHost=<this host's name>(<bridge address>)), and one
// `slurmd -D -N node<K>` in each node's network namespace (NodeName=node<K>, NodeAddr = the node's
// address, the same port in every namespace; spool, pid and log files per node through %n). Each
// slurmd runs in its own mount namespace where /etc/hosts names node0, node1, ... (the batch
// scripts resolve node names), entered with nsenter so /sys (and the cgroup folders slurmd looks
// for) stays this host's. munged's socket is a path, so every node uses the same one.
#pragma once

#include "tests/helpers/testsupport.h"

#include <QProcess>
#include <QString>

#include <memory>
#include <vector>

namespace accel::test {

class NetnsTestbed;
class SshTestServer;

class SlurmTestCluster {
public:
    SlurmTestCluster() = default;
    ~SlurmTestCluster();
    SlurmTestCluster(const SlurmTestCluster &) = delete;
    SlurmTestCluster &operator=(const SlurmTestCluster &) = delete;

    // Empty when sinfo reports the node idle; otherwise why not (a program missing, or the
    // daemons' last output lines). Tests QSKIP with it.
    QString start(const QString &folder);
    // The multi-node cluster on the nodes of `testbed` (started; it must outlive the cluster).
    // Empty when sinfo reports every node idle; otherwise why not.
    QString startNodes(const QString &folder, const NetnsTestbed &testbed);
    void stop();
    // Cancels every job of the cluster and waits (up to 30 s) until none is pending or running.
    void cancelAll();

    QString conf() const { return m_conf; }
    // `accel slurm ARGUMENTS` run by `accel` (this build's) through the test sshd `server`, with
    // this cluster's SLURM_CONF for the commands on the login node.
    ProcessResult runCli(const SshTestServer &server, const QString &accel, const QStringList &arguments,
                         int timeoutMs = 60000) const;
    // The SLURM programs' folders: /usr/sbin, /usr/bin ...
    static QString findProgram(const QString &name);

private:
    // Writes the key and slurm.conf (`controllerHost`, `nodeLines` and `nodeNames` describe the
    // nodes; `perNodeFiles` adds %n to the slurmd files), starts munged and slurmctld.
    QString startController(const QString &folder, const QString &controllerHost, const QString &nodeLines,
                            const QString &nodeNames, bool perNodeFiles);
    QString waitForIdle(int nodes);

    QString m_conf;
    QProcess m_munged;
    QProcess m_controller;
    std::vector<std::unique_ptr<QProcess>> m_nodes;
};

// A tiny gpt job for the SLURM tests in parent/<name>, with its own corpus (the folder's path marks
// the job's processes): returns the path of its job.yaml, or an empty string if a file could not
// be written.
QString writeTinyGptJob(const QString &parent, const QString &name, int maxSteps, int timeoutS);

} // namespace accel::test
