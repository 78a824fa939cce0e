#include "tests/helpers/slurmtestcluster.h"

#include "tests/helpers/sshtestserver.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QThread>

#include <functional>

namespace accel::test {

namespace {

bool writeFile(const QString &path, const QByteArray &content)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(content) == content.size();
}

// Polls every 100 ms until `condition` holds or `timeoutMs` passed.
bool waitUntil(const std::function<bool()> &condition, int timeoutMs)
{
    QElapsedTimer clock;
    clock.start();
    while (!condition()) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QThread::msleep(100);
    }
    return true;
}

QString output(const QString &program, const QStringList &arguments)
{
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(program, arguments);
    if (!process.waitForFinished(10000)) {
        process.kill();
        process.waitForFinished();
    }
    return QString::fromLocal8Bit(process.readAll()).trimmed();
}

} // namespace

SlurmTestCluster::~SlurmTestCluster()
{
    stop();
}

QString SlurmTestCluster::findProgram(const QString &name)
{
    return QStandardPaths::findExecutable(name, {QStringLiteral("/usr/sbin"), QStringLiteral("/usr/bin"),
                                                 QStringLiteral("/sbin"), QStringLiteral("/bin")});
}

QString SlurmTestCluster::start(const QString &folder)
{
    for (const char *program : {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "sacct", "scancel", "sinfo"}) {
        if (findProgram(QLatin1String(program)).isEmpty())
            return QStringLiteral("%1 is not installed (Debian: slurmctld slurmd slurm-client munge)")
                .arg(QLatin1String(program));
    }
    QDir dir(folder);
    for (const char *sub : {"munge", "state", "spool", "log"})
        dir.mkpath(QLatin1String(sub));
    QFile::setPermissions(dir.filePath("munge"),
                          QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    QByteArray key(1024, '\0');
    for (char &c : key)
        c = static_cast<char>(QRandomGenerator::global()->bounded(256));
    if (!writeFile(dir.filePath("munge/munge.key"), key))
        return QStringLiteral("cannot write the munge key in %1").arg(folder);
    QFile::setPermissions(dir.filePath("munge/munge.key"), QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    const QString user = output(QStringLiteral("id"), {QStringLiteral("-un")});
    const int controllerPort = SshTestServer::freeLoopbackPort();
    int nodePort = SshTestServer::freeLoopbackPort();
    while (nodePort == controllerPort)
        nodePort = SshTestServer::freeLoopbackPort();
    const QString socket = dir.filePath("munge/munge.socket");
    m_conf = dir.filePath("slurm.conf");
    const QString conf = QStringLiteral("ClusterName=accel-test\n"
                                        "SlurmctldHost=localhost\n"
                                        "SlurmctldPort=%1\nSlurmdPort=%2\n"
                                        "SlurmUser=%3\nSlurmdUser=%3\n"
                                        "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=%4\n"
                                        "StateSaveLocation=%5/state\nSlurmdSpoolDir=%5/spool\n"
                                        "SlurmctldPidFile=%5/slurmctld.pid\nSlurmdPidFile=%5/slurmd.pid\n"
                                        "SlurmctldLogFile=%5/log/slurmctld.log\nSlurmdLogFile=%5/log/slurmd.log\n"
                                        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                                        "JobAcctGatherType=jobacct_gather/none\n"
                                        "AccountingStorageType=accounting_storage/none\n"
                                        "JobCompType=jobcomp/filetxt\nJobCompLoc=%5/jobcomp.txt\n"
                                        "SchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
                                        "SelectTypeParameters=CR_CPU\n"
                                        "MpiDefault=none\nMailProg=/bin/true\nReturnToService=2\n"
                                        "KillWait=5\nMinJobAge=600\n"
                                        "NodeName=localhost CPUs=2 State=UNKNOWN\n"
                                        "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE "
                                        "State=UP\n")
                             .arg(controllerPort)
                             .arg(nodePort)
                             .arg(user.isEmpty() ? QStringLiteral("root") : user, socket, folder);
    if (!writeFile(m_conf, conf.toUtf8()))
        return QStringLiteral("cannot write %1").arg(m_conf);
    qputenv("SLURM_CONF", m_conf.toLocal8Bit());

    m_munged.setProcessChannelMode(QProcess::MergedChannels);
    m_munged.start(findProgram("munged"),
                   {"-F", "-f", "--key-file=" + dir.filePath("munge/munge.key"), "--socket=" + socket,
                    "--pid-file=" + dir.filePath("munge/munged.pid"), "--log-file=" + dir.filePath("log/munged.log"),
                    "--seed-file=" + dir.filePath("munge/seed")});
    if (!waitUntil([&] { return QFile::exists(socket) || m_munged.state() == QProcess::NotRunning; }, 10000) ||
        m_munged.state() == QProcess::NotRunning)
        return QStringLiteral("munged did not start: ") + QString::fromLocal8Bit(m_munged.readAll().right(800));
    m_controller.setProcessChannelMode(QProcess::MergedChannels);
    m_controller.start(findProgram("slurmctld"), {"-D", "-f", m_conf});
    m_node.setProcessChannelMode(QProcess::MergedChannels);
    m_node.start(findProgram("slurmd"), {"-D", "-f", m_conf});
    QString last;
    const auto down = [this] {
        return m_controller.state() == QProcess::NotRunning || m_node.state() == QProcess::NotRunning;
    };
    waitUntil(
        [&] {
            if (down())
                return true;
            last = output(findProgram("sinfo"), {"-h", "-o", "%T"});
            return last == QLatin1String("idle");
        },
        30000);
    if (down() || last != QLatin1String("idle"))
        return QStringLiteral("the SLURM daemons did not come up (sinfo: '%1'):\nslurmctld: %2\nslurmd: %3")
            .arg(last, QString::fromLocal8Bit(m_controller.readAll().right(1200)),
                 QString::fromLocal8Bit(m_node.readAll().right(1200)));
    return {};
}

void SlurmTestCluster::cancelAll()
{
    if (m_controller.state() == QProcess::NotRunning)
        return;
    output(findProgram("scancel"), {QStringLiteral("--full"), QStringLiteral("--user=") + output("id", {"-un"})});
    waitUntil(
        [] {
            return output(findProgram("squeue"), {"-h", "-t", "PENDING,RUNNING,COMPLETING,CONFIGURING", "-o", "%i"})
                .isEmpty();
        },
        30000);
}

void SlurmTestCluster::stop()
{
    for (QProcess *process : {&m_node, &m_controller, &m_munged}) {
        if (process->state() == QProcess::NotRunning)
            continue;
        process->terminate();
        if (!process->waitForFinished(10000)) {
            process->kill();
            process->waitForFinished(5000);
        }
    }
}

} // namespace accel::test
