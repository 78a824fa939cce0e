#include "tests/helpers/slurmtestcluster.h"

#include "tests/helpers/netnstestbed.h"
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

QString SlurmTestCluster::startController(const QString &folder, const QString &controllerHost,
                                          const QString &nodeLines, const QString &nodeNames, bool perNodeFiles)
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
    // %n: the node's name, so that slurmds of several nodes on one file system keep apart.
    const QString node = perNodeFiles ? QStringLiteral("-%n") : QString();
    const QString conf = QStringLiteral("ClusterName=accel-test\n"
                                        "SlurmctldHost=%6\n"
                                        "SlurmctldPort=%1\nSlurmdPort=%2\n"
                                        "SlurmUser=%3\nSlurmdUser=%3\n"
                                        "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=%4\n"
                                        "StateSaveLocation=%5/state\nSlurmdSpoolDir=%5/spool%7\n"
                                        "SlurmctldPidFile=%5/slurmctld.pid\nSlurmdPidFile=%5/slurmd%7.pid\n"
                                        "SlurmctldLogFile=%5/log/slurmctld.log\nSlurmdLogFile=%5/log/slurmd%7.log\n"
                                        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                                        "JobAcctGatherType=jobacct_gather/none\n"
                                        "AccountingStorageType=accounting_storage/none\n"
                                        "JobCompType=jobcomp/filetxt\nJobCompLoc=%5/jobcomp.txt\n"
                                        "SchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
                                        "SelectTypeParameters=CR_CPU\n"
                                        "MpiDefault=none\nMailProg=/bin/true\nReturnToService=2\n"
                                        "KillWait=5\nMinJobAge=600\n"
                                        "%8"
                                        "PartitionName=debug Nodes=%9 Default=YES MaxTime=INFINITE "
                                        "State=UP\n")
                             .arg(controllerPort)
                             .arg(nodePort)
                             .arg(user.isEmpty() ? QStringLiteral("root") : user, socket, folder, controllerHost, node,
                                  nodeLines, nodeNames);
    if (!writeFile(m_conf, conf.toUtf8()))
        return QStringLiteral("cannot write %1").arg(m_conf);
    qputenv("SLURM_CONF", m_conf.toLocal8Bit());

    m_munged.setProcessChannelMode(QProcess::MergedChannels);
    killWithTest(m_munged);
    m_munged.start(findProgram("munged"),
                   {"-F", "-f", "--key-file=" + dir.filePath("munge/munge.key"), "--socket=" + socket,
                    "--pid-file=" + dir.filePath("munge/munged.pid"), "--log-file=" + dir.filePath("log/munged.log"),
                    "--seed-file=" + dir.filePath("munge/seed")});
    if (!waitUntil([&] { return QFile::exists(socket) || m_munged.state() == QProcess::NotRunning; }, 10000) ||
        m_munged.state() == QProcess::NotRunning)
        return QStringLiteral("munged did not start: ") + QString::fromLocal8Bit(m_munged.readAll().right(800));
    m_controller.setProcessChannelMode(QProcess::MergedChannels);
    killWithTest(m_controller);
    m_controller.start(findProgram("slurmctld"), {"-D", "-f", m_conf});
    return {};
}

QString SlurmTestCluster::waitForIdle(int nodes)
{
    QString last;
    const auto down = [this] {
        bool anyDown = m_controller.state() == QProcess::NotRunning;
        for (const auto &node : m_nodes)
            anyDown = anyDown || node->state() == QProcess::NotRunning;
        return anyDown;
    };
    const QString idle = QStringList(nodes, QStringLiteral("idle")).join(QLatin1Char('\n'));
    waitUntil(
        [&] {
            if (down())
                return true;
            last = output(findProgram("sinfo"), {"-h", "-N", "-o", "%T"});
            return last == idle;
        },
        30000);
    if (!down() && last == idle)
        return {};
    QString text = QStringLiteral("the SLURM daemons did not come up (sinfo: '%1'):\nslurmctld: %2")
                       .arg(last, QString::fromLocal8Bit(m_controller.readAll().right(1200)));
    for (size_t node = 0; node < m_nodes.size(); ++node)
        text += QStringLiteral("\nslurmd %1: %2")
                    .arg(node)
                    .arg(QString::fromLocal8Bit(m_nodes[node]->readAll().right(1200)));
    return text;
}

QString SlurmTestCluster::start(const QString &folder)
{
    if (QString error = startController(folder, QStringLiteral("localhost"),
                                        QStringLiteral("NodeName=localhost CPUs=2 State=UNKNOWN\n"),
                                        QStringLiteral("localhost"), false);
        !error.isEmpty())
        return error;
    auto node = std::make_unique<QProcess>();
    node->setProcessChannelMode(QProcess::MergedChannels);
    killWithTest(*node);
    node->start(findProgram("slurmd"), {"-D", "-f", m_conf});
    m_nodes.push_back(std::move(node));
    return waitForIdle(1);
}

QString SlurmTestCluster::startNodes(const QString &folder, const NetnsTestbed &testbed)
{
    for (const char *program : {"nsenter", "unshare", "mount"}) {
        if (findProgram(QLatin1String(program)).isEmpty())
            return QStringLiteral("%1 is not installed (Debian: util-linux / mount)").arg(QLatin1String(program));
    }
    QString nodeLines;
    QStringList names;
    QByteArray hosts = "127.0.0.1 localhost\n";
    for (int node = 0; node < testbed.nodes(); ++node) {
        const QString name = QStringLiteral("node%1").arg(node);
        names << name;
        nodeLines +=
            QStringLiteral("NodeName=%1 NodeAddr=%2 CPUs=2 State=UNKNOWN\n").arg(name, testbed.nodeAddress(node));
        hosts += (testbed.nodeAddress(node) + QLatin1Char(' ') + name + QLatin1Char('\n')).toUtf8();
    }
    // slurmctld's own check wants this host's name; the nodes reach it at the bridge's address.
    const QString controller = QStringLiteral("%1(%2)").arg(output(QStringLiteral("hostname"), {QStringLiteral("-s")}),
                                                            testbed.bridgeAddress());
    if (QString error = startController(folder, controller, nodeLines, names.join(QLatin1Char(',')), true);
        !error.isEmpty())
        return error;
    const QDir dir(folder);
    const QString hostName = output(QStringLiteral("hostname"), {});
    for (int node = 0; node < testbed.nodes(); ++node) {
        // On each node this host's name is the node's own address, as on a real node (gloo binds
        // to the address its host name resolves to).
        const QString hostsFile = dir.filePath(QStringLiteral("hosts-node%1").arg(node));
        if (!writeFile(hostsFile, hosts + (testbed.nodeAddress(node) + QLatin1Char(' ') + hostName + '\n').toUtf8()))
            return QStringLiteral("cannot write %1").arg(hostsFile);
        dir.mkpath(QStringLiteral("spool-node%1").arg(node));
        // A private mount namespace whose /etc/hosts names the nodes, the node's network namespace
        // (nsenter keeps this host's /sys), then slurmd itself (every step execs: its pid is slurmd's).
        const QString script = QStringLiteral("mount --bind \"$1\" /etc/hosts && exec nsenter --net=\"/run/netns/$2\" "
                                              "\"$3\" -D -N \"$4\" -f \"$5\"");
        auto process = std::make_unique<QProcess>();
        process->setProcessChannelMode(QProcess::MergedChannels);
        killWithTest(*process); // kept through each exec down to slurmd
        process->start(findProgram("unshare"),
                       {"--mount", "--propagation", "private", "sh", "-c", script, "slurmd-node",
                        dir.filePath(QStringLiteral("hosts-node%1").arg(node)), testbed.nodeNamespace(node),
                        findProgram("slurmd"), names.at(node), m_conf});
        m_nodes.push_back(std::move(process));
    }
    return waitForIdle(testbed.nodes());
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
    std::vector<QProcess *> processes;
    for (const auto &node : m_nodes)
        processes.push_back(node.get());
    processes.push_back(&m_controller);
    processes.push_back(&m_munged);
    for (QProcess *process : processes) {
        if (process->state() == QProcess::NotRunning)
            continue;
        process->terminate();
        if (!process->waitForFinished(10000)) {
            process->kill();
            process->waitForFinished(5000);
        }
    }
}

ProcessResult SlurmTestCluster::runCli(const SshTestServer &server, const QString &accel, const QStringList &arguments,
                                       int timeoutMs) const
{
    const QStringList words = QStringList{QStringLiteral("slurm")} + arguments +
                              QStringList{QStringLiteral("--remote_env"), QStringLiteral("SLURM_CONF=") + m_conf};
    return runAccel(words, timeoutMs, {},
                    {QStringLiteral("ACCEL_SSH_DIR=") + server.clientDirectory(),
                     QStringLiteral("ACCEL_REMOTE_BIN=") + accel, QStringLiteral("SSH_AUTH_SOCK")});
}

QString writeTinyGptJob(const QString &parent, const QString &name, int maxSteps, int timeoutS)
{
    const QString folder = QDir(parent).filePath(name);
    QByteArray corpus;
    QRandomGenerator text(1234);
    for (int i = 0; i < 4000; ++i)
        corpus += QByteArray("the quick brown fox jumps over a lazy dog ").mid(text.bounded(30), 12);
    const QByteArray job = QStringLiteral("recipe: gpt\nname: %1\nseed: 7\noutput_dir: %2/out\n"
                                          "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16, dropout: 0.0}\n"
                                          "data: {corpus: %2/corpus.txt, eval_fraction: 0.05}\n"
                                          "training:\n  max_steps: %3\n  batch_size: 4\n  learning_rate: 1.0e-3\n"
                                          "  log_every: 5\n  timeout_s: %4\n")
                               .arg(name, folder)
                               .arg(maxSteps)
                               .arg(timeoutS)
                               .toUtf8();
    QFile corpusFile(folder + QStringLiteral("/corpus.txt"));
    QFile jobFile(folder + QStringLiteral("/job.yaml"));
    if (!QDir().mkpath(folder) || !corpusFile.open(QIODevice::WriteOnly) || corpusFile.write(corpus) != corpus.size() ||
        !jobFile.open(QIODevice::WriteOnly) || jobFile.write(job) != job.size())
        return {};
    return jobFile.fileName();
}

} // namespace accel::test
