// Multi-process tests of the Accelerator: real gloo jobs of accel-runtime-probe ranks on
// loopback, compared bit for bit or within tolerance against single-process runs.
#include "tests/helpers/rankjob.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

namespace {

using accel::test::freeLoopbackPort;
using accel::test::RankOutcome;

// Starts `worldSize` ranks of the probe (or only `onlyRanks` of them) and waits for all of them.
QList<RankOutcome> runRanks(int worldSize, const QStringList &arguments, int timeoutMs = 120000, int port = 0,
                            const QList<int> &onlyRanks = {}, const QStringList &extraEnv = {})
{
    accel::test::RankJob job;
    job.program = accel::test::binDir() + "/accel-runtime-probe";
    job.arguments = arguments;
    job.worldSize = worldSize;
    job.timeoutMs = timeoutMs;
    job.port = port;
    job.onlyRanks = onlyRanks;
    job.env = extraEnv;
    return accel::test::runRankJob(job);
}

QStringList readLines(const QString &path, const QString &prefix = {})
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QStringList lines;
    for (const QByteArray &line : file.readAll().split('\n')) {
        if (!line.isEmpty() && (prefix.isEmpty() || line.startsWith(prefix.toUtf8())))
            lines << QString::fromUtf8(line);
    }
    return lines;
}

double hexValue(const QString &line)
{
    return std::strtod(line.section(' ', -1).toUtf8().constData(), nullptr);
}

void expectAllOk(const QList<RankOutcome> &results)
{
    if (const QString failed = accel::test::failures(results); !failed.isEmpty())
        QFAIL(qPrintable(failed));
}

void compareParams(const QStringList &a, const QStringList &b, double tolerance)
{
    QVERIFY(!a.isEmpty());
    QCOMPARE(a.size(), b.size());
    double worst = 0;
    for (int i = 0; i < a.size(); ++i) {
        QCOMPARE(a[i].section(' ', 1, 1), b[i].section(' ', 1, 1));
        worst = std::max(worst, std::abs(hexValue(a[i]) - hexValue(b[i])));
    }
    if (worst > tolerance)
        QFAIL(qPrintable(QString("parameters differ by %1 (tolerance %2)").arg(worst).arg(tolerance)));
}

// Rank 0 of a 2-rank job on this host meeting on 127.0.0.1:port.
QProcessEnvironment rankZeroOfTwo(int port)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const auto &[key, value] : {std::pair{"RANK", "0"},
                                     {"LOCAL_RANK", "0"},
                                     {"WORLD_SIZE", "2"},
                                     {"LOCAL_WORLD_SIZE", "2"},
                                     {"MASTER_ADDR", "127.0.0.1"}})
        env.insert(key, value);
    env.insert("MASTER_PORT", QString::number(port));
    return env;
}

} // namespace

class tst_Accelerator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void twoRankDdpMatchesOneRankDoubledBatch()
    {
        QTemporaryDir dir;
        const QString one = dir.filePath("one.txt"), two = dir.filePath("two.txt");
        // Small buckets so that several all-reduces overlap with backward.
        expectAllOk(runRanks(1, {"train", "steps=20", "batch=16", "constant=1", "out=" + one}));
        expectAllOk(runRanks(2, {"train", "steps=20", "batch=8", "constant=1", "bucket_mb=0.001", "out=" + two}));
        compareParams(readLines(one, "param"), readLines(two, "param"), 1e-5);
        QCOMPARE(readLines(one, "transport"), QStringList{"transport none"});
        QCOMPARE(readLines(two, "transport"), QStringList{"transport shared-memory"});
        // And the run really trained: the loss moved.
        const QStringList losses = readLines(two, "loss");
        QCOMPARE(losses.size(), 20);
        QVERIFY(hexValue(losses.last()) < hexValue(losses.first()));
    }

    // Ranks on one host sum gradients through shared memory; the process group (gloo) gives the
    // same parameters, with 3 ranks (uneven chunks) and many small buckets.
    void sharedMemoryAllReduceMatchesTheProcessGroup()
    {
        QTemporaryDir dir;
        const QString shm = dir.filePath("shm.txt"), gloo = dir.filePath("gloo.txt");
        const QStringList args{"train", "steps=12", "batch=4", "constant=1", "bucket_mb=0.0005", "shuffle=1"};
        expectAllOk(runRanks(3, args + QStringList{"out=" + shm}));
        expectAllOk(runRanks(3, args + QStringList{"out=" + gloo}, 120000, 0, {}, {"ACCEL_SHM_ALLREDUCE=0"}));
        QCOMPARE(readLines(shm, "transport"), QStringList{"transport shared-memory"});
        QCOMPARE(readLines(gloo, "transport"), QStringList{"transport process-group"});
        compareParams(readLines(shm, "param"), readLines(gloo, "param"), 1e-6);
        QCOMPARE(readLines(shm, "loss").size(), 12);
        // The segment's name is removed once every rank mapped it: nothing is left in /dev/shm.
        QVERIFY(QDir("/dev/shm").entryList({"accel-allreduce-*"}, QDir::Files).isEmpty());
    }

    // Above four ranks each rank sums only its chunk into the segment's result region (no rank reads
    // every slot): the same parameters as gloo too.
    void sharedMemoryChunkedReductionMatchesTheProcessGroup()
    {
        QTemporaryDir dir;
        const QString shm = dir.filePath("shm.txt"), gloo = dir.filePath("gloo.txt");
        const QStringList args{"train", "steps=4", "batch=2", "constant=1", "bucket_mb=0.0005", "size=40"};
        expectAllOk(runRanks(5, args + QStringList{"out=" + shm}));
        expectAllOk(runRanks(5, args + QStringList{"out=" + gloo}, 120000, 0, {}, {"ACCEL_SHM_ALLREDUCE=0"}));
        QCOMPARE(readLines(shm, "transport"), QStringList{"transport shared-memory"});
        compareParams(readLines(shm, "param"), readLines(gloo, "param"), 1e-6);
    }

    void gradientAccumulationMatchesLargerBatch()
    {
        QTemporaryDir dir;
        const QString big = dir.filePath("big.txt"), accumulated = dir.filePath("acc.txt"),
                      ddp = dir.filePath("ddp.txt");
        expectAllOk(runRanks(1, {"train", "steps=10", "batch=32", "constant=1", "out=" + big}));
        expectAllOk(runRanks(1, {"train", "steps=10", "batch=8", "accum=4", "constant=1", "out=" + accumulated}));
        compareParams(readLines(big, "param"), readLines(accumulated, "param"), 1e-5);
        // Accumulation across 2 ranks (no_sync on the first 3 micro-batches) gives the same too.
        expectAllOk(runRanks(2, {"train", "steps=10", "batch=4", "accum=4", "constant=1", "out=" + ddp}));
        compareParams(readLines(big, "param"), readLines(ddp, "param"), 1e-5);
    }

    void resumeIsBitwiseIdentical()
    {
        QTemporaryDir dir;
        const QString full = dir.filePath("full.txt"), part = dir.filePath("part.txt");
        const QString checkpoint = dir.filePath("ckpt");
        const QStringList common{"train",       "steps=20",        "batch=8", "shuffle=1",
                                 "dropout=0.2", "optimizer=adamw", "clip=1",  "size=96"};
        expectAllOk(runRanks(2, common + QStringList{"out=" + full}));
        // Save at step 10 and die with SIGKILL right after, as a crashed job would.
        const auto killed = runRanks(
            2, common + QStringList{"save_at=10", "checkpoint=" + checkpoint, "kill_after_save=1", "out=" + part});
        for (const auto &r : killed)
            QCOMPARE(r.status, QProcess::CrashExit);
        for (const char *file : {"model.safetensors", "optimizer.bin", "scheduler.json", "random_states_0.safetensors",
                                 "random_states_1.safetensors", "dl_state_dict.json"})
            QVERIFY2(QFile::exists(checkpoint + "/" + file), file);
        QVERIFY(!QFile::exists(checkpoint + ".partial"));
        expectAllOk(runRanks(2, common + QStringList{"resume=" + checkpoint, "resume_step=10", "out=" + part}));
        const QStringList a = readLines(full), b = readLines(part);
        QCOMPARE(b.size(), a.size());
        QCOMPARE(b, a); // losses of steps 1..20 and every parameter, bit for bit
    }

    void automaticCheckpointNamingRotates()
    {
        QTemporaryDir dir;
        const QString project = dir.filePath("project");
        for (int i = 0; i < 3; ++i)
            QDir().mkpath(project + "/checkpoints/checkpoint_" + QString::number(i));
        // The next save is checkpoint_3; with total_limit 2 the two oldest go first.
        expectAllOk(
            runRanks(1, {"train", "steps=4", "save_at=4", "project=" + project, "total_limit=2", "iteration=3"}));
        QDir checkpoints(project + "/checkpoints");
        QCOMPARE(checkpoints.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name),
                 QStringList({"checkpoint_2", "checkpoint_3"}));
        QVERIFY(QFile::exists(project + "/checkpoints/checkpoint_3/model.safetensors"));
        // An existing target folder is an error, not an overwrite.
        const auto again = runRanks(1, {"train", "steps=4", "save_at=4", "project=" + project, "iteration=3"});
        QCOMPARE(again[0].exitCode, 1);
        QVERIFY2(again[0].err.contains("already exists"), qPrintable(again[0].err));
    }

    void gatherForMetricsReturnsExactlyTheDataset()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("gather.txt");
        expectAllOk(runRanks(2, {"gather", "size=11", "batch=3", "out=" + out}));
        const QStringList lines = readLines(out);
        QStringList indices;
        for (const QString &line : lines) {
            if (!line.contains(' '))
                indices << line;
        }
        QStringList expected;
        for (int i = 0; i < 11; ++i)
            expected << QString::number(i);
        QCOMPARE(indices, expected);
        QVERIFY(lines.contains("padded 4 2.000000")); // rank 0 padded [1,-1], rank 1 [1,1]
        QVERIFY(lines.contains("broadcast 2.000000"));
        QVERIFY(lines.contains("max 1.000000"));
    }

    void bf16AutocastTrains()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("bf16.txt");
        expectAllOk(runRanks(2, {"train", "steps=40", "batch=16", "precision=bf16", "out=" + out}));
        const QStringList losses = readLines(out, "loss");
        QCOMPARE(losses.size(), 40);
        QVERIFY2(hexValue(losses.last()) < 0.7 * hexValue(losses.first()),
                 qPrintable(losses.first() + " -> " + losses.last()));
    }

    void missingPeerFailsFastNamingHostPortAndRanks()
    {
        const int port = freeLoopbackPort();
        QElapsedTimer timer;
        timer.start();
        const auto alone = runRanks(2, {"join", "timeout=3"}, 60000, port, {0});
        QVERIFY(timer.elapsed() < 20000);
        QCOMPARE(alone.size(), 1);
        QCOMPARE(alone[0].exitCode, 3);
        QVERIFY2(alone[0].err.contains(QString("127.0.0.1:%1").arg(port)), qPrintable(alone[0].err));
        QVERIFY2(alone[0].err.contains("missing ranks: 1"), qPrintable(alone[0].err));
    }

    void wrongPortFailsFastNamingRankZero()
    {
        const int port = freeLoopbackPort(); // nobody listens there
        QElapsedTimer timer;
        timer.start();
        const auto lost = runRanks(2, {"join", "timeout=3"}, 60000, port, {1});
        QVERIFY(timer.elapsed() < 20000);
        QCOMPARE(lost[0].exitCode, 3);
        QVERIFY2(lost[0].err.contains(QString("127.0.0.1:%1").arg(port)), qPrintable(lost[0].err));
        QVERIFY2(lost[0].err.contains("missing ranks: 0"), qPrintable(lost[0].err));
    }

    // A single-host job's rendezvous store must not be reachable from other hosts: rank 0 listens on
    // 127.0.0.1 only (c10d's TCPStore on its own binds every interface).
    void singleHostStoreListensOnLoopbackOnly()
    {
        const int port = freeLoopbackPort();
        QProcess rank0;
        const QProcessEnvironment env = rankZeroOfTwo(port);
        rank0.setProcessEnvironment(env);
        rank0.start(accel::test::binDir() + "/accel-runtime-probe", {"join", "timeout=30"});
        QVERIFY(rank0.waitForStarted());
        // /proc/net/tcp: "sl local_address rem_address st ...", addresses as hex IP:port, st 0A = LISTEN.
        const QString portHex = QString("%1").arg(port, 4, 16, QChar('0')).toUpper();
        QStringList listeners;
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                listeners.clear();
                for (const QString path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
                    QFile table(path);
                    if (!table.open(QIODevice::ReadOnly))
                        continue;
                    for (const QByteArray &line : table.readAll().split('\n')) {
                        const QStringList fields = QString::fromLatin1(line).simplified().split(' ');
                        if (fields.size() > 3 && fields[3] == "0A" && fields[1].endsWith(":" + portHex))
                            listeners << fields[1];
                    }
                }
                return !listeners.isEmpty();
            }(),
            20000);
        rank0.kill();
        rank0.waitForFinished();
        QCOMPARE(listeners, QStringList{"0100007F:" + portHex});
    }

    // Rank 0 takes the store's socket from the launcher (ACCEL_STORE_LISTEN_FD); a descriptor that
    // is not a socket listening on the loopback address at MASTER_PORT is refused by name.
    void storeSocketFromTheLauncherIsChecked()
    {
        const int port = freeLoopbackPort();
        QProcess rank0;
        QProcessEnvironment env = rankZeroOfTwo(port);
        env.insert("ACCEL_STORE_LISTEN_FD", "0"); // standard input: not a socket
        rank0.setProcessEnvironment(env);
        rank0.start(accel::test::binDir() + "/accel-runtime-probe", {"join", "timeout=10"});
        QVERIFY(rank0.waitForFinished(60000));
        QVERIFY(rank0.exitCode() != 0);
        const QString err = rank0.readAllStandardError();
        QVERIFY2(err.contains("ACCEL_STORE_LISTEN_FD=0 is not a socket listening on the loopback address at "
                              "MASTER_PORT") &&
                     err.contains(QString::number(port)),
                 qPrintable(err));
    }

    void twoRanksJoinAndReduce()
    {
        const auto results = runRanks(2, {"join", "timeout=30"});
        expectAllOk(results);
    }
};

QTEST_GUILESS_MAIN(tst_Accelerator)
#include "tst_accelerator.moc"
