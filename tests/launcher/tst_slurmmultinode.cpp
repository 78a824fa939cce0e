// Multi-node SLURM jobs followed on every node. A real 2-node SLURM cluster the test starts: two
// network namespaces (NetnsTestbed) joined by a bridge, slurmctld in this namespace, one slurmd per
// node namespace (SlurmTestCluster::startNodes), munged shared through its socket path, reached by
// `accel slurm` through a real sshd on loopback (the login node). A 2-node x 2-rank gpt job is
// submitted, followed with `accel slurm follow --json` (every node's run directory, one accel.tail
// stream) and ends COMPLETED; a long one is cancelled with no process left in either node's
// namespace; a job whose second node never starts its run is followed on node 0 and node 1 is
// named. Without root, namespaces or the daemons those cases skip with the reason; `accel tail` on a
// folder of node run directories and the path checks run anyway.
#include "launcher/slurm.h"
#include "tests/helpers/netnstestbed.h"
#include "tests/helpers/slurmtestcluster.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"
#include "tests/launcher/processprobe.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <sys/stat.h>
#include <unistd.h>

using accel::test::ProcessResult;
namespace slurm = accel::launcher::slurm;

namespace {

QByteArray readFile(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

bool writeFile(const QString &path, const QByteArray &content)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(content) == content.size();
}

// The processes among `pids` that live in network namespace `name` (ip netns).
QList<qint64> inNetworkNamespace(const QList<qint64> &pids, const QString &name)
{
    struct stat info {};
    if (::stat(QStringLiteral("/run/netns/%1").arg(name).toLocal8Bit().constData(), &info) != 0)
        return {};
    const QString wanted = QStringLiteral("net:[%1]").arg(static_cast<qulonglong>(info.st_ino));
    QList<qint64> inside;
    for (const qint64 pid : pids) {
        char target[64] = {};
        const QByteArray link = QStringLiteral("/proc/%1/ns/net").arg(pid).toLocal8Bit();
        const ssize_t size = ::readlink(link.constData(), target, sizeof(target) - 1);
        if (size > 0 && QLatin1String(target, size) == wanted)
            inside << pid;
    }
    return inside;
}

// What an accel.tail stream carried: text per file, manifests per file, the header.
struct Stream {
    QJsonObject header;
    QMap<QString, QByteArray> text;
    QMap<QString, QJsonObject> lastManifest;
    QStringList manifestFiles;
};

Stream parseStream(const QString &out)
{
    Stream stream;
    const QStringList lines = out.split('\n', Qt::SkipEmptyParts);
    for (const QString &line : lines) {
        const QJsonObject object = QJsonDocument::fromJson(line.toUtf8()).object();
        if (object.contains("schema")) {
            stream.header = object;
            continue;
        }
        const QString file = object.value("file").toString();
        if (object.contains("manifest")) {
            stream.lastManifest[file] = object.value("manifest").toObject();
            stream.manifestFiles << file;
        } else if (object.contains("text")) {
            stream.text[file] += object.value("text").toString().toUtf8();
        }
    }
    return stream;
}

} // namespace

class tst_SlurmMultiNode : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    // Without daemons.
    void runManifestsAndFileChecks();
    void tailFollowsEveryNodeFolderAsOneRun();
    // With the 2-node cluster.
    void twoNodeJobIsFollowedOnEveryNode();
    void twoNodeJobIsCancelledAndLeavesNoProcessOnEitherNode();
    void nodeWhoseRunNeverAppearsIsNamed();

private:
    ProcessResult slurmCli(const QStringList &arguments, int timeoutMs = 60000);
    QString writeJob(const QString &name, int maxSteps);
    QString writeConfig();
    void requireCluster();

    QTemporaryDir m_dir;
    accel::test::SshTestServer m_server;
    std::unique_ptr<accel::test::NetnsTestbed> m_testbed;
    accel::test::SlurmTestCluster m_cluster;
    QString m_accel;
    QString m_clusterReason;
};

void tst_SlurmMultiNode::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_accel = QDir(accel::test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFile::exists(m_accel), "build the accel target");
    qunsetenv("SSH_AUTH_SOCK");
    m_clusterReason = accel::test::SshTestServer::unavailableReason();
    if (m_clusterReason.isEmpty()) {
        const QString error = m_server.start();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        m_testbed = std::make_unique<accel::test::NetnsTestbed>(2);
        if (const QString reason = m_testbed->start(); !reason.isEmpty())
            m_clusterReason = QStringLiteral("no network namespaces here: ") + reason;
    }
    if (m_clusterReason.isEmpty())
        m_clusterReason = m_cluster.startNodes(m_dir.filePath(QStringLiteral("cluster")), *m_testbed);
    if (!m_clusterReason.isEmpty())
        qWarning("2-node SLURM cases skip: %s", qPrintable(m_clusterReason));
}

void tst_SlurmMultiNode::cleanupTestCase()
{
    // Nothing of ours may outlive the test: cancel what is left, stop the daemons, then the network.
    m_cluster.cancelAll();
    m_cluster.stop();
    m_testbed.reset();
}

ProcessResult tst_SlurmMultiNode::slurmCli(const QStringList &arguments, int timeoutMs)
{
    return m_cluster.runCli(m_server, m_accel, arguments, timeoutMs);
}

void tst_SlurmMultiNode::requireCluster()
{
    if (!m_clusterReason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no 2-node SLURM cluster here: ") + m_clusterReason));
}

// A tiny gpt job whose files live in their own folder: the folder's path marks its processes.
QString tst_SlurmMultiNode::writeJob(const QString &name, int maxSteps)
{
    const QString job = accel::test::writeTinyGptJob(m_dir.path(), name, maxSteps, 120);
    [&] { QVERIFY2(!job.isEmpty(), "cannot write the job"); }();
    return job;
}

// 2 machines x 2 processes on CPU.
QString tst_SlurmMultiNode::writeConfig()
{
    const QString path = m_dir.filePath(QStringLiteral("cluster-2x2.yaml"));
    writeFile(path, "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_machines: 2\n"
                    "num_processes: 4\nmachine_rank: 0\nmixed_precision: 'no'\nuse_cpu: true\n");
    return path;
}

void tst_SlurmMultiNode::runManifestsAndFileChecks()
{
    QCOMPARE(slurm::runManifests("/w/accel-run-7", 1), QStringList{"/w/accel-run-7/run.json"});
    QCOMPARE(slurm::runManifests("/w/accel-run-7", 0), QStringList{"/w/accel-run-7/run.json"});
    QCOMPARE(slurm::runManifests("/w/accel-run-7", 3),
             (QStringList{"/w/accel-run-7/node0/run.json", "/w/accel-run-7/node1/run.json",
                          "/w/accel-run-7/node2/run.json"}));
    QCOMPARE(slurm::parseFilesExist("yes\nno\n", 2), (QList<bool>{true, false}));
    QVERIFY(slurm::parseFilesExist("yes\n", 2).isEmpty());        // a path without an answer
    QVERIFY(slurm::parseFilesExist("yes\nmaybe\n", 2).isEmpty()); // not an answer
    // The script answers for each path, one with a space included, under a real sh.
    const QString present = m_dir.filePath(QStringLiteral("check dir/run.json"));
    writeFile(present, "{}");
    const slurm::RemoteScript script = slurm::filesExistScript({present, m_dir.filePath("nowhere/run.json")});
    const ProcessResult result = accel::test::runProgram(script.program, script.arguments);
    QCOMPARE(result.exitCode, 0);
    QCOMPARE(slurm::parseFilesExist(result.out.toUtf8(), 2), (QList<bool>{true, false}));
}

// `accel tail FOLDER --follow --json` on a folder of node<K> run directories (as a multi-node job
// leaves them): one accel.tail stream whose rank files keep their global names, whose node files
// carry their node's folder, with every node's manifest; --rank picks the node holding the rank;
// --from continues a node file; the one-run JSON snapshot is refused.
void tst_SlurmMultiNode::tailFollowsEveryNodeFolderAsOneRun()
{
    const QString root = m_dir.filePath(QStringLiteral("tail-nodes"));
    QMap<QString, QByteArray> written;
    for (int node = 0; node < 2; ++node) {
        const QString folder = QStringLiteral("%1/node%2").arg(root).arg(node);
        QJsonArray ranks;
        for (int local = 0; local < 2; ++local) {
            const int rank = node * 2 + local;
            ranks.append(QJsonObject{{"rank", rank}, {"result", "exited"}, {"exit_code", 0}});
            QByteArray metrics;
            for (int step = 0; step <= 10; step += 5)
                metrics += QStringLiteral("{\"v\":1,\"step\":%1,\"loss\":%2}\n").arg(step).arg(rank + step).toUtf8();
            written[QStringLiteral("metrics/rank%1.jsonl").arg(rank)] = metrics;
            QVERIFY(writeFile(QStringLiteral("%1/metrics/rank%2.jsonl").arg(folder).arg(rank), metrics));
            QVERIFY(writeFile(QStringLiteral("%1/logs/rank%2.log").arg(folder).arg(rank),
                              QStringLiteral("rank %1 says hello\n").arg(rank).toUtf8()));
        }
        const QByteArray events =
            QStringLiteral("{\"v\":1,\"time\":1,\"event\":\"started\",\"node\":%1}\n").arg(node).toUtf8();
        written[QStringLiteral("node%1/events.jsonl").arg(node)] = events;
        QVERIFY(writeFile(folder + "/events.jsonl", events));
        QVERIFY(writeFile(folder + "/metrics/system.jsonl", "{\"v\":1,\"step\":0}\n"));
        const QJsonObject manifest{
            {"id", QStringLiteral("node%1").arg(node)}, {"name", "multi"}, {"state", "succeeded"}, {"ranks", ranks}};
        QVERIFY(writeFile(folder + "/run.json", QJsonDocument(manifest).toJson()));
    }
    const ProcessResult all = accel::test::runAccel({"tail", root, "--follow", "--json"}, 30000);
    QVERIFY2(all.exitCode == 0, qPrintable(all.out + all.err));
    const Stream stream = parseStream(all.out);
    QCOMPARE(stream.header.value("schema").toString(), QStringLiteral("accel.tail"));
    QCOMPARE(stream.header.value("version").toInt(), 1);
    QCOMPARE(stream.header.value("run").toString(), QDir(root).absolutePath());
    for (auto it = written.cbegin(); it != written.cend(); ++it)
        QCOMPARE(stream.text.value(it.key()), it.value()); // each file once, under its stream path
    QCOMPARE(stream.text.value("logs/rank3.log"), QByteArray("rank 3 says hello\n"));
    QVERIFY(stream.text.contains("node1/metrics/system.jsonl"));
    QVERIFY(!stream.text.contains("events.jsonl")); // node files never go out without their node
    QCOMPARE(QSet<QString>(stream.manifestFiles.begin(), stream.manifestFiles.end()),
             (QSet<QString>{"node0/run.json", "node1/run.json"}));
    QCOMPARE(stream.lastManifest.value("node1/run.json").value("id").toString(), QStringLiteral("node1"));

    // --rank 3: its files only, and only the manifest of node 1, which holds it.
    const ProcessResult rank = accel::test::runAccel({"tail", root, "--follow", "--json", "--rank", "3"}, 30000);
    QVERIFY2(rank.exitCode == 0, qPrintable(rank.err));
    const Stream one = parseStream(rank.out);
    QCOMPARE(one.text.keys(), (QStringList{"logs/rank3.log", "metrics/rank3.jsonl"}));
    QCOMPARE(QSet<QString>(one.manifestFiles.begin(), one.manifestFiles.end()), QSet<QString>{"node1/run.json"});

    // --from continues node 1's events and rank 2's metrics after what an earlier stream had.
    const qint64 firstLine = written.value("metrics/rank2.jsonl").indexOf('\n') + 1;
    const ProcessResult resumed =
        accel::test::runAccel({"tail", root, "--follow", "--json", "--from",
                               "node1/events.jsonl=" + QString::number(written.value("node1/events.jsonl").size()),
                               "--from", "metrics/rank2.jsonl=" + QString::number(firstLine)},
                              30000);
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err));
    const Stream rest = parseStream(resumed.out);
    QVERIFY(!rest.text.contains("node1/events.jsonl"));
    QCOMPARE(rest.text.value("node0/events.jsonl"), written.value("node0/events.jsonl"));
    QCOMPARE(rest.text.value("metrics/rank2.jsonl"), written.value("metrics/rank2.jsonl").mid(firstLine));
    // A node prefix on a single run, and the one-run snapshot of several nodes: refused by name.
    const ProcessResult single =
        accel::test::runAccel({"tail", root + "/node0", "--follow", "--json", "--from", "node1/events.jsonl=0"}, 30000);
    QCOMPARE(single.exitCode, 2);
    QVERIFY2(single.err.contains("not a multi-node run"), qPrintable(single.err));
    const ProcessResult snapshot = accel::test::runAccel({"tail", root, "--json"}, 30000);
    QCOMPARE(snapshot.exitCode, 2);
    QVERIFY2(snapshot.err.contains("holds 2 nodes' runs"), qPrintable(snapshot.err));
    // Plain text follows every node too.
    const ProcessResult text = accel::test::runAccel({"tail", root, "--follow", "--logs"}, 30000);
    QCOMPARE(text.exitCode, 0);
    for (int r = 0; r < 4; ++r)
        QVERIFY2(text.out.contains(QStringLiteral("[rank %1] rank %1 says hello").arg(r)), qPrintable(text.out));
}

void tst_SlurmMultiNode::twoNodeJobIsFollowedOnEveryNode()
{
    requireCluster();
    const QString job = writeJob(QStringLiteral("trained"), 20);
    const QString submitDir = m_dir.filePath(QStringLiteral("submit"));
    const ProcessResult submitted =
        slurmCli({"submit", "--host", m_server.alias(), "--json", "--remote_dir", submitDir, "--cpus_per_task", "2",
                  "--job_name", "accel-2nodes", writeConfig(), "--job", job});
    QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.out + submitted.err));
    const QJsonObject submission = QJsonDocument::fromJson(submitted.out.toUtf8()).object();
    const QString id = submission.value("job_id").toString();
    QVERIFY2(slurm::isJobId(id), qPrintable(submitted.out));
    const QString runDir = submission.value("run_directory").toString();
    QCOMPARE(runDir, submitDir + "/accel-run-" + id);
    QVERIFY(readFile(submission.value("script").toString()).contains("#SBATCH --nodes=2\n"));

    // Follow: waits for both nodes' run directories, then one stream of both until the run ends.
    const ProcessResult followed =
        slurmCli({"follow", "--host", m_server.alias(), id, "--json", "--poll", "0.5"}, 300000);
    QVERIFY2(followed.exitCode == 0, qPrintable(followed.out.right(2000) + followed.err + "\n" +
                                                readFile(submitDir + "/slurm-" + id + ".out").right(3000)));
    const Stream stream = parseStream(followed.out);
    QCOMPARE(stream.header.value("schema").toString(), QStringLiteral("accel.tail"));
    QCOMPARE(stream.header.value("run").toString(), runDir); // what submit reported is what follow follows
    for (int node = 0; node < 2; ++node) {
        const QString manifest = QStringLiteral("node%1/run.json").arg(node);
        QCOMPARE(stream.lastManifest.value(manifest).value("state").toString(), QStringLiteral("succeeded"));
        QVERIFY2(stream.text.contains(QStringLiteral("node%1/events.jsonl").arg(node)), qPrintable(manifest));
    }
    // Every rank's metrics: each line exactly once, all of its file, steps up to max_steps, each
    // rank from the node that ran it (ranks 0, 1 on node 0; 2, 3 on node 1).
    QStringList rankFiles;
    for (auto it = stream.text.cbegin(); it != stream.text.cend(); ++it) {
        if (it.key().startsWith("metrics/rank"))
            rankFiles << it.key();
    }
    QCOMPARE(rankFiles,
             (QStringList{"metrics/rank0.jsonl", "metrics/rank1.jsonl", "metrics/rank2.jsonl", "metrics/rank3.jsonl"}));
    for (int rank = 0; rank < 4; ++rank) {
        const QString file = QStringLiteral("metrics/rank%1.jsonl").arg(rank);
        const QByteArray onDisk = readFile(QStringLiteral("%1/node%2/%3").arg(runDir).arg(rank / 2).arg(file));
        QVERIFY2(!onDisk.isEmpty(), qPrintable(file));
        QCOMPARE(stream.text.value(file), onDisk);
        QList<QByteArray> rows = onDisk.split('\n');
        rows.removeAll(QByteArray());
        QCOMPARE(QSet<QByteArray>(rows.begin(), rows.end()).size(), rows.size()); // no line twice
        int lastStep = -1;
        for (const QByteArray &row : rows) {
            const QJsonObject sample = QJsonDocument::fromJson(row).object();
            if (sample.contains("step") && sample.contains("loss")) {
                QVERIFY(sample.value("step").toInt() > lastStep);
                lastStep = sample.value("step").toInt();
            }
        }
        QCOMPARE(lastStep, 20);
    }
    // The job ends COMPLETED in the queue, on both nodes.
    QJsonObject ended;
    QVERIFY(accel::test::waitFor(
        [&] {
            const ProcessResult again = slurmCli({"queue", "--host", m_server.alias(), "--json", id});
            for (const QJsonValue &entry :
                 QJsonDocument::fromJson(again.out.toUtf8()).object().value("jobs").toArray()) {
                if (entry.toObject().value("id").toString() == id)
                    ended = entry.toObject();
            }
            return ended.value("final").toBool();
        },
        60000));
    QCOMPARE(ended.value("state").toString(), QStringLiteral("COMPLETED"));
    QCOMPARE(ended.value("nodes").toInt(), 2);
    QCOMPARE(ended.value("node_list").toString(), QStringLiteral("node[0-1]"));
}

void tst_SlurmMultiNode::twoNodeJobIsCancelledAndLeavesNoProcessOnEitherNode()
{
    requireCluster();
    const QString job = writeJob(QStringLiteral("cancelled"), 1000000);
    const QString marker = QFileInfo(job).absolutePath();
    const QString submitDir = m_dir.filePath(QStringLiteral("submit-long"));
    const ProcessResult submitted =
        slurmCli({"submit", "--host", m_server.alias(), "--json", "--remote_dir", submitDir, "--cpus_per_task", "2",
                  "--job_name", "accel-2nodes-long", writeConfig(), "--job", job});
    QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.out + submitted.err));
    const QJsonObject submission = QJsonDocument::fromJson(submitted.out.toUtf8()).object();
    const QString id = submission.value("job_id").toString();
    const QString runDir = submission.value("run_directory").toString();
    // Running: two ranks train in each node's namespace.
    const bool running = accel::test::waitFor(
        [&] {
            const QList<qint64> workers = accel::test::processesWithMarker(marker, QStringLiteral("accel-worker"));
            return inNetworkNamespace(workers, m_testbed->nodeNamespace(0)).size() == 2 &&
                   inNetworkNamespace(workers, m_testbed->nodeNamespace(1)).size() == 2 &&
                   QFileInfo(runDir + "/node1/metrics/rank3.jsonl").size() > 0 &&
                   QFileInfo(runDir + "/node0/metrics/rank0.jsonl").size() > 0;
        },
        240000);
    QVERIFY2(running, readFile(submitDir + "/slurm-" + id + ".out").right(3000).constData());

    const ProcessResult cancelled =
        slurmCli({"cancel", "--host", m_server.alias(), id, "--json", "--poll", "0.5", "--wait", "90"}, 120000);
    QVERIFY2(cancelled.exitCode == 0, qPrintable(cancelled.out + cancelled.err));
    const QJsonObject answer = QJsonDocument::fromJson(cancelled.out.toUtf8()).object();
    QCOMPARE(answer.value("state_before").toString(), QStringLiteral("RUNNING"));
    QCOMPARE(answer.value("state").toString(), QStringLiteral("CANCELLED"));
    // No process of the job is left on either node: not the ranks, not accel launch, not srun's bash.
    QVERIFY2(
        accel::test::waitFor([&] { return accel::test::processesWithMarker(marker).isEmpty(); }, 30000),
        qPrintable(
            QStringLiteral("left: %1 (node0 %2, node1 %3)")
                .arg(accel::test::processesWithMarker(marker).size())
                .arg(inNetworkNamespace(accel::test::processesWithMarker(marker), m_testbed->nodeNamespace(0)).size())
                .arg(
                    inNetworkNamespace(accel::test::processesWithMarker(marker), m_testbed->nodeNamespace(1)).size())));
}

// A batch script that starts a run on node 0 only: follow waits --node_wait for node 1, names it,
// follows node 0 to its end and exits 1.
void tst_SlurmMultiNode::nodeWhoseRunNeverAppearsIsNamed()
{
    requireCluster();
    const QString job = writeJob(QStringLiteral("half"), 5);
    const QString config = m_dir.filePath(QStringLiteral("cluster-1x2.yaml"));
    writeFile(config, "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_machines: 1\n"
                      "num_processes: 2\nmachine_rank: 0\nmixed_precision: 'no'\nuse_cpu: true\n");
    const QString script = m_dir.filePath(QStringLiteral("half.sbatch"));
    writeFile(script, QStringLiteral("#!/bin/bash\n#SBATCH --job-name=half\n#SBATCH --nodes=2\n"
                                     "#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task=2\n"
                                     "ACCEL_RUN_DIR=$PWD/accel-run-$SLURM_JOB_ID\n"
                                     "'%1' launch --config_file '%2' --run_dir \"$ACCEL_RUN_DIR/node0\" --job '%3'\n")
                          .arg(m_accel, config, job)
                          .toUtf8());
    const QString submitDir = m_dir.filePath(QStringLiteral("submit-half"));
    const ProcessResult submitted =
        slurmCli({"submit", "--host", m_server.alias(), "--json", "--remote_dir", submitDir, script});
    QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.out + submitted.err));
    const QJsonObject submission = QJsonDocument::fromJson(submitted.out.toUtf8()).object();
    const QString id = submission.value("job_id").toString();
    const QString runDir = submission.value("run_directory").toString();
    const ProcessResult followed = slurmCli(
        {"follow", "--host", m_server.alias(), id, "--json", "--metrics", "--poll", "0.5", "--node_wait", "3"}, 240000);
    QVERIFY2(followed.exitCode == 1, qPrintable(followed.out.right(1500) + followed.err));
    // Named after the wait, or when the job ended first (a short run on a busy machine).
    QVERIFY2(
        followed.err.contains("no run directory from node1 (" + runDir + "/node1/run.json) after 3 s") ||
            followed.err.contains("no run directory from node1 (" + runDir + "/node1/run.json) when the job ended"),
        qPrintable(followed.err));
    const Stream stream = parseStream(followed.out);
    QCOMPARE(stream.lastManifest.value("node0/run.json").value("state").toString(), QStringLiteral("succeeded"));
    QCOMPARE(stream.text.value("metrics/rank0.jsonl"), readFile(runDir + "/node0/metrics/rank0.jsonl"));
    QCOMPARE(stream.text.value("metrics/rank1.jsonl"), readFile(runDir + "/node0/metrics/rank1.jsonl"));
    QVERIFY(!stream.text.value("metrics/rank1.jsonl").isEmpty());
}

QTEST_GUILESS_MAIN(tst_SlurmMultiNode)
#include "tst_slurmmultinode.moc"
