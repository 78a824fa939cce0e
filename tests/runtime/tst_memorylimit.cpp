// A model whose DDP ranks do not fit a memory limit trains to the end under ZeRO-3 within it.
// Two real accel-worker ranks of the gpt recipe, each started with RLIMIT_DATA (the limit on a
// process's private writable memory, which every libtorch allocation counts against; the shared
// memory of the collectives does not) set to the same limit: DDP fails with libtorch's
// out-of-memory error, ZeRO-3 completes every step and writes the model. Without the limit DDP
// trains, so the limit is what stops it. Peak RSS and data size of every rank are sampled from
// /proc and printed.
#include "tests/helpers/sanitizerbuild.h"
#include "tests/runtime/shardingsupport.h"

#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <sys/resource.h>

using namespace accel::test::sharding;

namespace {

// 6 blocks of n_embd 1024: 75.6 M parameters, 302 MB in float32. With AdamW a DDP rank holds
// parameters, gradients and two moments (1.2 GB) plus the gradient buckets; a ZeRO-3 rank half of
// the first four and one gathered block at a time. Measured here before the limit was chosen:
// largest data size per rank DDP 1911 / 1916 MiB, ZeRO-3 1534 / 1560 MiB (1580 / 1588 MiB once
// zero3_init_flag, on by default at stage 3, built the blocks one by one: docs/sharding.md).
constexpr qint64 kLimitBytes = qint64(1720) << 20;
constexpr const char *kModel = "{n_layer: 6, n_head: 4, n_embd: 1024, block_size: 64}";
constexpr int kSteps = 3;

struct Run {
    bool ok = true;
    QString errors;
    qint64 peakRss[2] = {0, 0};  // VmHWM
    qint64 peakData[2] = {0, 0}; // largest VmData seen
    // Largest VmData until the rank's first metrics line (written once prepareModel is done).
    qint64 preparedData[2] = {0, 0};
};

qint64 statusField(qint64 pid, const char *field)
{
    QFile file(QString("/proc/%1/status").arg(pid));
    if (!file.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : file.readAll().split('\n')) {
        if (line.startsWith(field))
            return line.mid(int(qstrlen(field))).trimmed().split(' ').value(0).toLongLong() * 1024;
    }
    return 0;
}

// `outputDir`: the job's output_dir, where each rank writes metrics/rank<r>.jsonl (for preparedData).
Run runLimited(const QString &jobPath, const QStringList &env, qint64 limit, const QString &outputDir = {})
{
    accel::test::RankJob job;
    job.program = accel::test::binDir() + "/accel-worker";
    job.arguments = {jobPath};
    job.worldSize = 2;
    job.env = env;
    job.workingDirectory = QFileInfo(jobPath).absolutePath();
    job.timeoutMs = 1000; // after the sampling below, which waits up to 10 minutes
    if (limit > 0) {
        job.childModifier = [limit] {
            const rlimit data{rlim_t(limit), rlim_t(limit)};
            ::setrlimit(RLIMIT_DATA, &data);
        };
    }
    accel::test::RankJobRun ranks(job);
    const auto &processes = ranks.processes();
    Run run;
    bool prepared[2] = {outputDir.isEmpty(), outputDir.isEmpty()};
    QElapsedTimer clock;
    clock.start();
    for (bool running = true; running && clock.elapsed() < 600000;) {
        running = false;
        for (int r = 0; r < 2; ++r) {
            auto &process = processes[size_t(r)];
            if (process->state() == QProcess::NotRunning || process->waitForFinished(0))
                continue;
            running = true;
            const qint64 pid = process->processId();
            run.peakRss[r] = std::max(run.peakRss[r], statusField(pid, "VmHWM:"));
            const qint64 data = statusField(pid, "VmData:");
            run.peakData[r] = std::max(run.peakData[r], data);
            if (!prepared[r])
                prepared[r] = QFileInfo(QString("%1/metrics/rank%2.jsonl").arg(outputDir).arg(r)).size() > 0;
            if (!prepared[r])
                run.preparedData[r] = std::max(run.preparedData[r], data);
        }
        QThread::msleep(50);
    }
    run.errors = accel::test::failures(ranks.wait());
    run.ok = run.errors.isEmpty();
    return run;
}

QString mib(qint64 bytes)
{
    return QString::number(double(bytes) / (1 << 20), 'f', 0) + " MiB";
}

} // namespace

class tst_MemoryLimit : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    QString job(const QString &name, const QString &model = kModel, int steps = kSteps)
    {
        const QString path = m_dir.filePath(name + ".yaml");
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly))
            return {};
        file.write(QString("recipe: gpt\noutput_dir: %1\nmodel: %3\n"
                           "data: {corpus: corpus.txt}\nsample: {length: 0}\n"
                           "training: {max_steps: %2, batch_size: 2, log_every: 1, resume: none}\n")
                       .arg(name)
                       .arg(steps)
                       .arg(model)
                       .toUtf8());
        return path;
    }

    void report(const char *what, const Run &run)
    {
        qInfo("%s: %s; peak RSS per rank %s, %s; largest data size %s, %s (limit %s)", what,
              run.ok ? "finished" : "failed", qPrintable(mib(run.peakRss[0])), qPrintable(mib(run.peakRss[1])),
              qPrintable(mib(run.peakData[0])), qPrintable(mib(run.peakData[1])), qPrintable(mib(kLimitBytes)));
    }

#ifdef ACCEL_UNDER_SANITIZER
    // The limits below are the normal build's: under ASan a rank's data size also holds the
    // sanitizer's shadow memory and quarantine, and an allocation past the limit aborts inside
    // ASan's allocator (exit 6) instead of raising libtorch's "can't allocate memory".
    static constexpr const char *kSanitizerSkip =
        "memory limits are measured for the normal build: under ASan the data size holds shadow memory and "
        "quarantine, and a failed allocation aborts in ASan's allocator";
#endif

private Q_SLOTS:
    void initTestCase()
    {
        if (!QFile::exists(accel::test::binDir() + "/accel-worker"))
            QSKIP("accel-worker is not built");
        QVERIFY(m_dir.isValid());
        QFile corpus(m_dir.filePath("corpus.txt"));
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        for (int i = 0; i < 300; ++i)
            corpus.write("the cat sat on the mat. a dog ran in the fog. ");
    }

    void ddpTrainsWithoutTheLimit()
    {
        const Run run = runLimited(job("ddp_free"), {}, 0);
        report("DDP without a limit", run);
        QVERIFY2(run.ok, qPrintable(run.errors));
        QVERIFY(QFile::exists(m_dir.filePath("ddp_free/model.safetensors")));
        // The ranks do need more than the limit.
        QVERIFY2(run.peakData[0] > kLimitBytes && run.peakData[1] > kLimitBytes, "DDP fits the limit: raise the model");
    }

    void ddpFailsWithinTheLimit()
    {
#ifdef ACCEL_UNDER_SANITIZER
        QSKIP(kSanitizerSkip);
#endif
        const Run run = runLimited(job("ddp"), {}, kLimitBytes);
        report("DDP within the limit", run);
        QVERIFY(!run.ok);
        // libtorch's allocator: "DefaultCPUAllocator: can't allocate memory: you tried to allocate ..."
        QVERIFY2(run.errors.contains("can't allocate memory") || run.errors.contains("bad_alloc"),
                 qPrintable(run.errors.left(600)));
        QVERIFY(!QFile::exists(m_dir.filePath("ddp/model.safetensors")));
    }

    void zero3TrainsToTheEndWithinTheLimit()
    {
#ifdef ACCEL_UNDER_SANITIZER
        QSKIP(kSanitizerSkip);
#endif
        const Run run = runLimited(job("zero3"), {"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"},
                                   kLimitBytes);
        report("ZeRO-3 within the limit", run);
        QVERIFY2(run.ok, qPrintable(run.errors));
        QVERIFY(QFile::exists(m_dir.filePath("zero3/model.safetensors")));
        QVERIFY(run.peakData[0] <= kLimitBytes && run.peakData[1] <= kLimitBytes);
    }

    void zero3InitNeverHoldsTheWholeModel()
    {
#ifdef ACCEL_UNDER_SANITIZER
        QSKIP(kSanitizerSkip);
#endif
        // ZeRO-3 with zero3_init_flag (Accelerate's default at stage 3): the gpt recipe shards each
        // block as soon as it is built, so until prepareModel is done a rank holds its shard of the
        // model plus the block being built, never the whole model; with the flag off every rank
        // builds the whole model first. One step each. glibc's dynamic mmap threshold would keep
        // freed tensors' memory in the heap (the data size then stays at its high-water mark
        // whatever a rank frees); a fixed threshold gives each tensor a mapping of its own, unmapped
        // when it is freed, so the data size follows what the rank holds.
        // Empty run directory and metrics file: each rank writes metrics/rank<r>.jsonl in the output_dir.
        const QStringList env{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3",
                              "MALLOC_MMAP_THRESHOLD_=1048576", "ACCEL_RUN_DIR=", "ACCEL_METRICS_FILE="};
        // The same ranks with a model of 1 block of n_embd 64, over its whole run: what a rank holds
        // besides the model (its data size until prepared varies by a one-off 25 MiB).
        const Run base = runLimited(job("zero3init_base", "{n_layer: 1, n_head: 4, n_embd: 64, block_size: 64}", 1),
                                    env, 0, m_dir.filePath("zero3init_base"));
        QVERIFY2(base.ok, qPrintable(base.errors));
        const Run built = runLimited(job("zero3init_on", kModel, 1), env, 0, m_dir.filePath("zero3init_on"));
        QVERIFY2(built.ok, qPrintable(built.errors));
        const Run whole =
            runLimited(job("zero3init_off", kModel, 1), env + QStringList{"ACCELERATE_DEEPSPEED_ZERO3_INIT=false"}, 0,
                       m_dir.filePath("zero3init_off"));
        QVERIFY2(whole.ok, qPrintable(whole.errors));
        // P = 256 C + T C + L (12 C^2 + 13 C) + 2 C parameters, 4 bytes each; a block 12 C^2 + 13 C.
        const qint64 c = 1024, model = (256 * c + 64 * c + 6 * (12 * c * c + 13 * c) + 2 * c) * 4,
                     block = (12 * c * c + 13 * c) * 4;
        for (int r = 0; r < 2; ++r) {
            // Its shard (P/2), a block being built and its flat copy, 32 MiB for the rest.
            const qint64 bound = base.peakData[r] + model / 2 + 2 * block + (qint64(32) << 20);
            qInfo("rank %d until prepared: with zero3_init_flag %s, without %s; bound %s (base %s + P/2 %s + 2 "
                  "blocks %s + 32 MiB); whole run %s / %s",
                  r, qPrintable(mib(built.preparedData[r])), qPrintable(mib(whole.preparedData[r])),
                  qPrintable(mib(bound)), qPrintable(mib(base.peakData[r])), qPrintable(mib(model / 2)),
                  qPrintable(mib(2 * block)), qPrintable(mib(built.peakData[r])), qPrintable(mib(whole.peakData[r])));
            QVERIFY(base.peakData[r] > 0 && built.preparedData[r] > 0);
            QVERIFY2(built.preparedData[r] < bound, "a rank held more than its shard and a block while building");
            QVERIFY2(whole.preparedData[r] > bound, "without zero3_init_flag the whole model fits the bound");
        }
    }
};

QTEST_GUILESS_MAIN(tst_MemoryLimit)
#include "tst_memorylimit.moc"
