// `accel slurm` against a real single-node SLURM cluster the test starts: munged with a test key,
// slurmctld and slurmd (Debian's slurm-wlm) in the foreground as children, configured in a
// temporary folder (free ports, state and spool in there, proctrack/linuxproc, task/none, no
// cgroups, accounting storage off and the job completion log on), reached through a real sshd on
// loopback (SshTestServer). A 2-rank CPU gpt job exported from a cluster config is submitted,
// seen in the queue, followed to its end with its metrics; a second, long job is cancelled and
// ends CANCELLED with none of its processes left. Without the daemons those cases skip with the
// reason; the generated script and the parsing of recorded squeue / sacct output run anyway.
#include "core/config/configio.h"
#include "launcher/export/commandexport.h"
#include "launcher/slurm.h"
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
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

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
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(content) == content.size();
}

} // namespace

class tst_Slurm : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    // Without daemons.
    void jobIdsAndDurations();
    void recordedQueueOutputIsParsed();
    void unknownJobInSqueueIsNotAnError();
    void generatedScriptIsValidBashWithItsHeader();
    void badArgumentsExitWithTwo();
    void missingSbatchSaysWhatToDo();
    // With the daemons.
    void jobIsSubmittedQueuedAndFollowedToItsEnd();
    void longJobIsCancelledAndLeavesNoProcess();
    void sbatchRefusalAndAJobWithoutRunDirectoryAreReported();

private:
    ProcessResult slurmCli(const QStringList &arguments, int timeoutMs = 60000);
    QString writeJob(const QString &name, int maxSteps);
    QString writeConfig();
    void requireDaemons();
    void requireWorker();

    QTemporaryDir m_dir;
    accel::test::SshTestServer m_server;
    accel::test::SlurmTestCluster m_cluster;
    QString m_accel;
    QString m_sshReason;
    QString m_daemonReason;
};

void tst_Slurm::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_accel = QDir(accel::test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFile::exists(m_accel), "build the accel target");
    qunsetenv("SSH_AUTH_SOCK");
    m_sshReason = accel::test::SshTestServer::unavailableReason();
    if (m_sshReason.isEmpty()) {
        const QString error = m_server.start();
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }
    m_daemonReason = m_sshReason.isEmpty() ? m_cluster.start(m_dir.filePath(QStringLiteral("cluster"))) : m_sshReason;
    if (!m_daemonReason.isEmpty())
        qWarning("SLURM daemon cases skip: %s", qPrintable(m_daemonReason));
}

void tst_Slurm::cleanupTestCase()
{
    // Nothing of ours may outlive the test: cancel what is left, then stop the daemons.
    m_cluster.cancelAll();
    m_cluster.stop();
}

ProcessResult tst_Slurm::slurmCli(const QStringList &arguments, int timeoutMs)
{
    return m_cluster.runCli(m_server, m_accel, arguments, timeoutMs);
}

void tst_Slurm::requireDaemons()
{
    if (!m_daemonReason.isEmpty())
        QSKIP(qPrintable(QStringLiteral("no SLURM cluster here: ") + m_daemonReason));
}

// The jobs these cases submit are native (a tiny gpt job): a build without the libtorch runtime
// (ACCEL_BUILD_TORCH=OFF, e.g. the ThreadSanitizer build) has no accel-worker to run them.
void tst_Slurm::requireWorker()
{
    if (!QFileInfo(QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"))).isExecutable())
        QSKIP("accel-worker is not built (no libtorch runtime in this build): the submitted job is a native one");
}

// A tiny gpt job (2 ranks on CPU) whose files live in their own folder: the folder's path marks
// its processes.
QString tst_Slurm::writeJob(const QString &name, int maxSteps)
{
    const QString job = accel::test::writeTinyGptJob(m_dir.path(), name, maxSteps, 60);
    [&] { QVERIFY2(!job.isEmpty(), "cannot write the job"); }();
    return job;
}

QString tst_Slurm::writeConfig()
{
    const QString path = m_dir.filePath(QStringLiteral("cluster-cpu.yaml"));
    writeFile(path, "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_machines: 1\n"
                    "num_processes: 2\nmachine_rank: 0\nmixed_precision: 'no'\nuse_cpu: true\n");
    return path;
}

void tst_Slurm::jobIdsAndDurations()
{
    QVERIFY(slurm::isJobId("1234"));
    QVERIFY(slurm::isJobId("1234_5"));
    for (const char *bad : {"", "12a", "-1", "1;2", "12 3", "1_", "_1"})
        QVERIFY2(!slurm::isJobId(QLatin1String(bad)), bad);
    QCOMPARE(slurm::durationSeconds("0:04"), 4);
    QCOMPARE(slurm::durationSeconds("00:01:02"), 62);
    QCOMPARE(slurm::durationSeconds("1-02:03:04"), ((24 + 2) * 60 + 3) * 60 + 4);
    QCOMPARE(slurm::durationSeconds("INVALID"), -1);
    QCOMPARE(slurm::durationSeconds("UNLIMITED"), -1);
    QVERIFY(slurm::isFinalState("CANCELLED"));
    QVERIFY(slurm::isFinalState("COMPLETED"));
    QVERIFY(!slurm::isFinalState("COMPLETING"));
    QVERIFY(!slurm::isFinalState("PENDING"));
}

// Output of the queue script's squeue --format and sacct --completion --parsable2 parts, recorded
// from slurm-wlm 22.05 with a running, a pending and a cancelled job (squeue) and a completed and
// the cancelled one (job completion log). A job name holding '|' stays whole.
void tst_Slurm::recordedQueueOutputIsParsed()
{
    const QByteArray recorded = readFile(accel::test::dataPath("slurm/queue-squeue-sacct-completion.txt"));
    QVERIFY(!recorded.isEmpty());
    auto report = slurm::parseQueue(recorded);
    QVERIFY2(report, report ? "" : report.error().message.c_str());
    QCOMPARE(report->accounting, QStringLiteral("completion"));
    QVERIFY(report->accountingMessage.contains("completion"));
    QStringList ids;
    for (const auto &job : report->jobs)
        ids << job.id;
    QCOMPARE(ids, (QStringList{"6", "5", "4", "3"})); // squeue's first; sacct adds only 3
    const auto &cancelled = report->jobs.at(0);
    QCOMPARE(cancelled.state, QStringLiteral("CANCELLED"));
    QCOMPARE(cancelled.source, QStringLiteral("squeue"));
    const auto &pending = report->jobs.at(1);
    QCOMPARE(pending.name, QStringLiteral("waiting"));
    QCOMPARE(pending.state, QStringLiteral("PENDING"));
    QCOMPARE(pending.reason, QStringLiteral("Resources"));
    QCOMPARE(pending.nodeList, QString());
    const auto &running = report->jobs.at(2);
    QCOMPARE(running.name, QStringLiteral("long run|x"));
    QCOMPARE(running.state, QStringLiteral("RUNNING"));
    QCOMPARE(running.elapsedSeconds, 4);
    QCOMPARE(running.nodes, 1);
    QCOMPARE(running.nodeList, QStringLiteral("localhost"));
    QCOMPARE(running.partition, QStringLiteral("debug"));
    QCOMPARE(running.workDir, QStringLiteral("/tmp/g-slurm"));
    const auto &completed = report->jobs.at(3);
    QCOMPARE(completed.source, QStringLiteral("sacct"));
    QCOMPARE(completed.state, QStringLiteral("COMPLETED"));
    QCOMPARE(completed.elapsed, QStringLiteral("00:00:02"));
    QCOMPARE(completed.elapsedSeconds, 2);

    // sacct against slurmdbd: "CANCELLED by 0", job steps left out; a failing sacct is reported.
    const QByteArray sep("\x1f");
    QByteArray accounting = "@squeue\n@status 0\n@accounting accounting 0\n";
    for (const QList<QByteArray> &row :
         {QList<QByteArray>{"7", "train", "CANCELLED by 0", "00:10:00", "2", "None", "/home/a", "gpu", "n[1-2]"},
          QList<QByteArray>{"7.batch", "batch", "CANCELLED", "00:10:00", "1", "", "", "", "n1"}})
        accounting += row.join(sep) + '\n';
    report = slurm::parseQueue(accounting);
    QVERIFY(report);
    QCOMPARE(report->jobs.size(), 1);
    QCOMPARE(report->jobs.at(0).state, QStringLiteral("CANCELLED"));
    QCOMPARE(report->jobs.at(0).nodes, 2);
    QCOMPARE(report->accounting, QStringLiteral("accounting"));
    report = slurm::parseQueue("@squeue\n@status 0\n@accounting accounting 1\nsacct: error: Problem talking to the "
                               "database: Connection refused\n");
    QVERIFY(report);
    QCOMPARE(report->accounting, QStringLiteral("unavailable"));
    QVERIFY2(report->accountingMessage.contains("Connection refused"), qPrintable(report->accountingMessage));
    // squeue failing for another reason is an error that quotes it.
    auto failed = slurm::parseQueue("@squeue\nsqueue: error: Unable to contact slurm controller (connect failure)\n"
                                    "@status 1\n@accounting missing 0\n");
    QVERIFY(!failed);
    QVERIFY(QString::fromStdString(failed.error().message).contains("Unable to contact slurm controller"));
}

void tst_Slurm::unknownJobInSqueueIsNotAnError()
{
    auto report = slurm::parseQueue(readFile(accel::test::dataPath("slurm/queue-unknown-job.txt")));
    QVERIFY2(report, report ? "" : report.error().message.c_str());
    QVERIFY(report->jobs.isEmpty());
}

// The script `accel slurm submit` exports: valid bash, the #SBATCH header from the options, and
// accel launch given the run directory that `accel slurm follow` derives from the job's working
// directory and id (run under bash with a fake srun / scontrol / accel).
void tst_Slurm::generatedScriptIsValidBashWithItsHeader()
{
    namespace ex = accel::launcher::exporting;
    ex::ExportInput input;
    auto config = accel::config::loadConfigFile(writeConfig().toStdString());
    QVERIFY(config);
    input.config = *config;
    input.program.kind = accel::launcher::ProgramSpec::Kind::Job;
    input.program.target = "/jobs/a b.yaml";
    input.jobName = "accel-check";
    input.partition = "debug";
    input.cpusPerTask = 2;
    input.timeLimit = "00:10:00";
    auto text = ex::exportSbatch(input);
    QVERIFY(text);
    const QString folder = m_dir.filePath(QStringLiteral("script-check"));
    QDir().mkpath(folder + "/bin");
    const QString script = folder + "/job.sbatch";
    writeFile(script, QByteArray::fromStdString(*text));
    const ProcessResult syntax = accel::test::runProgram(QStringLiteral("bash"), {QStringLiteral("-n"), script});
    QVERIFY2(syntax.exitCode == 0, qPrintable(syntax.err));
    QStringList header;
    for (const QString &line : QString::fromStdString(*text).split('\n')) {
        if (line.startsWith(QLatin1String("#SBATCH")))
            header << line;
    }
    QCOMPARE(header,
             (QStringList{"#SBATCH --job-name=accel-check", "#SBATCH --nodes=1", "#SBATCH --ntasks-per-node=1",
                          "#SBATCH --cpus-per-task=2", "#SBATCH --partition=debug", "#SBATCH --time=00:10:00"}));
    writeFile(folder + "/bin/srun", "#!/bin/bash\nwhile [[ \"$1\" == --* ]]; do shift; done\nSLURM_NODEID=0 \"$@\"\n");
    writeFile(folder + "/bin/scontrol", "#!/bin/bash\necho localhost\n");
    writeFile(folder + "/bin/accel", "#!/bin/bash\nprintf '%s\\n' \"$@\" > \"$OUT_FILE\"\n");
    for (const char *name : {"srun", "scontrol", "accel"})
        QFile::setPermissions(folder + "/bin/" + name, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
    const QString out = folder + "/arguments.txt";
    QProcess bash;
    bash.setWorkingDirectory(folder);
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("PATH", folder + "/bin:" + environment.value("PATH"));
    environment.insert("SLURM_JOB_ID", "42");
    environment.insert("SLURM_JOB_NODELIST", "localhost");
    environment.insert("OUT_FILE", out);
    environment.remove("ACCEL_RUN_DIR");
    bash.setProcessEnvironment(environment);
    bash.start(QStringLiteral("bash"), {script});
    QVERIFY(bash.waitForFinished(30000));
    QVERIFY2(bash.exitCode() == 0, bash.readAllStandardError().constData());
    const QString runDir = slurm::defaultRunDirectory(folder, QStringLiteral("42"));
    QVERIFY2(bash.readAllStandardOutput().contains(("accel run directory: " + runDir).toUtf8()),
             "no run directory line");
    const QStringList arguments = QString::fromUtf8(readFile(out)).split('\n', Qt::SkipEmptyParts);
    const int at = arguments.indexOf(QStringLiteral("--run_dir"));
    QVERIFY2(at > 0, qPrintable(arguments.join(' ')));
    QCOMPARE(arguments.value(at + 1), runDir);
    QCOMPARE(arguments.value(arguments.indexOf(QStringLiteral("--job")) + 1), QStringLiteral("/jobs/a b.yaml"));
}

void tst_Slurm::badArgumentsExitWithTwo()
{
    struct Case {
        QStringList arguments;
        QString needle;
    };
    const QList<Case> cases = {
        {{"cancel", "--host", "accel-test", "12a"}, "'12a'"},
        {{"follow", "--host", "accel-test", "x1"}, "'x1'"},
        {{"queue", "--host", "accel-test", "7,abc"}, "'abc'"},
        {{"cancel", "12"}, "--host"},
        {{"submit", "--host", "accel-test", m_dir.filePath("missing.yaml")}, "missing.yaml"},
        {{"submit", "--host", "accel-test", writeConfig()}, "--job JOB.yaml"},
        {{"submit", "--host", "accel-test", "--job_name", "a\nb", writeConfig(), "--job", "j.yaml"}, "job name"},
        {{"frobnicate"}, "unknown action"},
    };
    for (const Case &c : cases) {
        const ProcessResult result = slurmCli(c.arguments, 20000);
        QVERIFY2(result.exitCode == 2, qPrintable(c.arguments.join(' ') + ": " + result.out + result.err));
        QVERIFY2(result.err.contains(c.needle), qPrintable(c.arguments.join(' ') + ": " + result.err));
    }
    const ProcessResult help = slurmCli({"submit", "--help"});
    QCOMPARE(help.exitCode, 0);
    QVERIFY(help.out.contains("--partition"));
}

// sbatch is not on the PATH of the SSH session: said by name, with what to do.
void tst_Slurm::missingSbatchSaysWhatToDo()
{
    if (!m_sshReason.isEmpty())
        QSKIP(qPrintable(m_sshReason));
    const QString bin = m_dir.filePath(QStringLiteral("bin-without-slurm"));
    QDir().mkpath(bin);
    QFile::link(QStringLiteral("/bin/sh"), bin + "/sh");
    const QString script = m_dir.filePath(QStringLiteral("plain.sh"));
    writeFile(script, "#!/bin/bash\ntrue\n");
    const ProcessResult result =
        slurmCli({"submit", "--host", m_server.alias(), "--remote_env", "PATH=" + bin, script}, 30000);
    QVERIFY2(result.exitCode == 1, qPrintable(result.out + result.err));
    QVERIFY2(result.err.contains("sbatch is not found on accel-test") && result.err.contains("slurm-client"),
             qPrintable(result.err));
}

static QJsonObject jobIn(const QJsonObject &queue, const QString &id)
{
    for (const QJsonValue &job : queue.value(QStringLiteral("jobs")).toArray()) {
        if (job.toObject().value(QStringLiteral("id")).toString() == id)
            return job.toObject();
    }
    return {};
}

void tst_Slurm::jobIsSubmittedQueuedAndFollowedToItsEnd()
{
    requireDaemons();
    requireWorker();
    const QString job = writeJob(QStringLiteral("trained"), 20);
    const QString submitDir = m_dir.filePath(QStringLiteral("submit"));
    const ProcessResult submitted =
        slurmCli({"submit", "--host", m_server.alias(), "--json", "--remote_dir", submitDir, "--cpus_per_task", "2",
                  "--partition", "debug", "--job_name", "accel-trained", writeConfig(), "--job", job});
    QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.out + submitted.err));
    const QJsonObject submission = QJsonDocument::fromJson(submitted.out.toUtf8()).object();
    QCOMPARE(submission.value("schema").toString(), QStringLiteral("accel.slurm-submit"));
    QCOMPARE(submission.value("version").toInt(), 1);
    const QString id = submission.value("job_id").toString();
    QVERIFY2(slurm::isJobId(id), qPrintable(submitted.out));
    QCOMPARE(submission.value("work_dir").toString(), submitDir);
    const QString runDir = submission.value("run_directory").toString();
    QCOMPARE(runDir, submitDir + "/accel-run-" + id);
    // The script on the host is the exported one, as sbatch took it.
    const QByteArray script = readFile(submission.value("script").toString());
    QVERIFY(script.startsWith("#!/bin/bash\n#SBATCH --job-name=accel-trained\n"));
    QVERIFY(script.contains("#SBATCH --partition=debug\n"));

    const ProcessResult queued = slurmCli({"queue", "--host", m_server.alias(), "--json"});
    QVERIFY2(queued.exitCode == 0, qPrintable(queued.out + queued.err));
    const QJsonObject queue = QJsonDocument::fromJson(queued.out.toUtf8()).object();
    QCOMPARE(queue.value("schema").toString(), QStringLiteral("accel.slurm-queue"));
    QCOMPARE(queue.value("accounting").toString(), QStringLiteral("completion"));
    const QJsonObject listed = jobIn(queue, id);
    QCOMPARE(listed.value("name").toString(), QStringLiteral("accel-trained"));
    QCOMPARE(listed.value("work_dir").toString(), submitDir);
    QCOMPARE(listed.value("partition").toString(), QStringLiteral("debug"));
    QVERIFY2(QStringList({"PENDING", "RUNNING", "COMPLETING", "COMPLETED"}).contains(listed.value("state").toString()),
             qPrintable(queued.out));

    // Follow: waits for the run directory, then streams its metrics until the run ends.
    const ProcessResult followed =
        slurmCli({"follow", "--host", m_server.alias(), id, "--json", "--metrics", "--poll", "0.5"}, 240000);
    QVERIFY2(followed.exitCode == 0, qPrintable(followed.out.right(2000) + followed.err + "\n" +
                                                readFile(submitDir + "/slurm-" + id + ".out").right(3000)));
    QMap<QString, QByteArray> metrics;
    QString finalState;
    const QStringList lines = followed.out.split('\n', Qt::SkipEmptyParts);
    QVERIFY(!lines.isEmpty());
    const QJsonObject head = QJsonDocument::fromJson(lines.first().toUtf8()).object();
    QCOMPARE(head.value("schema").toString(), QStringLiteral("accel.tail"));
    QCOMPARE(head.value("run").toString(), runDir);
    for (const QString &line : lines) {
        const QJsonObject object = QJsonDocument::fromJson(line.toUtf8()).object();
        const QString file = object.value("file").toString();
        if (file == QLatin1String("run.json"))
            finalState = object.value("manifest").toObject().value("state").toString();
        else if (file.startsWith(QLatin1String("metrics/rank")))
            metrics[file] += object.value("text").toString().toUtf8();
    }
    QCOMPARE(finalState, QStringLiteral("succeeded"));
    QCOMPARE(metrics.keys(), (QStringList{"metrics/rank0.jsonl", "metrics/rank1.jsonl"}));
    for (auto it = metrics.cbegin(); it != metrics.cend(); ++it) {
        // Every byte of the rank's file arrived, and its steps run up to max_steps.
        QCOMPARE(it.value(), readFile(runDir + "/" + it.key()));
        int lastStep = -1;
        for (const QByteArray &row : it.value().split('\n')) {
            const QJsonObject sample = QJsonDocument::fromJson(row).object();
            if (sample.contains("step") && sample.contains("loss")) {
                QVERIFY(sample.value("step").toInt() > lastStep);
                lastStep = sample.value("step").toInt();
            }
        }
        QCOMPARE(lastStep, 20);
    }
    // The job ends COMPLETED in the queue, with its elapsed time.
    QJsonObject ended;
    QVERIFY(accel::test::waitFor(
        [&] {
            const ProcessResult again = slurmCli({"queue", "--host", m_server.alias(), "--json", id});
            ended = jobIn(QJsonDocument::fromJson(again.out.toUtf8()).object(), id);
            return ended.value("final").toBool();
        },
        60000));
    QCOMPARE(ended.value("state").toString(), QStringLiteral("COMPLETED"));
    QVERIFY(ended.value("elapsed_seconds").toDouble() >= 0);
    QCOMPARE(ended.value("node_list").toString(), QStringLiteral("localhost"));
    const ProcessResult text = slurmCli({"queue", "--host", m_server.alias(), id});
    QVERIFY2(text.exitCode == 0 && text.out.contains(QRegularExpression(id + " +accel-trained +COMPLETED")),
             qPrintable(text.out + text.err));
}

void tst_Slurm::longJobIsCancelledAndLeavesNoProcess()
{
    requireDaemons();
    requireWorker();
    const QString job = writeJob(QStringLiteral("cancelled"), 1000000);
    const QString marker = QFileInfo(job).absolutePath();
    const QString submitDir = m_dir.filePath(QStringLiteral("submit-long"));
    const ProcessResult submitted =
        slurmCli({"submit", "--host", m_server.alias(), "--json", "--remote_dir", submitDir, "--cpus_per_task", "2",
                  "--job_name", "accel-long", writeConfig(), "--job", job});
    QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.out + submitted.err));
    const QJsonObject submission = QJsonDocument::fromJson(submitted.out.toUtf8()).object();
    const QString id = submission.value("job_id").toString();
    const QString runDir = submission.value("run_directory").toString();
    // Running: both ranks train.
    const bool running = accel::test::waitFor(
        [&] {
            const QJsonObject manifest = QJsonDocument::fromJson(readFile(runDir + "/run.json")).object();
            return manifest.value("state").toString() == QLatin1String("running") &&
                   accel::test::processesWithMarker(marker, QStringLiteral("accel-worker")).size() == 2 &&
                   QFileInfo(runDir + "/metrics/rank1.jsonl").size() > 0;
        },
        180000);
    QVERIFY2(running, readFile(submitDir + "/slurm-" + id + ".out").right(3000).constData());

    // Regression (hardening round 3): when its connection dropped, `accel slurm follow` exited 255
    // (the lost command had no exit code, -1, which the shell saw as 255). The host failed: exit 1,
    // saying so.
    QProcess follow;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("ACCEL_SSH_DIR"), m_server.clientDirectory());
    environment.insert(QStringLiteral("ACCEL_REMOTE_BIN"), m_accel);
    environment.remove(QStringLiteral("SSH_AUTH_SOCK"));
    follow.setProcessEnvironment(environment);
    follow.start(m_accel, {"slurm", "follow", "--host", m_server.alias(), id, "--poll", "0.5", "--remote_env",
                           "SLURM_CONF=" + m_cluster.conf()});
    QVERIFY(follow.waitForStarted());
    QByteArray followed;
    const bool following = accel::test::waitFor(
        [&] {
            follow.waitForReadyRead(100);
            followed += follow.readAllStandardOutput();
            return !followed.isEmpty() || follow.state() == QProcess::NotRunning;
        },
        60000);
    QVERIFY2(following && follow.state() == QProcess::Running, follow.readAllStandardError().constData());
    QVERIFY(m_server.dropConnections() > 0);
    QVERIFY2(follow.waitForFinished(60000), "accel slurm follow did not end when its connection dropped");
    const QByteArray followErrors = follow.readAllStandardError();
    QCOMPARE(follow.exitStatus(), QProcess::NormalExit);
    QCOMPARE(follow.exitCode(), 1);
    QVERIFY2(followErrors.contains("connection lost"), followErrors.constData());

    const ProcessResult cancelled =
        slurmCli({"cancel", "--host", m_server.alias(), id, "--json", "--poll", "0.5", "--wait", "90"}, 120000);
    QVERIFY2(cancelled.exitCode == 0, qPrintable(cancelled.out + cancelled.err));
    const QJsonObject answer = QJsonDocument::fromJson(cancelled.out.toUtf8()).object();
    QCOMPARE(answer.value("schema").toString(), QStringLiteral("accel.slurm-cancel"));
    QCOMPARE(answer.value("state_before").toString(), QStringLiteral("RUNNING"));
    QCOMPARE(answer.value("state").toString(), QStringLiteral("CANCELLED"));
    QCOMPARE(answer.value("ended").toBool(), true);
    // No process of the job is left: not the ranks, not accel launch, not the batch script.
    QVERIFY2(accel::test::waitFor([&] { return accel::test::processesWithMarker(marker).isEmpty(); }, 30000),
             qPrintable(QStringLiteral("left: %1").arg(accel::test::processesWithMarker(marker).size())));
    const ProcessResult queued = slurmCli({"queue", "--host", m_server.alias(), "--json", id});
    QCOMPARE(jobIn(QJsonDocument::fromJson(queued.out.toUtf8()).object(), id).value("state").toString(),
             QStringLiteral("CANCELLED"));
    // Cancelling it again, or a job SLURM does not know, fails and says why.
    const ProcessResult again = slurmCli({"cancel", "--host", m_server.alias(), id});
    QCOMPARE(again.exitCode, 1);
    QVERIFY2(again.err.contains("has ended already (CANCELLED)"), qPrintable(again.err));
    const ProcessResult unknown = slurmCli({"cancel", "--host", m_server.alias(), "999999"});
    QCOMPARE(unknown.exitCode, 1);
    QVERIFY2(unknown.err.contains("999999 is not known to SLURM"), qPrintable(unknown.err));
}

// sbatch's own refusal is quoted; a job that ends without creating its run directory ends follow
// with exit 1 and names its output file.
void tst_Slurm::sbatchRefusalAndAJobWithoutRunDirectoryAreReported()
{
    requireDaemons();
    const QString submitDir = m_dir.filePath(QStringLiteral("submit-bad"));
    const QString script = m_dir.filePath(QStringLiteral("no-run.sbatch"));
    writeFile(script, "#!/bin/bash\n#SBATCH --job-name=no-run\n# never starts ACCEL_RUN_DIR\nexit 3\n");
    const ProcessResult refused =
        slurmCli({"submit", "--host", m_server.alias(), "--remote_dir", submitDir, "--partition", "nosuch", script});
    QCOMPARE(refused.exitCode, 1);
    QVERIFY2(refused.err.contains("sbatch: error:") && refused.err.contains("artition"), qPrintable(refused.err));

    const ProcessResult submitted =
        slurmCli({"submit", "--host", m_server.alias(), "--json", "--remote_dir", submitDir, script});
    QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.out + submitted.err));
    const QJsonObject submission = QJsonDocument::fromJson(submitted.out.toUtf8()).object();
    const QString id = submission.value("job_id").toString();
    QCOMPARE(submission.value("run_directory").toString(), submitDir + "/accel-run-" + id);
    const ProcessResult followed = slurmCli({"follow", "--host", m_server.alias(), id, "--poll", "0.5"}, 120000);
    QCOMPARE(followed.exitCode, 1);
    QVERIFY2(followed.err.contains("without a run directory") && followed.err.contains("slurm-" + id + ".out"),
             qPrintable(followed.err));
    // A job SLURM does not know: follow says so at once, with or without --run_dir.
    const ProcessResult unknown = slurmCli({"follow", "--host", m_server.alias(), "999999"});
    QCOMPARE(unknown.exitCode, 1);
    QVERIFY2(unknown.err.contains("999999 is not known to SLURM there") && unknown.err.contains("--run_dir"),
             qPrintable(unknown.err));
    const ProcessResult unknownDir =
        slurmCli({"follow", "--host", m_server.alias(), "999999", "--run_dir", m_dir.filePath("nowhere")});
    QCOMPARE(unknownDir.exitCode, 1);
    QVERIFY2(unknownDir.err.contains("nowhere/run.json does not exist"), qPrintable(unknownDir.err));
}

QTEST_GUILESS_MAIN(tst_Slurm)
#include "tst_slurm.moc"
