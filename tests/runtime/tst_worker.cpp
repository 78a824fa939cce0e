// accel-worker as a program: capability report, job file errors, and real 1- and 2-rank jobs of
// every recipe that needs no outside files (selftest, mlp, gpt with resume, plugin).
#include "tests/helpers/rankjob.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>

namespace {

// Ranks of accel-worker running `job`; one rank is a plain process (no rank variables).
QList<accel::test::RankOutcome> runWorker(int worldSize, const QString &job, int timeoutMs = 240000,
                                          const QString &program = accel::test::binDir() + "/accel-worker")
{
    accel::test::RankJob rankJob;
    rankJob.program = program;
    rankJob.arguments = {job};
    rankJob.worldSize = worldSize;
    rankJob.rankVariablesWhenAlone = false;
    rankJob.unset = {"ACCEL_RUN_DIR", "ACCEL_METRICS_FILE"};
    rankJob.timeoutMs = timeoutMs;
    return accel::test::runRankJob(rankJob);
}

void writeFile(const QString &path, const QByteArray &content)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(content);
}

// A two-tensor safetensors file (inputs F32 [n, 2], targets I64 [n]) written byte by byte.
QByteArray classificationData(int n)
{
    QByteArray inputs, targets;
    for (int i = 0; i < n; ++i) {
        const float a = float((i * 37) % 17) / 8.0f - 1.0f, b = float((i * 11) % 13) / 6.0f - 1.0f;
        inputs.append(reinterpret_cast<const char *>(&a), 4);
        inputs.append(reinterpret_cast<const char *>(&b), 4);
        const int64_t label = a + b > 0 ? 1 : 0;
        targets.append(reinterpret_cast<const char *>(&label), 8);
    }
    QByteArray header = QString("{\"inputs\":{\"dtype\":\"F32\",\"shape\":[%1,2],\"data_offsets\":[0,%2]},"
                                "\"targets\":{\"dtype\":\"I64\",\"shape\":[%1],\"data_offsets\":[%2,%3]}}")
                            .arg(n)
                            .arg(inputs.size())
                            .arg(inputs.size() + targets.size())
                            .toUtf8();
    while (header.size() % 8)
        header.append(' ');
    QByteArray file(8, '\0');
    const uint64_t length = uint64_t(header.size());
    std::memcpy(file.data(), &length, 8);
    return file + header + inputs + targets;
}

QList<double> losses(const QString &metricsFile)
{
    QFile file(metricsFile);
    QList<double> values;
    if (!file.open(QIODevice::ReadOnly))
        return values;
    for (const QByteArray &line : file.readAll().split('\n')) {
        const QJsonObject object = QJsonDocument::fromJson(line).object();
        if (object.contains("loss"))
            values << object.value("loss").toDouble();
    }
    return values;
}

} // namespace

class tst_Worker : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void capabilitiesJson()
    {
        const auto result =
            accel::test::runProgram(accel::test::binDir() + "/accel-worker", {"--capabilities", "--json"});
        QCOMPARE(result.exitCode, 0);
        const QJsonObject object = QJsonDocument::fromJson(result.out.toUtf8()).object();
        QCOMPARE(object.value("schema").toString(), QString("accel.worker-capabilities"));
        QCOMPARE(object.value("version").toInt(), 2);
        QVERIFY(object.value("torch_version").toString().startsWith("2."));
        QCOMPARE(object.value("gloo").toBool(), true);
        QVERIFY(object.value("openmp_threads").toInt() >= 1);
        QVERIFY(object.contains("cuda") && object.contains("blas") && object.contains("mpi"));
        QVERIFY(result.out.startsWith("{\"schema\":\"accel.worker-capabilities\",\"version\":2"));
        // Built wherever CMake finds the CUDA toolkit; then the NCCL library libtorch loaded has a version.
#ifdef ACCEL_BUILT_WITH_CUDA
        QCOMPARE(object.value("cuda_compiled").toBool(), true);
        // ... through the runtime's CUDA plugin beside libaccel_runtime.so.
        QVERIFY2(object.value("cuda_plugin").toString().endsWith("/lib/libaccel_runtime_cuda.so"),
                 qPrintable(result.out));
        QVERIFY2(object.value("nccl_version").toString().count('.') == 2, qPrintable(result.out));
#endif
        // "cuda" says whether this process can use a GPU: never on a machine without one.
        if (!QFile::exists("/proc/driver/nvidia/gpus")) {
            QCOMPARE(object.value("cuda").toBool(), false);
            QCOMPARE(object.value("gpu_count").toInt(), 0);
        }
        // fp16 is listed exactly when a GPU can run it (CUDA autocast with loss scaling).
        const QJsonArray precisions = object.value("mixed_precision").toArray();
        QVERIFY(precisions.contains(QJsonValue("no")) && precisions.contains(QJsonValue("bf16")) &&
                precisions.contains(QJsonValue("fp8")));
        QCOMPARE(precisions.contains(QJsonValue("fp16")), object.value("cuda").toBool());
        // The CPU's matrix features as libtorch sees them, against /proc/cpuinfo's flags, and what
        // each precision runs on here; fp8's path is measured.
        const QJsonObject matrix = object.value("cpu_matrix").toObject();
        QFile cpuinfo("/proc/cpuinfo");
        QVERIFY(cpuinfo.open(QIODevice::ReadOnly));
        QByteArrayList flags;
        for (const QByteArray &line : cpuinfo.readAll().split('\n')) {
            if (line.startsWith("flags")) {
                flags = line.mid(line.indexOf(':') + 1).simplified().split(' ');
                break;
            }
        }
        for (const char *name : {"amx_bf16", "amx_tile", "avx512_bf16", "avx512_fp16", "avx512_vnni"}) {
            QVERIFY2(matrix.contains(name), name);
            QCOMPARE(matrix.value(name).toBool(), flags.contains(name));
        }
        const QJsonObject runsOn = object.value("cpu_precisions").toObject();
        QCOMPARE(runsOn.keys(), QStringList({"bf16", "fp8", "no"}));
        QCOMPARE(runsOn.value("bf16").toString().contains("AMX-BF16"), matrix.value("amx_bf16").toBool());
        const QString fp8 = runsOn.value("fp8").toString();
        QVERIFY2(fp8.contains("64^3 probe: _scaled_mm ") && fp8.contains(" ms, dequantized "), qPrintable(fp8));
        qInfo("fp8 on this CPU: %s", qPrintable(fp8));
    }

    void badJobFileIsBadInput()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("job.yaml"), "recipe: gtp\n");
        auto runs = runWorker(1, dir.filePath("job.yaml"));
        QCOMPARE(runs[0].exitCode, 2);
        QVERIFY2(runs[0].err.contains("did you mean gpt"), qPrintable(runs[0].err));
        writeFile(dir.filePath("job2.yaml"), "recipe: gpt\ndata: {corpus: c.txt}\ntraining:\n  batch_size: zero\n");
        runs = runWorker(1, dir.filePath("job2.yaml"));
        QCOMPARE(runs[0].exitCode, 2);
        QVERIFY2(runs[0].err.contains("training.batch_size") && runs[0].err.contains("zero"), qPrintable(runs[0].err));
        // A required key that is missing is named with what it should hold.
        writeFile(dir.filePath("job3.yaml"), "recipe: mlp\n");
        runs = runWorker(1, dir.filePath("job3.yaml"));
        QCOMPARE(runs[0].exitCode, 2);
        QVERIFY2(runs[0].err.contains("mlp.data: missing (safetensors with"), qPrintable(runs[0].err));
        // The tensor-parallel options of causal_lm are refused by name elsewhere.
        writeFile(dir.filePath("job4.yaml"), "recipe: selftest\ntraining: {sequence_parallel: true}\n");
        runs = runWorker(1, dir.filePath("job4.yaml"));
        QCOMPARE(runs[0].exitCode, 2);
        QVERIFY2(runs[0].err.contains("training.sequence_parallel: only the causal_lm recipe splits its model"),
                 qPrintable(runs[0].err));
    }

    void selfTestTwoRanks()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("selftest.yaml"), "recipe: selftest\ntraining:\n  timeout_s: 60\n");
        const auto runs = runWorker(2, dir.filePath("selftest.yaml"));
        QCOMPARE(runs[0].exitCode, 0);
        QCOMPARE(runs[1].exitCode, 0);
        QVERIFY2(runs[0].out.contains("Test is a success!"), qPrintable(runs[0].out + runs[0].err));
        QVERIFY(runs[0].out.contains("ok    DDP step"));
    }

    void mlpTrainsAndWritesWeights()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("data.safetensors"), classificationData(256));
        writeFile(dir.filePath("mlp.yaml"),
                  "recipe: mlp\n"
                  "output_dir: out\n"
                  "mlp:\n  data: data.safetensors\n  hidden: [16]\n  optimizer: sgd\n"
                  "training:\n  max_steps: 60\n  batch_size: 16\n  learning_rate: 0.1\n  log_every: 10\n");
        const auto runs = runWorker(2, dir.filePath("mlp.yaml"));
        QCOMPARE(runs[0].exitCode, 0);
        QCOMPARE(runs[1].exitCode, 0);
        QVERIFY(QFile::exists(dir.filePath("out/model.safetensors")));
        const QList<double> rank0 = losses(dir.filePath("out/metrics/rank0.jsonl"));
        QCOMPARE(rank0.size(), 6);
        QVERIFY2(rank0.last() < 0.6 * rank0.first(),
                 qPrintable(QString("%1 -> %2").arg(rank0.first()).arg(rank0.last())));
        QCOMPARE(losses(dir.filePath("out/metrics/rank1.jsonl")), rank0); // every rank logs the mean loss
    }

    void gptCheckpointsAndResumes()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("corpus.txt"), QByteArray("the cat sat on the mat. ").repeated(400));
        const QByteArray common =
            "recipe: gpt\noutput_dir: out\nmodel: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32}\n"
            "data: {corpus: corpus.txt}\nsample: {length: 20}\n";
        writeFile(dir.filePath("a.yaml"), common + "training: {max_steps: 10, batch_size: 4, checkpoint_every: 5, "
                                                   "checkpoint_total_limit: 1, eval_every: 5, log_every: 5}\n");
        auto runs = runWorker(1, dir.filePath("a.yaml"));
        QVERIFY2(runs[0].exitCode == 0, qPrintable(runs[0].err));
        QVERIFY(runs[0].out.contains("sample: "));
        QDir checkpoints(dir.filePath("out/checkpoints"));
        QCOMPARE(checkpoints.entryList(QDir::Dirs | QDir::NoDotAndDotDot), QStringList({"checkpoint_1"}));
        writeFile(dir.filePath("b.yaml"),
                  common + "training: {max_steps: 15, batch_size: 4, checkpoint_every: 5, log_every: 5}\n");
        runs = runWorker(1, dir.filePath("b.yaml"));
        QVERIFY2(runs[0].exitCode == 0, qPrintable(runs[0].err));
        QVERIFY2(runs[0].out.contains("resumed from step 10"), qPrintable(runs[0].out));
        QVERIFY(runs[0].out.contains("step 15/15"));
        QVERIFY(QFile::exists(dir.filePath("out/checkpoints/checkpoint_2/model.safetensors")));
        // Regression (issue 33, item 3): a checkpoint_<n> that a kill left half-deleted (as the
        // removal of an old one used to) is skipped with a warning; the run resumes from the
        // newest whole one instead of refusing every resume.
        QVERIFY(QFile::remove(dir.filePath("out/checkpoints/checkpoint_2/random_states_0.safetensors")));
        writeFile(dir.filePath("c.yaml"),
                  common + "training: {max_steps: 20, batch_size: 4, checkpoint_every: 5, log_every: 5}\n");
        runs = runWorker(1, dir.filePath("c.yaml"));
        QVERIFY2(runs[0].exitCode == 0, qPrintable(runs[0].err));
        QVERIFY2(runs[0].err.contains("checkpoint_2: random_states_0.safetensors is missing (a checkpoint partly "
                                      "deleted); resuming from an older one"),
                 qPrintable(runs[0].err));
        QVERIFY2(runs[0].out.contains("resumed from step 10"), qPrintable(runs[0].out));
    }

    // Regression (issue 33, item 14): a checkpoint error on one rank only (its random_states file
    // unreadable on load, unwritable on save) left the other rank waiting in the next collective
    // until timeout_s. Now every rank ends at once, the others naming that rank and its file.
    void rankLocalCheckpointErrorEndsEveryRank()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("corpus.txt"), QByteArray("the cat sat on the mat. ").repeated(200));
        const QByteArray common = "recipe: gpt\noutput_dir: out\nmodel: {n_layer: 1, n_head: 2, n_embd: 16, "
                                  "block_size: 16}\ndata: {corpus: corpus.txt}\nsample: {length: 0}\n";
        const QByteArray training = "  batch_size: 2\n  checkpoint_every: 2\n  log_every: 2\n  timeout_s: 600\n";
        writeFile(dir.filePath("a.yaml"), common + "training:\n  max_steps: 2\n" + training);
        auto runs = runWorker(2, dir.filePath("a.yaml"), 60000);
        QVERIFY2(runs[0].ok() && runs[1].ok(), qPrintable(runs[0].err + runs[1].err));
        const QString rng1 = dir.filePath("out/checkpoints/checkpoint_0/random_states_1.safetensors");
        QVERIFY(QFile::exists(rng1));

        // Load: rank 1's file is not a safetensors file any more.
        writeFile(rng1, "not a safetensors file");
        writeFile(dir.filePath("b.yaml"), common + "training:\n  max_steps: 4\n" + training);
        runs = runWorker(2, dir.filePath("b.yaml"), 60000); // far below timeout_s
        for (const auto &run : runs) // rank 1: exit 2, its file is bad input; rank 0: exit 1, a failure
            QVERIFY2(run.started && !run.timedOut && run.status == QProcess::NormalExit && run.exitCode == 1 + run.rank,
                     qPrintable(QStringLiteral("rank %1: exit %2\n").arg(run.rank).arg(run.exitCode) + run.err));
        QVERIFY2(runs[0].err.contains("loadState: rank 1 failed: ") && runs[0].err.contains(rng1),
                 qPrintable(runs[0].err));

        // Save: rank 1 may write no file past 3 KiB (its random state is ~5 KiB), rank 0 may.
        QVERIFY(QFile::remove(rng1));
        QVERIFY(QDir(dir.filePath("out/checkpoints")).removeRecursively());
        writeFile(dir.filePath("limit.sh"), "trap '' XFSZ\n[ \"$RANK\" = 1 ] && ulimit -f 6\nexec \"$@\"\n");
        accel::test::RankJob job;
        job.program = QStringLiteral("/bin/sh");
        job.arguments = {dir.filePath("limit.sh"), accel::test::binDir() + "/accel-worker", dir.filePath("a.yaml")};
        job.worldSize = 2;
        job.unset = {"ACCEL_RUN_DIR", "ACCEL_METRICS_FILE"};
        job.timeoutMs = 60000;
        runs = accel::test::runRankJob(job);
        for (const auto &run : runs)
            QVERIFY2(run.started && !run.timedOut && run.status == QProcess::NormalExit && run.exitCode == 1,
                     qPrintable(QStringLiteral("rank %1: exit %2\n").arg(run.rank).arg(run.exitCode) + run.err));
        QVERIFY2(runs[0].err.contains("saveState: rank 1 failed: ") && runs[0].err.contains("random_states_1"),
                 qPrintable(runs[0].err));
        QVERIFY(!QFile::exists(dir.filePath("out/checkpoints/checkpoint_0"))); // nothing half-saved published
    }

    void torchScriptModuleTrains()
    {
        QTemporaryDir dir;
        const auto made = accel::test::runProgram(
            accel::test::binDir() + "/accel-runtime-probe",
            {"make-torchscript", "module=" + dir.filePath("loss.pt"), "data=" + dir.filePath("data.safetensors")});
        QVERIFY2(made.exitCode == 0, qPrintable(made.err));
        writeFile(dir.filePath("ts.yaml"),
                  "recipe: torchscript\noutput_dir: out\n"
                  "torchscript: {module: loss.pt, data: data.safetensors, inputs: [x, y]}\n"
                  "training: {max_steps: 60, batch_size: 16, learning_rate: 0.05, log_every: 10}\n");
        const auto runs = runWorker(2, dir.filePath("ts.yaml"));
        QVERIFY2(runs[0].exitCode == 0 && runs[1].exitCode == 0, qPrintable(runs[0].err + runs[1].err));
        QVERIFY(QFile::exists(dir.filePath("out/model.pt")));
        const QList<double> values = losses(dir.filePath("out/metrics/rank0.jsonl"));
        QCOMPARE(values.size(), 6);
        QVERIFY2(values.last() < 0.3 * values.first(),
                 qPrintable(QString("%1 -> %2").arg(values.first()).arg(values.last())));
    }

    // What the accel-worker package carries (CMake components worker and libtorch, docs/packaging.md),
    // installed alone: no CUDA library beyond the CUDA runtime libtorch_cpu.so itself needs, nothing
    // looked up outside the install, no GPU path and the reason, and two ranks train with gloo.
    void cpuOnlyInstallTrains()
    {
        QTemporaryDir prefix;
        const QString build = QDir(accel::test::binDir() + "/..").absolutePath();
        for (const QString component : {"worker", "libtorch"}) {
            const auto installed = accel::test::runProgram(
                "cmake", {"--install", build, "--prefix", prefix.path(), "--component", component}, 120000);
            QVERIFY2(installed.exitCode == 0, qPrintable(installed.out + installed.err));
        }
        const QString worker = prefix.filePath("bin/accel-worker");
        const QString libraries = prefix.filePath("lib/accel-studio");
        const auto torchCpu = accel::test::runProgram("readelf", {"-d", libraries + "/libtorch_cpu.so"});
        QCOMPARE(torchCpu.exitCode, 0);
        for (const QString &name : QDir(libraries).entryList(QDir::Files)) {
            const bool cudaLibrary = name.contains(
                QRegularExpression("^lib(cu|nccl|nvshmem|nvrtc|nvJit|torch\\.so|torch_cuda|c10_cuda|caffe2_nvrtc)"));
            QVERIFY2(!cudaLibrary || torchCpu.out.contains("[" + name + "]"), qPrintable(name));
        }
        const auto closure = accel::test::runProgram("ldd", {worker}, 60000, {}, {"LD_LIBRARY_PATH="});
        QCOMPARE(closure.exitCode, 0);
        QVERIFY2(!closure.out.contains("not found") && !closure.out.contains(accel::test::sourceDir()) &&
                     !closure.out.contains(build) && !closure.out.contains("torch_cuda") &&
                     !closure.out.contains("nccl"),
                 qPrintable(closure.out));
        const auto capabilities = accel::test::runProgram(worker, {"--capabilities", "--json"});
        QVERIFY2(capabilities.exitCode == 0, qPrintable(capabilities.err));
        const QJsonObject report = QJsonDocument::fromJson(capabilities.out.toUtf8()).object();
        QCOMPARE(report.value("cuda_compiled").toBool(true), false);
        QCOMPARE(report.value("cuda").toBool(true), false);
        QVERIFY(report.value("nccl_version").isNull()); // NCCL never loaded
#ifdef ACCEL_BUILT_WITH_CUDA
        QVERIFY2(report.value("cuda_plugin").toString().contains("libaccel_runtime_cuda.so") &&
                     report.value("cuda_plugin").toString().contains("install accel-worker-cuda"),
                 qPrintable(capabilities.out));
#endif
        QTemporaryDir dir;
        writeFile(dir.filePath("data.safetensors"), classificationData(64));
        writeFile(dir.filePath("mlp.yaml"),
                  "recipe: mlp\noutput_dir: out\nmlp:\n  data: data.safetensors\n  hidden: [8]\n"
                  "training:\n  max_steps: 10\n  batch_size: 16\n  log_every: 5\n");
        const auto runs = runWorker(2, dir.filePath("mlp.yaml"), 120000, worker);
        QVERIFY2(runs[0].ok() && runs[1].ok(), qPrintable(runs[0].err + runs[1].err));
        QVERIFY(QFile::exists(dir.filePath("out/model.safetensors")));
    }

    void pluginRuns()
    {
        const QString plugin =
            QDir(accel::test::binDir() + "/../plugins").absoluteFilePath("libaccel_plugin_linearregression.so");
        if (!QFile::exists(plugin))
            QSKIP("the example plugin was not built");
        QTemporaryDir dir;
        writeFile(dir.filePath("plugin.yaml"),
                  QString("recipe: plugin\noutput_dir: out\nplugin:\n  library: %1\n  settings: {steps: 100}\n")
                      .arg(plugin)
                      .toUtf8());
        const auto runs = runWorker(2, dir.filePath("plugin.yaml"));
        QVERIFY2(runs[0].exitCode == 0 && runs[1].exitCode == 0, qPrintable(runs[0].err + runs[1].err));
        QVERIFY2(runs[0].out.contains("linear regression plugin: 100 steps"), qPrintable(runs[0].out));
        QVERIFY(QFile::exists(dir.filePath("out/model.safetensors")));
    }
};

QTEST_GUILESS_MAIN(tst_Worker)
#include "tst_worker.moc"
