// Jobs of real rank processes on this machine for the multi-process tests: every rank gets the
// variables torchrun sets (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
// MASTER_PORT) and OMP_NUM_THREADS=1, then the job's own variables.
#pragma once

#include <QList>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <vector>

namespace accel::test {

// A loopback TCP port nobody listened on a moment ago.
int freeLoopbackPort();

struct RankJob {
    QString program;
    QStringList arguments;
    int worldSize = 1;
    int localWorldSize = 0;                       // ranks per pretend machine (LOCAL_RANK = rank % it); 0: all on one
    bool rankVariablesWhenAlone = true;           // false: a one-rank job is a plain process, without them
    QStringList env;                              // NAME=value on every rank, after the rank variables
    QStringList unset;                            // names removed from the inherited environment
    std::function<QStringList(int rank)> rankEnv; // NAME=value for one rank, last
    QString workingDirectory;
    QList<int> onlyRanks;                // start only these (the others are missing on purpose); empty: all
    int port = 0;                        // MASTER_PORT; 0: a free one
    int timeoutMs = 120000;              // how long wait() gives each rank before killing it
    std::function<void()> childModifier; // run in each rank's child before exec (rlimits)
};

struct RankOutcome {
    int rank = 0;
    int exitCode = -1;
    QProcess::ExitStatus status = QProcess::CrashExit;
    bool started = false, timedOut = false;
    QString out, err;
    bool ok() const { return started && !timedOut && status == QProcess::NormalExit && exitCode == 0; }
};

// The started ranks of a job; wait() collects them in rank order.
class RankJobRun {
public:
    explicit RankJobRun(const RankJob &job);
    ~RankJobRun();
    RankJobRun(const RankJobRun &) = delete;
    RankJobRun &operator=(const RankJobRun &) = delete;

    int port() const { return m_port; }
    // In the order started (onlyRanks, or rank 0 up).
    const std::vector<std::unique_ptr<QProcess>> &processes() const { return m_processes; }
    // Waits for every rank up to the job's timeout each; a rank still running then is killed.
    QList<RankOutcome> wait();

private:
    RankJob m_job;
    int m_port = 0;
    QList<int> m_ranks;
    std::vector<std::unique_ptr<QProcess>> m_processes;
};

// Starts the job and waits for it.
QList<RankOutcome> runRankJob(const RankJob &job);

// Every failed rank, in rank order, as "exit C: <stderr>" (or "timed out: <stderr>"); empty when all are ok.
QString failures(const QList<RankOutcome> &outcomes);

} // namespace accel::test
