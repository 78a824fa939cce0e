// Context parallelism (parallelism_config cp_size) in accel-worker's causal_lm recipe, on a tiny
// random Llama saved by transformers (tests/runtime/finetune_oracle.py's model, tokenizer and data,
// without its reference runs): 10 float32 steps with cp 2 equal one rank on the global batch —
// every step's loss and the evaluation loss within 1e-5 (relative), the final weights within
// floattensors.h's kSplitRunWeightTolerance — for each of Accelerate's K/V exchanges (allgather,
// alltoall), for padded instruction batches, and with dp_shard 2 under FSDP2, dp_replicate 2 and tp 2
// on 4 ranks, and with FSDP2 through the real accel launch; with LoRA, on cp 2, tp 2 and both. What
// it cannot do is refused by name.
#include "tests/compat/oracle.h"
#include "tests/helpers/floattensors.h"
#include "tests/helpers/metricsfile.h"
#include "tests/helpers/rankjob.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <cmath>

using namespace accel;
using namespace accel::test;

namespace {

constexpr double kTolerance = 1e-5; // relative, per step loss and evaluation loss

// The oracle's model, tokenizer and data (no reference training): DIR/llama, DIR/gpt2, DIR/*.txt.
const char *kPrepare = R"(
import os, shutil, sys
sys.path.insert(0, sys.argv[1])
import torch
import finetune_oracle as oracle
torch.set_num_threads(1)
root = sys.argv[2]
tok = oracle.train_tokenizer(oracle.write_data(root), root)
eos = tok.token_to_id("<|endoftext|>")
for family in ("llama", "gpt2"):
    folder = os.path.join(root, family)
    oracle.make_model(family, tok.get_vocab_size(), eos, folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(root, name), folder)
print("prepared")
)";

} // namespace

class tst_ContextParallel : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_skip;

    QString path(const QString &name) const { return m_dir.filePath(name); }

    // A causal_lm job: float32, shuffle off, a loss line per step, an evaluation at steps 5 and 10.
    QString job(const QString &name, int batch, const QString &data = QStringLiteral("train.txt"), int block = 16,
                const QString &model = QStringLiteral("llama"), const QString &extra = {})
    {
        const QString file = path(name + ".yaml");
        QFile out(file);
        if (!out.open(QIODevice::WriteOnly))
            return {};
        out.write(QStringLiteral("recipe: causal_lm\noutput_dir: %1\nmodel: {path: %2}\n"
                                 "data: {train: %3, eval: eval.txt, block_size: %4}\n"
                                 "training: {max_steps: 10, batch_size: %5, learning_rate: 2.0e-3, warmup_steps: 2, "
                                 "min_lr_ratio: 0.1, grad_clip: 1.0, shuffle: false, log_every: 1, eval_every: 5, "
                                 "eval_batches: 2, mixed_precision: \"no\"}\n")
                      .arg(name, model, data)
                      .arg(block)
                      .arg(batch)
                      .toUtf8() +
                  extra.toUtf8());
        return file;
    }

    QList<RankOutcome> runWorker(const QString &jobFile, int ranks, const QStringList &env = {})
    {
        RankJob rankJob;
        rankJob.program = binDir() + "/accel-worker";
        rankJob.arguments = {jobFile};
        rankJob.worldSize = ranks;
        rankJob.rankVariablesWhenAlone = false;
        rankJob.env = env;
        rankJob.workingDirectory = m_dir.path();
        return runRankJob(rankJob);
    }

    // Losses (per step and evaluation) and the written weights of run `ours` against run `theirs`.
    // (`oursMetrics`: the run directory with ours's metrics when not ours itself.)
    // (`weights`: the written file compared, under each run's output folder.)
    QString compareRuns(const QString &ours, const QString &theirs, const QString &oursMetrics = {},
                        const QString &weights = QStringLiteral("model/model.safetensors"))
    {
        double worstLoss = 0;
        for (const char *key : {"loss", "eval_loss"}) {
            const QList<double> a = metricValues(
                                    path((oursMetrics.isEmpty() ? ours : oursMetrics) + "/metrics/rank0.jsonl"),
                                    QLatin1String(key)),
                                b = metricValues(path(theirs + "/metrics/rank0.jsonl"), QLatin1String(key));
            if (a.size() != b.size() || a.isEmpty())
                return QStringLiteral("%1: %2 values against %3").arg(key).arg(a.size()).arg(b.size());
            for (int i = 0; i < a.size(); ++i)
                worstLoss = std::max(worstLoss, std::isnan(a[i]) ? INFINITY : std::fabs(a[i] - b[i]) / std::fabs(b[i]));
        }
        QString error, tensor;
        const double worstWeight =
            largestWeightDifference(path(ours + "/" + weights), path(theirs + "/" + weights), &error, &tensor);
        if (!error.isEmpty())
            return error;
        qInfo("%s against %s: largest loss difference %.3g, largest weight difference %.3g (relative, in %s)",
              qPrintable(ours), qPrintable(theirs), worstLoss, worstWeight, qPrintable(tensor));
        if (!(worstLoss <= kTolerance) || !(worstWeight <= kSplitRunWeightTolerance))
            return QStringLiteral("loss %1, weights %2 (%3)").arg(worstLoss).arg(worstWeight).arg(tensor);
        return {};
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QString why;
        const QString python = oraclePython({"transformers", "tokenizers", "safetensors"}, &why);
        if (python.isEmpty()) {
            m_skip = why;
            return;
        }
        const ProcessResult prepared =
            runProgram(python, {"-c", kPrepare, QDir(sourceDir()).filePath("tests/runtime"), m_dir.path()}, 240000);
        QVERIFY2(prepared.exitCode == 0 && prepared.out.contains("prepared"), qPrintable(prepared.err.right(3000)));
    }

    void init()
    {
        if (!m_skip.isEmpty())
            QSKIP(qPrintable(m_skip));
    }

    void equalsOneRank_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<int>("globalBatch");
        QTest::addColumn<QString>("data");
        QTest::addColumn<int>("block");
        QTest::addColumn<QString>("mesh");
        const QStringList cp{"ACCELERATE_USE_PARALLELISM_CONFIG=true", "PARALLELISM_CONFIG_CP_SIZE=2"};
        QTest::newRow("cp 2 allgather") << 2 << cp << 4 << "train.txt" << 16
                                        << "2 process(es), DDP, mesh cp 2 (cp 2, allgather exchange";
        QTest::newRow("cp 2 alltoall") << 2 << cp + QStringList{"PARALLELISM_CONFIG_CP_COMM_STRATEGY=alltoall"} << 4
                                       << "train.txt" << 16 << "2 process(es), DDP, mesh cp 2 (cp 2, alltoall exchange";
        // Padded batches of uneven length (not multiples of 2 x cp), loss on the completions only.
        QTest::newRow("cp 2 alltoall instructions")
            << 2 << cp + QStringList{"PARALLELISM_CONFIG_CP_COMM_STRATEGY=alltoall"} << 4 << "instruct.jsonl" << 20
            << "mesh cp 2 (cp 2, alltoall exchange";
        QTest::newRow("dp_replicate 2 x cp 2")
            << 4 << cp + QStringList{"PARALLELISM_CONFIG_DP_REPLICATE_SIZE=2"} << 8 << "train.txt" << 16
            << "4 process(es), DDP, mesh dp_replicate 2 x cp 2 (cp 2, allgather";
        // Each tp rank's heads over the cp ring; the tp group's ranks read the same samples too.
        QTest::newRow("cp 2 x tp 2")
            << 4 << cp + QStringList{"PARALLELISM_CONFIG_TP_SIZE=2", "PARALLELISM_CONFIG_CP_COMM_STRATEGY=alltoall"}
            << 4 << "train.txt" << 16
            << "4 process(es), DDP, mesh cp 2 x tp 2 (tp collectives: shared-memory; cp 2, alltoall";
        QTest::newRow("dp_shard 2 x cp 2 FSDP2")
            << 4
            << cp + QStringList{"PARALLELISM_CONFIG_DP_SHARD_SIZE=2",
                                "ACCELERATE_USE_FSDP=true",
                                "FSDP_VERSION=2",
                                "FSDP_RESHARD_AFTER_FORWARD=true",
                                "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                                "FSDP_TRANSFORMER_CLS_TO_WRAP=LlamaDecoderLayer"}
            << 8 << "train.txt" << 16
            << "4 process(es), fully_shard(reshard_after_forward=True), mesh dp_shard 2 x cp 2 (cp 2, allgather";
    }

    void equalsOneRank()
    {
        QFETCH(int, ranks);
        QFETCH(QStringList, env);
        QFETCH(int, globalBatch);
        QFETCH(QString, data);
        QFETCH(int, block);
        QFETCH(QString, mesh);
        const QString reference = QStringLiteral("one-%1-%2").arg(QFileInfo(data).baseName()).arg(globalBatch);
        if (!QFileInfo::exists(path(reference + "/model/model.safetensors"))) {
            const auto single = runWorker(job(reference, globalBatch, data, block), 1);
            QVERIFY2(failures(single).isEmpty(), qPrintable(failures(single)));
        }
        const QString name = "run-" + QString(QTest::currentDataTag()).replace(' ', '-');
        QElapsedTimer timer;
        timer.start();
        const int replicas = env.join(' ').contains("TP_SIZE=2") ? ranks / 4 : ranks / 2;
        const auto outcome = runWorker(job(name, globalBatch / replicas, data, block), ranks, env);
        QVERIFY2(failures(outcome).isEmpty(), qPrintable(failures(outcome)));
        qInfo("%d ranks: %.1f s", ranks, timer.elapsed() / 1000.0);
        QVERIFY2(outcome[0].out.contains(mesh), qPrintable(outcome[0].out));
        const QString mismatch = compareRuns(name, reference);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    }

    // FSDP2 with parallelism_config cp_size 2 through the real accel launch (Accelerate's launcher
    // takes a parallelism_config only with FSDP2), as a user starts it: one rank's numbers.
    void throughAccelLaunch()
    {
        QFile config(path("cp-fsdp2.yaml"));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n"
                     "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                     "  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n"
                     "parallelism_config:\n  parallelism_config_cp_size: 2\n"
                     "  parallelism_config_cp_comm_strategy: alltoall\n"
                     "machine_rank: 0\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\n");
        config.close();
        const QString reference = QStringLiteral("one-train-4");
        if (!QFileInfo::exists(path(reference + "/model/model.safetensors"))) {
            const auto single = runWorker(job(reference, 4), 1);
            QVERIFY2(failures(single).isEmpty(), qPrintable(failures(single)));
        }
        const ProcessResult launched =
            runAccel({"launch", "--config_file", path("cp-fsdp2.yaml"), "--run_dir", path("launch-cp"), "--no_mirror",
                      "--main_process_port", "0", "--job", job("run-launch-cp", 4)},
                     240000);
        QVERIFY2(launched.exitCode == 0, qPrintable(launched.err));
        QFile log(path("launch-cp/logs/rank0.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QString rankLog = QString::fromUtf8(log.readAll());
        QVERIFY2(rankLog.contains("2 process(es), fully_shard(reshard_after_forward=True), mesh cp 2 (cp 2, alltoall"),
                 qPrintable(rankLog));
        // The run directory holds the metrics, the job's output folder the model.
        const QString mismatch = compareRuns("run-launch-cp", reference, "launch-cp");
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
        // accel estimate-memory knows the mesh: FSDP2 shards over dp_shard (1 here), not over the cp
        // ranks, so each rank holds the whole model, as the run measured.
        const ProcessResult estimate =
            runAccel({"estimate-memory", job("run-launch-cp", 4), "--config_file", path("cp-fsdp2.yaml"), "--json"});
        QVERIFY2(estimate.exitCode == 0, qPrintable(estimate.err));
        const QJsonObject row = QJsonDocument::fromJson(estimate.out.toUtf8())
                                    .object()
                                    .value("per_rank_training")
                                    .toObject()
                                    .value("rows")
                                    .toArray()
                                    .first()
                                    .toObject();
        const QList<double> measured = metricValues(path("launch-cp/metrics/rank0.jsonl"), "mem_params_bytes");
        QVERIFY(!measured.isEmpty());
        QCOMPARE(row.value("parameters_bytes").toDouble(), measured.last());
        QCOMPARE(row.value("optimizer_state_bytes").toDouble(),
                 metricValues(path("launch-cp/metrics/rank0.jsonl"), "mem_optim_bytes").last());
    }

    // LoRA on every Linear of the blocks (q/k/v, gate, up column-wise and o, down row-wise under tp):
    // the losses and the saved adapter (peft's layout, whole tensors) equal one rank's.
    void loraEqualsOneRank_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<int>("replicas");
        QTest::addColumn<QString>("mesh");
        const QStringList mesh{"ACCELERATE_USE_PARALLELISM_CONFIG=true"};
        QTest::newRow("tp 2") << 2 << mesh + QStringList{"PARALLELISM_CONFIG_TP_SIZE=2"} << 1
                              << "2 process(es), DDP, mesh tp 2 (tp collectives";
        QTest::newRow("cp 2") << 2 << mesh + QStringList{"PARALLELISM_CONFIG_CP_SIZE=2"} << 1
                              << "2 process(es), DDP, mesh cp 2 (cp 2, allgather";
        QTest::newRow("cp 2 x tp 2") << 4
                                     << mesh + QStringList{"PARALLELISM_CONFIG_CP_SIZE=2",
                                                           "PARALLELISM_CONFIG_TP_SIZE=2",
                                                           "PARALLELISM_CONFIG_CP_COMM_STRATEGY=alltoall"}
                                     << 1 << "4 process(es), DDP, mesh cp 2 x tp 2 (tp collectives";
    }

    void loraEqualsOneRank()
    {
        QFETCH(int, ranks);
        QFETCH(QStringList, env);
        QFETCH(int, replicas);
        QFETCH(QString, mesh);
        const QString lora = QStringLiteral("lora: {r: 4, alpha: 8, target_modules: all-linear}\n");
        const QString reference = QStringLiteral("one-lora-4");
        if (!QFileInfo::exists(path(reference + "/adapter/adapter_model.safetensors"))) {
            const auto single = runWorker(job(reference, 4, "train.txt", 16, "llama", lora), 1);
            QVERIFY2(failures(single).isEmpty(), qPrintable(failures(single)));
        }
        const QString name = "run-lora-" + QString(QTest::currentDataTag()).replace(' ', '-');
        QElapsedTimer timer;
        timer.start();
        const auto outcome = runWorker(job(name, 4 / replicas, "train.txt", 16, "llama", lora), ranks, env);
        QVERIFY2(failures(outcome).isEmpty(), qPrintable(failures(outcome)));
        qInfo("%d ranks: %.1f s", ranks, timer.elapsed() / 1000.0);
        QVERIFY2(outcome[0].out.contains(mesh), qPrintable(outcome[0].out));
        QVERIFY2(outcome[0].out.contains("(LoRA r 4 on 14 layers)"), qPrintable(outcome[0].out));
        const QString mismatch = compareRuns(name, reference, {}, QStringLiteral("adapter/adapter_model.safetensors"));
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    }

    // HSDP: FSDP2 with parallelism_config dp_replicate_size 2 x dp_shard_size 2 on 4 ranks equals one
    // rank on the global batch, each rank holding half the parameters (the shards span dp_shard).
    void hybridShardingEqualsOneRank()
    {
        const QString reference = QStringLiteral("one-train-8");
        if (!QFileInfo::exists(path(reference + "/model/model.safetensors"))) {
            const auto single = runWorker(job(reference, 8), 1);
            QVERIFY2(failures(single).isEmpty(), qPrintable(failures(single)));
        }
        QElapsedTimer timer;
        timer.start();
        const auto outcome =
            runWorker(job("run-hsdp", 2), 4,
                      {"ACCELERATE_USE_PARALLELISM_CONFIG=true", "PARALLELISM_CONFIG_DP_REPLICATE_SIZE=2",
                       "PARALLELISM_CONFIG_DP_SHARD_SIZE=2", "ACCELERATE_USE_FSDP=true", "FSDP_VERSION=2",
                       "FSDP_RESHARD_AFTER_FORWARD=true", "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                       "FSDP_TRANSFORMER_CLS_TO_WRAP=LlamaDecoderLayer"});
        QVERIFY2(failures(outcome).isEmpty(), qPrintable(failures(outcome)));
        qInfo("4 ranks: %.1f s", timer.elapsed() / 1000.0);
        QVERIFY2(outcome[0].out.contains("4 process(es), fully_shard(reshard_after_forward=True)"),
                 qPrintable(outcome[0].out));
        const QList<double> whole = metricValues(path(reference + "/metrics/rank0.jsonl"), "mem_params_bytes"),
                            part = metricValues(path("run-hsdp/metrics/rank3.jsonl"), "mem_params_bytes");
        QVERIFY(!whole.isEmpty() && !part.isEmpty());
        const double ratio = part.last() / whole.last(); // 0.25 if it sharded over all 4 ranks
        qInfo("parameter bytes per rank: %.0f of %.0f (%.3fx)", part.last(), whole.last(), ratio);
        QVERIFY2(ratio > 0.49 && ratio < 0.52, qPrintable(QString::number(ratio)));
        const QString mismatch = compareRuns("run-hsdp", reference);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    }

    void refusedByName_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("extra");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("exitCode"); // 1: the start-up check of the sizes (as for tp_size)
        const QStringList cp{"ACCELERATE_USE_PARALLELISM_CONFIG=true", "PARALLELISM_CONFIG_CP_SIZE=2"};
        QTest::newRow("size does not divide")
            << 2 << QStringList{"ACCELERATE_USE_PARALLELISM_CONFIG=true", "PARALLELISM_CONFIG_CP_SIZE=3"} << "llama"
            << ""
            << "(PARALLELISM_CONFIG_CP_SIZE=3): cp_size x tp_size does not divide the 2 process(es)" << 1;
        QTest::newRow("unknown exchange")
            << 2 << cp + QStringList{"PARALLELISM_CONFIG_CP_COMM_STRATEGY=ring"} << "llama"
            << ""
            << "PARALLELISM_CONFIG_CP_COMM_STRATEGY=ring: expected allgather or alltoall" << 2;
        QTest::newRow("gpt2") << 2 << cp << "gpt2"
                              << ""
                              << "parallelism_config_cp_size 2: model_type 'gpt2' has no context-parallel attention"
                              << 2;
    }

    void refusedByName()
    {
        QFETCH(int, ranks);
        QFETCH(QStringList, env);
        QFETCH(QString, model);
        QFETCH(QString, extra);
        QFETCH(QString, message);
        QFETCH(int, exitCode);
        const QString name = "refused-" + QString(QTest::currentDataTag()).replace(' ', '-');
        const auto outcome = runWorker(job(name, 4, "train.txt", 16, model, extra), ranks, env);
        QVERIFY(!outcome.isEmpty());
        QCOMPARE(outcome[0].exitCode, exitCode);
        QVERIFY2(outcome[0].err.contains(message), qPrintable(outcome[0].err));
        QVERIFY(!QFileInfo::exists(path(name + "/model")));
    }
};

QTEST_GUILESS_MAIN(tst_ContextParallel)
#include "tst_contextparallel.moc"
