// SlurmTestCluster: a single-node SLURM cluster for tests (Debian's slurm-wlm and munge): munged
// with a key made for the test, slurmctld and slurmd, all started in the foreground as children of
// the test (no systemd; CI containers run as root), configured in a folder the test gives: free
// loopback ports, SlurmctldHost=localhost, NodeName=localhost CPUs=2, one partition "debug",
// proctrack/linuxproc, task/none, no cgroups, accounting storage off and the job completion log
// (jobcomp/filetxt) on, state and spool in that folder. start() sets SLURM_CONF for this process;
// remote commands need it too (e.g. --remote_env SLURM_CONF=...). stop() (and the destructor)
// ends the daemons: SIGTERM, then SIGKILL.
#pragma once

#include <QProcess>
#include <QString>

namespace accel::test {

class SlurmTestCluster {
public:
    SlurmTestCluster() = default;
    ~SlurmTestCluster();
    SlurmTestCluster(const SlurmTestCluster &) = delete;
    SlurmTestCluster &operator=(const SlurmTestCluster &) = delete;

    // Empty when sinfo reports the node idle; otherwise why not (a program missing, or the
    // daemons' last output lines). Tests QSKIP with it.
    QString start(const QString &folder);
    void stop();
    // Cancels every job of the cluster and waits (up to 30 s) until none is pending or running.
    void cancelAll();

    QString conf() const { return m_conf; }
    // The SLURM programs' folders: /usr/sbin, /usr/bin ...
    static QString findProgram(const QString &name);

private:
    QString m_conf;
    QProcess m_munged;
    QProcess m_controller;
    QProcess m_node;
};

} // namespace accel::test
