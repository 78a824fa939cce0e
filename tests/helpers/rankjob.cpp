#include "tests/helpers/rankjob.h"

#include <QProcessEnvironment>
#include <QTcpServer>

namespace accel::test {

int freeLoopbackPort()
{
    QTcpServer server;
    server.listen(QHostAddress::LocalHost, 0);
    return server.serverPort();
}

RankJobRun::RankJobRun(const RankJob &job) : m_job(job), m_port(job.port != 0 ? job.port : freeLoopbackPort())
{
    const int local = m_job.localWorldSize > 0 ? m_job.localWorldSize : m_job.worldSize;
    const bool rankVariables = m_job.worldSize > 1 || m_job.rankVariablesWhenAlone;
    for (int rank = 0; rank < m_job.worldSize; ++rank) {
        if (m_job.onlyRanks.isEmpty() || m_job.onlyRanks.contains(rank))
            m_ranks << rank;
    }
    for (int rank : m_ranks) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString &name : m_job.unset)
            env.remove(name);
        QStringList entries;
        if (rankVariables) {
            entries << QStringLiteral("RANK=%1").arg(rank) << QStringLiteral("LOCAL_RANK=%1").arg(rank % local)
                    << QStringLiteral("WORLD_SIZE=%1").arg(m_job.worldSize)
                    << QStringLiteral("LOCAL_WORLD_SIZE=%1").arg(local) << QStringLiteral("MASTER_ADDR=127.0.0.1")
                    << QStringLiteral("MASTER_PORT=%1").arg(m_port);
        }
        entries << QStringLiteral("OMP_NUM_THREADS=1") << m_job.env;
        if (m_job.rankEnv)
            entries << m_job.rankEnv(rank);
        for (const QString &entry : entries)
            env.insert(entry.section(QLatin1Char('='), 0, 0), entry.section(QLatin1Char('='), 1));
        auto process = std::make_unique<QProcess>();
        process->setProcessEnvironment(env);
        process->setProcessChannelMode(QProcess::SeparateChannels);
        if (!m_job.workingDirectory.isEmpty())
            process->setWorkingDirectory(m_job.workingDirectory);
        if (m_job.childModifier)
            process->setChildProcessModifier(m_job.childModifier);
        process->start(m_job.program, m_job.arguments);
        m_processes.push_back(std::move(process));
    }
}

RankJobRun::~RankJobRun()
{
    for (auto &process : m_processes) {
        if (process->state() != QProcess::NotRunning) {
            process->kill();
            process->waitForFinished();
        }
    }
}

QList<RankOutcome> RankJobRun::wait()
{
    QList<RankOutcome> outcomes;
    for (size_t i = 0; i < m_processes.size(); ++i) {
        QProcess &process = *m_processes[i];
        RankOutcome outcome;
        outcome.rank = m_ranks[qsizetype(i)];
        // (A program that cannot start is known only once waited for: waitForFinished() then
        // returns at once with FailedToStart.)
        if (!process.waitForFinished(m_job.timeoutMs) && process.state() != QProcess::NotRunning) {
            outcome.timedOut = true;
            process.kill();
            process.waitForFinished();
        }
        outcome.started = process.error() != QProcess::FailedToStart;
        if (outcome.started) {
            outcome.exitCode = process.exitCode();
            outcome.status = process.exitStatus();
        }
        outcome.out = QString::fromUtf8(process.readAllStandardOutput());
        outcome.err = outcome.started ? QString::fromUtf8(process.readAllStandardError())
                                      : m_job.program + QStringLiteral(": cannot start: ") + process.errorString();
        outcomes << outcome;
    }
    return outcomes;
}

QList<RankOutcome> runRankJob(const RankJob &job)
{
    return RankJobRun(job).wait();
}

QString failures(const QList<RankOutcome> &outcomes)
{
    QString text;
    for (const RankOutcome &outcome : outcomes) {
        if (!outcome.ok())
            text += (outcome.timedOut ? QStringLiteral("timed out") : QStringLiteral("exit %1").arg(outcome.exitCode)) +
                    QStringLiteral(": ") + outcome.err + QLatin1Char('\n');
    }
    return text;
}

} // namespace accel::test
