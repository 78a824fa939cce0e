// accel-worker's causal_lm recipe against Hugging Face transformers and peft (tests/runtime/
// finetune_oracle.py): tiny random Llama and GPT-2 models saved by transformers, a byte-level BPE
// tokenizer trained by tokenizers, the same batches trained by transformers + torch AdamW.
//   - 10 float32 steps on one rank: every step's loss within 1e-4 (relative) of transformers', and
//     the saved folder's logits (through accel infer and through transformers' from_pretrained)
//     within 1e-4 of the reference model's; instruction data (padded batches, loss on completions).
//   - LoRA: accel infer --adapter gives peft's logits on the adapter we wrote, which
//     PeftModel.from_pretrained loads.
//   - FULL_SHARD, FSDP2 and ZeRO-3 on 2 ranks equal 1 rank on the global batch.
//   - A run killed with SIGKILL and resumed ends bit for bit like an uninterrupted one.
//   - parallelism_config tp_size 2 (alone, x dp_replicate 2, and on FSDP2 through accel launch)
//     equals 1 rank on the global batch; what it cannot split is refused by name.
//   - Unknown families, unimplemented config features and bad data are refused by name (exit 2).
// Logit differences are max |ours - theirs| / max |theirs| (as tst_logitscompat).
#include "core/bigmodel/safetensors.h"
#include "tests/compat/oracle.h"
#include "tests/helpers/floattensors.h"
#include "tests/helpers/metricsfile.h"
#include "tests/helpers/rankjob.h"

#include <QDirIterator>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QThread>

#include <signal.h>

#include <cmath>
#include <cstring>

using namespace accel;
using namespace accel::test;

namespace {

constexpr double kLossTolerance = 1e-4;   // relative, per step
constexpr double kLogitsTolerance = 1e-4; // max |a - b| / max |b|

QString readText(const QString &file)
{
    QFile in(file);
    return in.open(QIODevice::ReadOnly) ? QString::fromUtf8(in.readAll()) : QString();
}

QList<double> losses(const QString &metrics)
{
    return metricValues(metrics, QStringLiteral("loss"));
}

// The first step whose loss differs from the reference by more than the tolerance, or "".
QString lossMismatch(const QList<double> &ours, const QJsonArray &theirs)
{
    if (ours.size() != theirs.size())
        return QStringLiteral("%1 losses against %2").arg(ours.size()).arg(theirs.size());
    for (int i = 0; i < ours.size(); ++i) {
        const double reference = theirs[i].toDouble();
        if (!(std::fabs(ours[i] - reference) <= kLossTolerance * std::fabs(reference)))
            return QStringLiteral("step %1: %2 against %3")
                .arg(i + 1)
                .arg(ours[i], 0, 'g', 9)
                .arg(reference, 0, 'g', 9);
    }
    return {};
}

} // namespace

class tst_Finetune : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_python;
    QString m_skip;
    QJsonObject m_reference;

    QString path(const QString &name) const { return m_dir.filePath(name); }

    QString writeJob(const QString &name, const QString &text)
    {
        const QString file = path(name + ".yaml");
        QFile out(file);
        if (!out.open(QIODevice::WriteOnly))
            return {};
        out.write(text.toUtf8());
        return file;
    }

    // A causal_lm job with the oracle's schedule (finetune_oracle.py), shuffle off, a loss line per step.
    QString job(const QString &name, const QString &model, const QString &extra, int batch = 4, int steps = 10,
                const QString &data = QStringLiteral("train.txt"), int block = 16, const QString &training = {})
    {
        return writeJob(name, QStringLiteral("recipe: causal_lm\noutput_dir: %1\nmodel: {path: %2}\n"
                                             "data: {train: %3, block_size: %4}\n"
                                             "training: {max_steps: %5, batch_size: %6, learning_rate: 2.0e-3, "
                                             "warmup_steps: 2, min_lr_ratio: 0.1, grad_clip: 1.0, shuffle: false, "
                                             "log_every: 1, mixed_precision: \"no\"%7}\n")
                                      .arg(name, model, data)
                                      .arg(block)
                                      .arg(steps)
                                      .arg(batch)
                                      .arg(training) +
                                  extra);
    }

    // The last value of `key` in a metrics file (0 when absent).
    static double lastMetric(const QString &metrics, const char *key)
    {
        const QList<double> values = metricValues(metrics, QLatin1String(key));
        return values.isEmpty() ? 0.0 : values.last();
    }

    QList<RankOutcome> runWorker(const QString &jobFile, int ranks = 1, const QStringList &env = {})
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

    // accel infer on a model folder (and adapter), logits of the probe ids into `out`.
    ProcessResult infer(const QString &model, const QString &out, const QString &adapter = {})
    {
        QStringList ids;
        for (const QJsonValue &id : m_reference.value("probe_ids").toArray())
            ids << QString::number(id.toInt());
        QStringList arguments{"infer", model, "--input_ids", ids.join(','), "--logits_out", out};
        if (!adapter.isEmpty())
            arguments << "--adapter" << adapter;
        return runAccel(arguments, 120000);
    }

    // A copy of the llama folder whose config.json has `change` merged in ("" = the llama itself).
    QString variantOf(const QString &change)
    {
        if (change.isEmpty())
            return QStringLiteral("llama");
        const QString folder = "variant-" + QString::number(qHash(change));
        QDir().mkpath(path(folder));
        for (const QString &file : QDir(path("llama")).entryList(QDir::Files))
            QFile::copy(path("llama/" + file), path(folder + "/" + file));
        QFile config(path(folder + "/config.json"));
        if (!config.open(QIODevice::ReadOnly))
            return {};
        QJsonObject object = QJsonDocument::fromJson(config.readAll()).object();
        config.close();
        const QJsonObject object2 = QJsonDocument::fromJson(change.toUtf8()).object();
        for (auto it = object2.begin(); it != object2.end(); ++it)
            object.insert(it.key(), it.value());
        if (!config.open(QIODevice::WriteOnly | QIODevice::Truncate))
            return {};
        config.write(QJsonDocument(object).toJson());
        return folder;
    }

    // job() without gradient clipping.
    QString unclippedJob(const QString &name, int batch)
    {
        const QString file = job(name, "llama", {}, batch);
        const QString text = readText(file);
        return text.contains("grad_clip: 1.0") ? writeJob(name, QString(text).replace("grad_clip: 1.0", "grad_clip: 0"))
                                               : QString();
    }

    // The 1-rank llama run `name` with batch `batch` (made when an earlier test has not), or "" when it failed.
    QString oneRankRun(const QString &name, int batch, bool clipped = true)
    {
        if (!QFileInfo::exists(path(name + "/model/model.safetensors"))) {
            const auto single = runWorker(clipped ? job(name, "llama", {}, batch) : unclippedJob(name, batch));
            if (!failures(single).isEmpty())
                return {};
        }
        return name;
    }

    // Losses (per step, relative) and written weights (relative to each tensor's largest value) of
    // run `ours` against the 1-rank run `theirs`; "" when within the tolerances.
    QString compareRuns(const QString &ours, const QString &oursModel, const QString &theirs, double lossTolerance)
    {
        const QList<double> a = losses(path(ours + "/metrics/rank0.jsonl")),
                            b = losses(path(theirs + "/metrics/rank0.jsonl"));
        if (a.size() != b.size() || a.isEmpty())
            return QStringLiteral("%1 losses against %2").arg(a.size()).arg(b.size());
        double worstLoss = 0;
        for (int i = 0; i < a.size(); ++i)
            worstLoss = std::max(worstLoss, std::fabs(a[i] - b[i]) / std::fabs(b[i]));
        QString error, tensor;
        const double worstWeight = largestWeightDifference(path(oursModel + "/model.safetensors"),
                                                           path(theirs + "/model/model.safetensors"), &error, &tensor);
        if (!error.isEmpty())
            return error;
        qInfo("%s against %s: largest loss difference %.3g, largest weight difference %.3g (relative, in %s)",
              qPrintable(ours), qPrintable(theirs), worstLoss, worstWeight, qPrintable(tensor));
        if (!(worstLoss <= lossTolerance) || !(worstWeight <= kSplitRunWeightTolerance))
            return QStringLiteral("loss %1, weights %2 (%3)").arg(worstLoss).arg(worstWeight).arg(tensor);
        return {};
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QString why;
        m_python = oraclePython({"transformers", "tokenizers", "peft", "safetensors"}, &why);
        if (m_python.isEmpty()) {
            m_skip = why;
            return;
        }
        const ProcessResult prepared = runProgram(
            m_python, {QDir(sourceDir()).filePath("tests/runtime/finetune_oracle.py"), "prepare", m_dir.path()},
            240000);
        QVERIFY2(prepared.exitCode == 0, qPrintable(prepared.err.right(3000)));
        m_reference = QJsonDocument::fromJson(prepared.out.trimmed().split('\n').last().toUtf8()).object();
        QVERIFY2(m_reference.contains("llama"), qPrintable(prepared.out.right(2000)));
    }

    void init()
    {
        if (!m_skip.isEmpty())
            QSKIP(qPrintable(m_skip));
    }

    void parityWithTransformers_data()
    {
        QTest::addColumn<QString>("family");
        QTest::newRow("llama") << "llama";
        QTest::newRow("gpt2") << "gpt2";
    }

    // 10 steps: each loss as transformers', the written folder's logits as the reference model's.
    void parityWithTransformers()
    {
        QFETCH(QString, family);
        const auto ranks = runWorker(job("run-" + family, family, {}));
        QVERIFY2(failures(ranks).isEmpty(), qPrintable(failures(ranks)));
        const QString mismatch = lossMismatch(losses(path("run-" + family + "/metrics/rank0.jsonl")),
                                              m_reference.value(family).toObject().value("losses").toArray());
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
        for (const char *file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
            QVERIFY2(QFile::exists(path("run-" + family + "/model/" + file)), file);

        const QString logits = path(family + "-accel-logits.safetensors");
        const ProcessResult inferred = infer(path("run-" + family + "/model"), logits);
        QVERIFY2(inferred.exitCode == 0, qPrintable(inferred.err));
        QString error;
        auto ours = readFloatTensors(logits, &error);
        auto theirs = readFloatTensors(path(family + "-reference-logits.safetensors"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const double difference = relativeDifference(ours["logits"], theirs["logits"]);
        qInfo("%s: saved folder's logits differ from the reference by %.3g (relative)", qPrintable(family), difference);
        QVERIFY2(difference <= kLogitsTolerance, qPrintable(QString::number(difference)));
    }

    // Instruction data: padded batches, loss on the completion tokens only, as transformers with labels -100.
    void instructionDataParity()
    {
        const QJsonObject reference = m_reference.value("instruction").toObject();
        const auto ranks =
            runWorker(job("run-instruction", "llama", {}, 4, 3, "instruct.jsonl", reference.value("block").toInt()));
        QVERIFY2(failures(ranks).isEmpty(), qPrintable(failures(ranks)));
        QVERIFY2(ranks[0].out.contains(QString::number(reference.value("examples").toInt()) + " instruction examples"),
                 qPrintable(ranks[0].out));
        const QString mismatch =
            lossMismatch(losses(path("run-instruction/metrics/rank0.jsonl")), reference.value("losses").toArray());
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    }

    // A LoRA run resumes from its checkpoint: the frozen base is read in place from the model
    // folder's mapping (read-only), the checkpoint holds it too, and the adapter ends as an
    // uninterrupted run's. (Writing the checkpoint's base into the mapping ended the rank with SIGSEGV.)
    void loraResumesBitIdentical()
    {
        const auto write = [&](const QString &name, const QString &output, int steps) {
            return writeJob(name, "recipe: causal_lm\noutput_dir: " + output +
                                      "\nmodel: {path: llama}\ndata: {train: train.txt, block_size: 16}\n"
                                      "lora: {r: 4, alpha: 8, target_modules: [q_proj, v_proj]}\n"
                                      "training: {max_steps: " +
                                      QString::number(steps) +
                                      ", batch_size: 4, learning_rate: 2.0e-3, log_every: 1, checkpoint_every: 3, "
                                      // A constant learning rate: the schedule does not depend on max_steps, so
                                      // a run of 3 steps resumed to 6 is a run of 6.
                                      "warmup_steps: 0, min_lr_ratio: 1.0, resume: auto}\n");
        };
        const auto straight = runWorker(write("lora-straight", "run-lora-straight", 6));
        QVERIFY2(failures(straight).isEmpty(), qPrintable(failures(straight)));
        const auto first = runWorker(write("lora-first", "run-lora-resume", 3));
        QVERIFY2(failures(first).isEmpty(), qPrintable(failures(first)));
        const auto second = runWorker(write("lora-second", "run-lora-resume", 6));
        QVERIFY2(failures(second).isEmpty(), qPrintable(failures(second)));
        QVERIFY2(second[0].out.contains("resumed from step"), qPrintable(second[0].out));
        QFile a(path("run-lora-straight/adapter/adapter_model.safetensors")),
            b(path("run-lora-resume/adapter/adapter_model.safetensors"));
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        QVERIFY2(a.readAll() == b.readAll(), "the resumed LoRA run's adapter differs from the uninterrupted run's");
    }

    void loraAdapter_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("targets");
        QTest::newRow("llama") << "llama"
                               << "[q_proj, v_proj]";
        QTest::newRow("gpt2") << "gpt2"
                              << "[c_attn]";
    }

    // A LoRA run writes a peft adapter; accel infer --adapter computes with it (compared with peft in
    // transformersAndPeftLoadTheOutputs).
    void loraAdapter()
    {
        QFETCH(QString, family);
        QFETCH(QString, targets);
        const QString name = "run-lora-" + family;
        const auto ranks =
            runWorker(job(name, family, "lora: {r: 4, alpha: 8, target_modules: " + targets + "}\n", 4, 5));
        QVERIFY2(failures(ranks).isEmpty(), qPrintable(failures(ranks)));
        QVERIFY2(ranks[0].out.contains("(LoRA r 4 on 4 layers)") || ranks[0].out.contains("(LoRA r 4 on 2 layers)"),
                 qPrintable(ranks[0].out));
        QVERIFY(QFile::exists(path(name + "/adapter/adapter_config.json")));
        QVERIFY(!QFile::exists(path(name + "/model")));
        // Only the adapters have gradients and optimizer state.
        QString error;
        int64_t adapterElements = 0;
        for (const auto &[tensor, values] : readFloatTensors(path(name + "/adapter/adapter_model.safetensors"), &error))
            adapterElements += int64_t(values.size());
        QVERIFY2(error.isEmpty() && adapterElements > 0, qPrintable(error));
        const QString metrics = path(name + "/metrics/rank0.jsonl");
        QCOMPARE(lastMetric(metrics, "mem_grads_bytes"), double(4 * adapterElements));
        QCOMPARE(lastMetric(metrics, "mem_optim_bytes"), double(2 * 4 * adapterElements));
        const ProcessResult inferred =
            infer(path(family), path("lora-" + family + "-logits.safetensors"), path(name + "/adapter"));
        QVERIFY2(inferred.exitCode == 0, qPrintable(inferred.err));
    }

    // accel merge-lora folds the adapter in: the merged folder computes what base + adapter computes.
    void mergeLoraEqualsTheAdapter()
    {
        for (const QString family : {"llama", "gpt2"}) {
            const QString adapter = path("run-lora-" + family + "/adapter");
            if (!QFileInfo::exists(adapter))
                QSKIP("the LoRA runs did not write their adapters (loraAdapter failed)");
            const QString merged = path("merged-" + family);
            const ProcessResult result = runAccel({"merge-lora", path(family), adapter, merged, "--json"}, 120000);
            QVERIFY2(result.exitCode == 0, qPrintable(result.err));
            const QJsonObject json = QJsonDocument::fromJson(result.out.toUtf8()).object();
            QCOMPARE(json.value("schema").toString(), QStringLiteral("accel.merge-lora"));
            QCOMPARE(json.value("adapted_layers").toArray().size(), family == "llama" ? 4 : 2);
            QCOMPARE(json.value("dtype").toString(), QStringLiteral("float32"));
            const ProcessResult inferred = infer(merged, path("merged-" + family + "-logits.safetensors"));
            QVERIFY2(inferred.exitCode == 0, qPrintable(inferred.err));
            QString error;
            auto ours = readFloatTensors(path("merged-" + family + "-logits.safetensors"), &error);
            auto adapted = readFloatTensors(path("lora-" + family + "-logits.safetensors"), &error);
            QVERIFY2(error.isEmpty(), qPrintable(error));
            const double difference = relativeDifference(ours["logits"], adapted["logits"]);
            QVERIFY2(difference <= 1e-5, qPrintable(family + ": " + QString::number(difference)));
        }
        const ProcessResult missing = runAccel({"merge-lora", path("llama"), path("llama"), path("nowhere")});
        QCOMPARE(missing.exitCode, 2);
        QVERIFY2(missing.err.contains("has no adapter_config.json"), qPrintable(missing.err));
    }

    // transformers loads the written folders, peft the adapters: their logits are ours.
    void transformersAndPeftLoadTheOutputs()
    {
        for (const char *needed :
             {"run-llama/model", "run-gpt2/model", "run-lora-llama/adapter", "run-lora-gpt2/adapter"})
            if (!QFileInfo::exists(path(needed)))
                QSKIP(qPrintable(QStringLiteral("%1 was not written (an earlier case failed)").arg(needed)));
        const ProcessResult checked = runProgram(
            m_python, {QDir(sourceDir()).filePath("tests/runtime/finetune_oracle.py"), "check", m_dir.path()}, 240000);
        QVERIFY2(checked.exitCode == 0, qPrintable(checked.err.right(3000)));
        const QJsonObject result = QJsonDocument::fromJson(checked.out.trimmed().split('\n').last().toUtf8()).object();
        qInfo("%s", qPrintable(checked.out.trimmed().split('\n').last()));
        for (const char *key : {"llama", "gpt2"})
            QVERIFY2(result.value(key).toDouble(INFINITY) <= kLogitsTolerance, key);
        for (const char *key : {"lora-llama", "lora-gpt2"})
            QVERIFY2(result.value(key).toDouble(INFINITY) <= 1e-5, key);
        for (const char *key : {"lora-llama-effect", "lora-gpt2-effect"})
            QVERIFY2(result.value(key).toDouble(0) > 1e-3, key);
    }

    void shardedEqualsOneRank_data()
    {
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QString>("strategy");
        QTest::addColumn<bool>("parametersSharded");
        const QStringList wrap{"FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                               "FSDP_TRANSFORMER_CLS_TO_WRAP=LlamaDecoderLayer"};
        QTest::newRow("FULL_SHARD") << QStringList{"ACCELERATE_USE_FSDP=true", "FSDP_VERSION=1",
                                                   "FSDP_SHARDING_STRATEGY=FULL_SHARD"} +
                                           wrap
                                    << "FULL_SHARD" << true;
        QTest::newRow("FSDP2") << QStringList{"ACCELERATE_USE_FSDP=true", "FSDP_VERSION=2",
                                              "FSDP_RESHARD_AFTER_FORWARD=true"} +
                                      wrap
                               << "fully_shard(reshard_after_forward=True)" << true;
        QTest::newRow("ZeRO-3") << QStringList{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"}
                                << "ZeRO-3" << true;
        QTest::newRow("ZeRO-2 offload") << QStringList{"ACCELERATE_USE_DEEPSPEED=true",
                                                       "ACCELERATE_DEEPSPEED_ZERO_STAGE=2",
                                                       "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE=cpu"}
                                        << "ZeRO-2" << false;
        QTest::newRow("ZeRO-1") << QStringList{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=1"}
                                << "ZeRO-1" << false;
        QTest::newRow("DDP") << QStringList{} << "DDP" << false;
    }

    // 2 ranks x batch 4 under a sharded strategy: each step's loss and the written weights as 1 rank
    // x batch 8 (the same global batches), and each rank held about half the parameters.
    void shardedEqualsOneRank()
    {
        QFETCH(QStringList, env);
        QFETCH(QString, strategy);
        QFETCH(bool, parametersSharded);
        if (!QFileInfo::exists(path("run-global/model/model.safetensors"))) {
            const auto single = runWorker(job("run-global", "llama", {}, 8));
            QVERIFY2(failures(single).isEmpty(), qPrintable(failures(single)));
        }
        const QString name = "run-2x-" + QString(QTest::currentDataTag());
        const auto ranks = runWorker(job(name, "llama", {}, 4), 2, env);
        QVERIFY2(failures(ranks).isEmpty(), qPrintable(failures(ranks)));
        QVERIFY2(ranks[0].out.contains("2 process(es), " + strategy), qPrintable(ranks[0].out));
        const QList<double> global = losses(path("run-global/metrics/rank0.jsonl"));
        QJsonArray expected;
        for (double loss : global)
            expected.append(loss);
        const QString mismatch = lossMismatch(losses(path(name + "/metrics/rank0.jsonl")), expected);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
        QString error;
        const double worst = largestWeightDifference(path(name + "/model/model.safetensors"),
                                                     path("run-global/model/model.safetensors"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        qInfo("%s: largest weight difference from 1 rank %.3g (relative to each tensor's largest value)",
              qPrintable(strategy), worst);
        QVERIFY2(worst <= kSplitRunWeightTolerance, qPrintable(QString::number(worst)));
        // Under stage 3 a rank held about half of the parameters the single rank held, else all of them.
        const double sharded = lastMetric(path(name + "/metrics/rank1.jsonl"), "mem_params_bytes"),
                     whole = lastMetric(path("run-global/metrics/rank0.jsonl"), "mem_params_bytes");
        QVERIFY2(whole > 0 && sharded > 0 && (sharded < 0.6 * whole) == parametersSharded,
                 qPrintable(QStringLiteral("%1 of %2").arg(sharded).arg(whole)));
    }

    // LoRA under ZeRO-3 on 2 ranks (each block's frozen base a flat parameter of its own, never
    // stepped, so weight decay leaves it alone) equals 1 rank on the global batch.
    void loraShardedEqualsOneRank()
    {
        const QString lora = "lora: {r: 4, alpha: 8, target_modules: [q_proj, v_proj]}\n";
        const QString decay = ", weight_decay: 0.5";
        const auto single = runWorker(job("run-lora-global", "llama", lora, 8, 10, "train.txt", 16, decay));
        QVERIFY2(failures(single).isEmpty(), qPrintable(failures(single)));
        const auto ranks = runWorker(job("run-lora-zero3", "llama", lora, 4, 10, "train.txt", 16, decay), 2,
                                     {"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"});
        QVERIFY2(failures(ranks).isEmpty(), qPrintable(failures(ranks)));
        QJsonArray expected;
        for (double loss : losses(path("run-lora-global/metrics/rank0.jsonl")))
            expected.append(loss);
        const QString mismatch = lossMismatch(losses(path("run-lora-zero3/metrics/rank0.jsonl")), expected);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
        QString error;
        auto ours = readFloatTensors(path("run-lora-zero3/adapter/adapter_model.safetensors"), &error);
        auto theirs = readFloatTensors(path("run-lora-global/adapter/adapter_model.safetensors"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(ours.size(), theirs.size());
        for (const auto &[tensor, values] : theirs)
            QVERIFY2(relativeDifference(ours[tensor], values) <= kSplitRunWeightTolerance, tensor.c_str());
        // Each rank holds optimizer state for about half the adapters, none for the base.
        const double single1 = lastMetric(path("run-lora-global/metrics/rank0.jsonl"), "mem_optim_bytes");
        const double rank1 = lastMetric(path("run-lora-zero3/metrics/rank1.jsonl"), "mem_optim_bytes");
        QVERIFY2(rank1 > 0.4 * single1 && rank1 < 0.6 * single1,
                 qPrintable(QStringLiteral("%1 of %2").arg(rank1).arg(single1)));
    }

    // training.gradient_checkpointing recomputes each block in backward: the same losses as without
    // (on one rank; under ZeRO-3, where the recomputation runs inside the unit's gathered
    // parameters; with dropout, whose masks the recomputation draws again from the saved state).
    void gradientCheckpointing()
    {
        const QString checkpointing = ", gradient_checkpointing: true";
        const auto one = runWorker(job("run-checkpointing", "llama", {}, 4, 10, "train.txt", 16, checkpointing));
        QVERIFY2(failures(one).isEmpty(), qPrintable(failures(one)));
        QVERIFY2(one[0].out.contains("gradient checkpointing: 20 block forwards recomputed"), // 2 blocks x 10 steps
                 qPrintable(one[0].out));
        QString mismatch = lossMismatch(losses(path("run-checkpointing/metrics/rank0.jsonl")),
                                        m_reference.value("llama").toObject().value("losses").toArray());
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));

        if (!QFileInfo::exists(path("run-global/model/model.safetensors"))) {
            const auto single = runWorker(job("run-global", "llama", {}, 8));
            QVERIFY2(failures(single).isEmpty(), qPrintable(failures(single)));
        }
        const auto sharded =
            runWorker(job("run-checkpointing-zero3", "llama", {}, 4, 10, "train.txt", 16, checkpointing), 2,
                      {"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"});
        QVERIFY2(failures(sharded).isEmpty(), qPrintable(failures(sharded)));
        QJsonArray global;
        for (double loss : losses(path("run-global/metrics/rank0.jsonl")))
            global.append(loss);
        mismatch = lossMismatch(losses(path("run-checkpointing-zero3/metrics/rank0.jsonl")), global);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));

        // GPT-2 with dropout 0.1: the same masks with and without checkpointing.
        const QString folder = "gpt2-dropout";
        QDir().mkpath(path(folder));
        for (const QString &file : QDir(path("gpt2")).entryList(QDir::Files))
            QFile::copy(path("gpt2/" + file), path(folder + "/" + file));
        QFile config(path(folder + "/config.json"));
        QVERIFY(config.open(QIODevice::ReadOnly));
        QJsonObject object = QJsonDocument::fromJson(config.readAll()).object();
        config.close();
        for (const char *key : {"embd_pdrop", "attn_pdrop", "resid_pdrop"})
            object.insert(key, 0.1);
        QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
        config.write(QJsonDocument(object).toJson());
        config.close();
        const auto plain = runWorker(job("run-dropout", folder, {}, 4, 5));
        const auto recomputed =
            runWorker(job("run-dropout-checkpointing", folder, {}, 4, 5, "train.txt", 16, checkpointing));
        QVERIFY2(failures(plain).isEmpty() && failures(recomputed).isEmpty(),
                 qPrintable(failures(plain) + failures(recomputed)));
        QJsonArray expected;
        for (double loss : losses(path("run-dropout/metrics/rank0.jsonl")))
            expected.append(loss);
        mismatch = lossMismatch(losses(path("run-dropout-checkpointing/metrics/rank0.jsonl")), expected);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
        // Dropout is on: the losses are not those of the model without it.
        QVERIFY(std::fabs(expected[0].toDouble() - m_reference.value("gpt2").toObject().value("losses")[0].toDouble()) >
                1e-3);
    }

    void precisionsApply_data()
    {
        QTest::addColumn<QString>("precision");
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QString>("note");
        QTest::newRow("bf16") << "bf16" << QStringList{} << "";
        QTest::newRow("fp8 AO") << "fp8" << QStringList{"ACCELERATE_FP8_BACKEND=AO"}
                                << "converted 13 of 15 Linear layers";
        QTest::newRow("fp8 TE") << "fp8" << QStringList{"ACCELERATE_FP8_BACKEND=TE"}
                                << "converted 14 of 15 Linear layers";
    }

    // bf16 autocast and the FP8 recipes train the families' own Linear layers (converted like
    // torch::nn::Linear): each step's loss within 3 % of float32's.
    void precisionsApply()
    {
        QFETCH(QString, precision);
        QFETCH(QStringList, env);
        QFETCH(QString, note);
        const QString name = "run-" + QString(QTest::currentDataTag()).replace(' ', '-');
        const QString file = job(name, "llama", {}, 4, 10, "train.txt", 16);
        QFile edit(file);
        QVERIFY(edit.open(QIODevice::ReadOnly));
        QString content =
            QString::fromUtf8(edit.readAll()).replace("mixed_precision: \"no\"", "mixed_precision: " + precision);
        edit.close();
        QVERIFY(edit.open(QIODevice::WriteOnly | QIODevice::Truncate));
        edit.write(content.toUtf8());
        edit.close();
        const auto ranks = runWorker(file, 1, env);
        QVERIFY2(failures(ranks).isEmpty(), qPrintable(failures(ranks)));
        if (!note.isEmpty())
            QVERIFY2(ranks[0].out.contains(note), qPrintable(ranks[0].out));
        const QList<double> ours = losses(path(name + "/metrics/rank0.jsonl"));
        const QJsonArray fp32 = m_reference.value("llama").toObject().value("losses").toArray();
        QCOMPARE(ours.size(), fp32.size());
        for (int i = 0; i < ours.size(); ++i)
            QVERIFY2(std::fabs(ours[i] - fp32[i].toDouble()) <= 0.03 * fp32[i].toDouble(),
                     qPrintable(QStringLiteral("step %1: %2 against float32's %3")
                                    .arg(i + 1)
                                    .arg(ours[i])
                                    .arg(fp32[i].toDouble())));
    }

    // Killed with SIGKILL after a checkpoint, then started again: the run ends with the weights of an
    // uninterrupted run, bit for bit.
    void resumeAfterKillIsBitIdentical()
    {
        const QString extra = QStringLiteral("training: {max_steps: 200, batch_size: 4, learning_rate: 2.0e-3, "
                                             "warmup_steps: 5, shuffle: true, log_every: 10, checkpoint_every: 10, "
                                             "checkpoint_total_limit: 2, mixed_precision: \"no\"}\n");
        const auto write = [&](const QString &name) {
            return writeJob(name, "recipe: causal_lm\noutput_dir: " + name +
                                      "\nmodel: {path: llama}\ndata: {train: train.txt, block_size: 16}\n" + extra);
        };
        const auto straight = runWorker(write("run-straight"));
        QVERIFY2(failures(straight).isEmpty(), qPrintable(failures(straight)));

        const QString killedJob = write("run-killed");
        {
            RankJob rankJob;
            rankJob.program = binDir() + "/accel-worker";
            rankJob.arguments = {killedJob};
            rankJob.rankVariablesWhenAlone = false;
            rankJob.workingDirectory = m_dir.path();
            RankJobRun run(rankJob);
            QVERIFY(!run.processes().empty());
            QProcess &process = *run.processes().front();
            QElapsedTimer timer;
            timer.start();
            while (!QFileInfo::exists(path("run-killed/checkpoints/checkpoint_3")) && timer.elapsed() < 60000 &&
                   process.state() != QProcess::NotRunning)
                QThread::usleep(500);
            QVERIFY2(process.state() != QProcess::NotRunning, "the run ended before it could be killed");
            ::kill(pid_t(process.processId()), SIGKILL);
            const QList<RankOutcome> outcome = run.wait();
            QCOMPARE(outcome.value(0).status, QProcess::CrashExit);
        }
        QVERIFY(!QFileInfo::exists(path("run-killed/model/model.safetensors")));
        const auto resumed = runWorker(killedJob);
        QVERIFY2(failures(resumed).isEmpty(), qPrintable(failures(resumed)));
        QVERIFY2(resumed[0].out.contains("resumed from step"), qPrintable(resumed[0].out));
        QFile a(path("run-straight/model/model.safetensors")), b(path("run-killed/model/model.safetensors"));
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        QVERIFY2(a.readAll() == b.readAll(), "the resumed run's weights differ from the uninterrupted run's");
        const QList<double> all = losses(path("run-straight/metrics/rank0.jsonl")),
                            afterResume = losses(path("run-killed/metrics/rank0.jsonl"));
        QCOMPARE(afterResume.mid(afterResume.size() - 5), all.mid(all.size() - 5));
    }

    void refusedByName_data()
    {
        QTest::addColumn<QString>("model");  // config.json of the llama with this change, "" = as it is
        QTest::addColumn<QString>("extra");  // more job text
        QTest::addColumn<QString>("needle"); // in the error
        QTest::newRow("unknown family") << R"({"model_type": "bert"})"
                                        << ""
                                        << "model_type: 'bert' has no C++ implementation (supported: gpt2, llama";
        QTest::newRow("rope type") << R"({"rope_scaling": {"rope_type": "proportional", "factor": 2.0}})"
                                   << ""
                                   << "rope_scaling: rope_type \"proportional\" is not implemented";
        QTest::newRow("bad data line") << ""
                                       << "data: {train: bad.jsonl, block_size: 16}\n"
                                       << "data.train: " + path("bad.jsonl") + ": line 2";
        QTest::newRow("lora target") << ""
                                     << "lora: {r: 4, target_modules: [q_proj, qkv]}\n"
                                     << "lora.target_modules: qkv matches no layer of the model (adaptable layers: "
                                        "down_proj, gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj)";
        QTest::newRow("lora without r") << ""
                                        << "lora: {alpha: 16}\n"
                                        << "lora.alpha is set but lora.r is not";
    }

    // Refused before anything starts: exit 2, the key named, nothing written.
    void refusedByName()
    {
        QFETCH(QString, model);
        QFETCH(QString, extra);
        QFETCH(QString, needle);
        const QString folder = variantOf(model);
        QVERIFY(!folder.isEmpty());
        QFile bad(path("bad.jsonl"));
        QVERIFY(bad.open(QIODevice::WriteOnly | QIODevice::Truncate));
        bad.write("{\"text\": \"fine\"}\n{\"text\": fine}\n");
        bad.close();
        const QString name = "refused-" + QString::number(qHash(needle));
        QString text = "recipe: causal_lm\noutput_dir: " + name + "\nmodel: {path: " + folder + "}\n" + extra;
        if (!extra.startsWith("data:"))
            text += "data: {train: train.txt, block_size: 16}\n";
        const auto ranks = runWorker(writeJob(name, text + "training: {max_steps: 2, batch_size: 4}\n"));
        QCOMPARE(ranks.value(0).exitCode, 2);
        QVERIFY2(ranks[0].err.contains(needle), qPrintable(ranks[0].err));
        QVERIFY(!QFileInfo::exists(path(name + "/metrics")));
        QVERIFY(!QFileInfo::exists(path(name + "/model")));
    }

    // Tensor parallelism (parallelism_config tp_size 2): each step's loss as 1 rank on the global
    // batch within 1e-5 relative (float32: only the order of the row-wise layers' sums differs;
    // measured about 1e-7), clipping included (the norm over every rank's part). The gathered
    // weights within kSplitRunWeightTolerance (floattensors.h), as the sharded strategies above.
    void tensorParallelEqualsOneRank_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<int>("globalBatch");
        QTest::addColumn<QString>("mesh");
        QTest::addColumn<bool>("clipped"); // grad_clip 1.0, else 0
        const QStringList tp{"ACCELERATE_USE_PARALLELISM_CONFIG=true", "PARALLELISM_CONFIG_TP_SIZE=2"};
        QTest::newRow("tp 2") << 2 << tp << 4 << "2 process(es), DDP, mesh tp 2" << true;
        QTest::newRow("dp_replicate 2 x tp 2") << 4 << tp + QStringList{"PARALLELISM_CONFIG_DP_REPLICATE_SIZE=2"} << 8
                                               << "4 process(es), DDP, mesh dp_replicate 2 x tp 2" << true;
        QTest::newRow("dp_shard 2 x tp 2")
            << 4
            << tp + QStringList{"PARALLELISM_CONFIG_DP_SHARD_SIZE=2",
                                "ACCELERATE_USE_FSDP=true",
                                "FSDP_VERSION=2",
                                "FSDP_RESHARD_AFTER_FORWARD=true",
                                "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                                "FSDP_TRANSFORMER_CLS_TO_WRAP=LlamaDecoderLayer"}
            << 8 << "4 process(es), fully_shard(reshard_after_forward=True), mesh dp_shard 2 x tp 2" << false;
    }

    void tensorParallelEqualsOneRank()
    {
        QFETCH(int, ranks);
        QFETCH(QStringList, env);
        QFETCH(int, globalBatch);
        QFETCH(QString, mesh);
        QFETCH(bool, clipped);
        const QString global = clipped ? oneRankRun(globalBatch == 4 ? "run-llama" : "run-global", globalBatch)
                                       : oneRankRun("run-noclip-" + QString::number(globalBatch), globalBatch, false);
        QVERIFY(!global.isEmpty());
        const QString name = "run-" + QString(QTest::currentDataTag()).replace(' ', '-');
        QElapsedTimer timer;
        timer.start();
        const auto outcome = runWorker(clipped ? job(name, "llama", {}, 4) : unclippedJob(name, 4), ranks, env);
        QVERIFY2(failures(outcome).isEmpty(), qPrintable(failures(outcome)));
        qInfo("%d ranks: %.1f s", ranks, timer.elapsed() / 1000.0);
        QVERIFY2(outcome[0].out.contains(mesh), qPrintable(outcome[0].out));
        // The throughput counts each global sample once (a tp group's ranks read the same ones):
        // tokens/s x seconds = 10 steps x the global batch x 16 tokens.
        const QRegularExpressionMatch done =
            QRegularExpression("done: .* ([0-9.e+]+) tokens/s, ([0-9.e-]+) s;").match(outcome[0].out);
        QVERIFY2(done.hasMatch(), qPrintable(outcome[0].out));
        const double tokens = done.captured(1).toDouble() * done.captured(2).toDouble();
        QVERIFY2(std::fabs(tokens - 10.0 * globalBatch * 16) < 0.01 * 10 * globalBatch * 16,
                 qPrintable(QString::number(tokens)));
        const QString mismatch = compareRuns(name, name + "/model", global, 1e-5);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
        if (globalBatch == 4 && clipped) { // the same batches as transformers' run
            const QString transformers = lossMismatch(losses(path(name + "/metrics/rank1.jsonl")),
                                                      m_reference.value("llama").toObject().value("losses").toArray());
            QVERIFY2(transformers.isEmpty(), qPrintable(transformers));
        }
        // Each rank holds half of every split layer (q/k/v/o, gate/up/down) and the rest whole.
        QString error;
        int64_t split = 0;
        for (const auto &[tensor, values] : readFloatTensors(path(global + "/model/model.safetensors"), &error)) {
            for (const char *layer : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"})
                split += tensor.find(layer) != std::string::npos ? int64_t(values.size() * sizeof(float)) : 0;
        }
        const double whole = lastMetric(path(global + "/metrics/rank0.jsonl"), "mem_params_bytes"),
                     part = lastMetric(path(name + "/metrics/rank1.jsonl"), "mem_params_bytes");
        // Under FSDP2 over dp_shard 2 a rank keeps half of that (its flat chunks, padded to 2 ranks).
        const bool sharded = env.contains("ACCELERATE_USE_FSDP=true");
        const double expected = (whole - double(split) / 2) / (sharded ? 2 : 1);
        qInfo("parameter bytes per rank: %.0f of %.0f (%.3f; the embeddings and head stay whole)", part, whole,
              part / whole);
        QVERIFY2(split > 0 && std::fabs(part - expected) <= (sharded ? 0.01 * expected : 0),
                 qPrintable(QStringLiteral("%1 of %2, expected %3").arg(part).arg(whole).arg(expected)));
    }

    // tp 2 on FSDP2 through the real accel launch (Accelerate's launcher takes a parallelism_config
    // only with FSDP2), without clipping, as 1 rank (clipping under tp x FSDP2: tst_meshcheckpoint).
    void tensorParallelThroughAccelLaunch()
    {
        QFile config(path("tp-fsdp2.yaml"));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n"
                     "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                     "  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n"
                     "parallelism_config:\n  parallelism_config_tp_size: 2\n"
                     "machine_rank: 0\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\n");
        config.close();
        auto launch = [&](const QString &jobFile, const QString &runDir) {
            return runAccel({"launch", "--config_file", path("tp-fsdp2.yaml"), "--run_dir", path(runDir), "--no_mirror",
                             "--main_process_port", "0", "--job", jobFile},
                            240000);
        };
        const QString global = oneRankRun("run-noclip-4", 4, false);
        QVERIFY(!global.isEmpty());
        QElapsedTimer timer;
        timer.start();
        const QString jobFile = unclippedJob("run-tp-fsdp2", 4);
        const ProcessResult launched = launch(jobFile, "launch-tp-fsdp2");
        QVERIFY2(launched.exitCode == 0, qPrintable(launched.err));
        qInfo("accel launch, 2 ranks: %.1f s", timer.elapsed() / 1000.0);
        const QString rankLog = readText(path("launch-tp-fsdp2/logs/rank0.log"));
        QVERIFY2(rankLog.contains("2 process(es), fully_shard(reshard_after_forward=True), mesh tp 2"),
                 qPrintable(rankLog));
        const QString mismatch = compareRuns("launch-tp-fsdp2", "run-tp-fsdp2/model", global, 1e-5);
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    }

    void tensorParallelRefusedByName_data()
    {
        QTest::addColumn<QString>("model"); // "llama", "gpt2", or a change to the llama's config.json
        QTest::addColumn<QString>("extra");
        QTest::addColumn<QString>("needle");
        QTest::newRow("key/value heads")
            << R"({"num_key_value_heads": 1})"
            << ""
            << "parallelism_config_tp_size 2: num_attention_heads 4, num_key_value_heads 1 "
               "and intermediate_size 64 must each divide by tp_size";
        QTest::newRow("gpt2") << "gpt2"
                              << ""
                              << "parallelism_config_tp_size 2: model_type 'gpt2' has no tensor-parallel plan";
        // LoRA on split layers is trained; on row-wise ones without dropout (its branch is merged).
        QTest::newRow("lora dropout on o_proj")
            << "llama"
            << "lora: {r: 4, dropout: 0.1, target_modules: [q_proj, o_proj]}\n"
            << "parallelism_config_tp_size 2 with LoRA on row-wise split layers (o_proj) and lora.dropout 0.1 (set "
               "lora.dropout: 0)";
    }

    // Refused on every rank before anything is read: exit 2, the sizes or the setting named.
    void tensorParallelRefusedByName()
    {
        QFETCH(QString, model);
        QFETCH(QString, extra);
        QFETCH(QString, needle);
        const QString folder = model.startsWith('{') ? variantOf(model) : model;
        QVERIFY(!folder.isEmpty());
        const QString name = "tp-refused-" + QString(QTest::currentDataTag()).replace(' ', '-').replace('/', '-');
        const auto ranks = runWorker(job(name, folder, extra, 4, 2), 2,
                                     {"ACCELERATE_USE_PARALLELISM_CONFIG=true", "PARALLELISM_CONFIG_TP_SIZE=2"});
        for (const RankOutcome &rank : ranks) {
            QCOMPARE(rank.exitCode, 2);
            QVERIFY2(rank.err.contains(needle), qPrintable(rank.err));
        }
        QVERIFY(!QFileInfo::exists(path(name + "/model")));
    }
};

QTEST_GUILESS_MAIN(tst_Finetune)
#include "tst_finetune.moc"
