// The ShardingEngine in real multi-process gloo jobs of accel-runtime-probe ranks: every ZeRO
// stage and FSDP strategy reaches the parameters DDP reaches from the same initial weights, the
// per-rank training memory falls as the plan says, and unimplemented settings are refused.
#include "tests/runtime/shardingsupport.h"

#include "core/bigmodel/safetensors.h"
#include "core/plan/shardingplan.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <map>

using namespace accel::test::sharding;

namespace {

// The variables of a `KEY=value` list, as a rank would read them.
accel::runtime::EnvLookup lookup(const QStringList &env)
{
    auto values = std::make_shared<std::map<std::string, std::string>>();
    for (const QString &entry : env)
        (*values)[entry.section('=', 0, 0).toStdString()] = entry.section('=', 1).toStdString();
    return [values](const char *name) -> const char * {
        auto it = values->find(name);
        return it == values->end() ? nullptr : it->second.c_str();
    };
}

const QStringList kTrain{"train",      "model=stack",     "blocks=4", "steps=12",    "batch=8",
                         "constant=1", "optimizer=adamw", "clip=1",   "max_norm=0.5"};

} // namespace

class tst_Sharding : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_ddp[5]; // DDP reference output per world size

    QString reference(int worldSize, const QStringList &extra = {})
    {
        const QString key = QString::number(worldSize) + extra.join('_');
        const QString path = m_dir.filePath("ddp_" + key + ".txt");
        if (!QFile::exists(path)) {
            Job job = runRanks(worldSize, kTrain + extra + QStringList{"wrap_root=1", "out=" + path});
            if (!job.ok)
                qWarning("DDP reference failed: %s", qPrintable(job.errors));
        }
        return path;
    }

    // accel-worker ("" when it is not built), with the corpus of its gpt jobs in m_dir.
    QString gptWorker()
    {
        const QString worker = accel::test::binDir() + "/accel-worker";
        if (!QFile::exists(worker))
            return {};
        QFile corpus(m_dir.filePath("corpus.txt"));
        if (!corpus.exists() && corpus.open(QIODevice::WriteOnly)) {
            for (int i = 0; i < 300; ++i)
                corpus.write("the cat sat on the mat. a dog ran in the fog. ");
        }
        return worker;
    }

private Q_SLOTS:
    void matchesDdp_data()
    {
        QTest::addColumn<int>("world");
        QTest::addColumn<int>("local");
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QString>("strategy");
        const QStringList ds{"ACCELERATE_USE_DEEPSPEED=true"};
        const QStringList fsdp1{"ACCELERATE_USE_FSDP=true", "FSDP_VERSION=1"};
        const QStringList fsdp2{"ACCELERATE_USE_FSDP=true", "FSDP_VERSION=2",
                                "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP"};
        QTest::newRow("ZeRO-1 x2") << 2 << 2 << ds + QStringList{"ACCELERATE_DEEPSPEED_ZERO_STAGE=1"} << "ZeRO-1";
        QTest::newRow("ZeRO-2 x2") << 2 << 2 << ds + QStringList{"ACCELERATE_DEEPSPEED_ZERO_STAGE=2"} << "ZeRO-2";
        QTest::newRow("ZeRO-3 x2") << 2 << 2 << ds + QStringList{"ACCELERATE_DEEPSPEED_ZERO_STAGE=3"} << "ZeRO-3";
        QTest::newRow("ZeRO-3 x4 process group")
            << 4 << 4 << ds + QStringList{"ACCELERATE_DEEPSPEED_ZERO_STAGE=3", "ACCEL_SHM_COLLECTIVES=0"} << "ZeRO-3";
        QTest::newRow("ZeRO-3 x4 offload") << 4 << 4
                                           << ds + QStringList{"ACCELERATE_DEEPSPEED_ZERO_STAGE=3",
                                                               "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE=cpu",
                                                               "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE=cpu"}
                                           << "ZeRO-3";
        QTest::newRow("FULL_SHARD x2") << 2 << 2
                                       << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=FULL_SHARD",
                                                              "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                                                              "FSDP_TRANSFORMER_CLS_TO_WRAP=StackBlock"}
                                       << "FULL_SHARD";
        QTest::newRow("SHARD_GRAD_OP x2")
            << 2 << 2
            << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=SHARD_GRAD_OP", "FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP",
                                   "FSDP_MIN_NUM_PARAMS=1000"}
            << "SHARD_GRAD_OP";
        QTest::newRow("FULL_SHARD x4") << 4 << 4 << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=FULL_SHARD"}
                                       << "FULL_SHARD";
        QTest::newRow("HYBRID_SHARD 2x2")
            << 4 << 2
            << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=HYBRID_SHARD", "GLOO_SOCKET_IFNAME=lo",
                                   "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP"}
            << "HYBRID_SHARD";
        QTest::newRow("HYBRID_SHARD_ZERO2 2x2")
            << 4 << 2 << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=HYBRID_SHARD_ZERO2", "GLOO_SOCKET_IFNAME=lo"}
            << "HYBRID_SHARD_ZERO2";
        QTest::newRow("fully_shard x2") << 2 << 2 << fsdp2 + QStringList{"FSDP_RESHARD_AFTER_FORWARD=true"}
                                        << "fully_shard(reshard_after_forward=True)";
        QTest::newRow("fully_shard no reshard x2") << 2 << 2 << fsdp2 + QStringList{"FSDP_RESHARD_AFTER_FORWARD=false"}
                                                   << "fully_shard(reshard_after_forward=False)";
    }
    void matchesDdp()
    {
        QFETCH(int, world);
        QFETCH(int, local);
        QFETCH(QStringList, env);
        QFETCH(QString, strategy);
        QVERIFY(m_dir.isValid());
        const QString ddp = reference(world);
        const QString out = m_dir.filePath(QString(QTest::currentDataTag()).replace(' ', '_') + ".txt");
        Job job = runRanks(world, kTrain + QStringList{"wrap_root=1", "out=" + out}, env, local);
        QVERIFY2(job.ok, qPrintable(job.errors));
        QCOMPARE(readLines(out, "strategy "), QStringList{"strategy " + strategy});
        QCOMPARE(readLines(ddp, "strategy "), QStringList{"strategy DDP"});
        // Ranks of one host share memory unless it is switched off.
        QCOMPARE(readLines(out, "transport "),
                 QStringList{env.contains("ACCEL_SHM_COLLECTIVES=0") ? "transport process-group"
                                                                     : "transport shared-memory"});
        const double worst = worstDifference(readLines(out, "param "), readLines(ddp, "param "));
        QVERIFY2(worst <= 1e-5, qPrintable(QString("parameters differ from DDP by %1").arg(worst)));
        // Same losses along the way, too.
        QVERIFY(worstDifference(readLines(out, "loss "), readLines(ddp, "loss ")) <= 1e-5);
    }

    void memoryFallsWithTheStage()
    {
        // 2 ranks, AdamW: each stage holds what ShardingPlan::predictMemory says (up to the flat
        // parameters' padding), and ZeRO-3 at most half of DDP + 10%.
        const QString ddp = reference(2);
        const QList<qint64> whole = memoryFigures(ddp);
        QCOMPARE(whole.size(), 3);
        const qint64 parameters = whole[0] / 4;
        QCOMPARE(whole[2], whole[0] * 2); // DDP: AdamW's two moments of every parameter
        const qint64 ddpTotal = whole[0] + whole[1] + whole[2];
        qint64 previous = ddpTotal;
        for (int stage = 1; stage <= 3; ++stage) {
            const QStringList env{"ACCELERATE_USE_DEEPSPEED=true",
                                  QString("ACCELERATE_DEEPSPEED_ZERO_STAGE=%1").arg(stage)};
            const QString out = m_dir.filePath(QString("memory%1.txt").arg(stage));
            Job job = runRanks(2, kTrain + QStringList{"wrap_root=1", "steps=3", "out=" + out}, env);
            QVERIFY2(job.ok, qPrintable(job.errors));
            const QList<qint64> measured = memoryFigures(out);
            QCOMPARE(measured.size(), 3);
            auto plan = accel::runtime::shardingPlanFromEnvironment(lookup(env));
            QVERIFY(plan);
            const accel::runtime::TrainingMemory predicted = plan->predictMemory(parameters, 4, 2, 2, 2);
            const qint64 total = measured[0] + measured[1] + measured[2];
            qInfo("ZeRO-%d on 2 ranks, bytes per rank: parameters %lld (predicted %lld), gradients %lld (%lld), "
                  "optimizer state %lld (%lld); total %.3f of DDP's %lld",
                  stage, measured[0], qlonglong(predicted.parameters), measured[1], qlonglong(predicted.gradients),
                  measured[2], qlonglong(predicted.optimizerState), double(total) / double(previous),
                  whole[0] + whole[1] + whole[2]);
            // Padding: fewer than 2 elements per unit (5 units) per tensor kind.
            QVERIFY(std::abs(measured[0] - predicted.parameters) <= 5 * 4 * 2);
            QVERIFY(std::abs(measured[1] - predicted.gradients) <= 5 * 4 * 2);
            QVERIFY(std::abs(measured[2] - predicted.optimizerState) <= 5 * 4 * 2 * 2);
            QVERIFY(total < previous);
            previous = total;
        }
        QVERIFY2(double(previous) <= double(ddpTotal) * (0.5 + 0.1),
                 qPrintable(QString("ZeRO-3 %1 bytes").arg(previous)));
    }

    void gradientAccumulationMatchesDdp()
    {
        const QString ddp = reference(2, {"accum=2"});
        const QString out = m_dir.filePath("accum.txt");
        Job job = runRanks(2, kTrain + QStringList{"wrap_root=1", "accum=2", "out=" + out},
                           {"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"});
        QVERIFY2(job.ok, qPrintable(job.errors));
        const double worst = worstDifference(readLines(out, "param "), readLines(ddp, "param "));
        QVERIFY2(worst <= 1e-5, qPrintable(QString("parameters differ from DDP by %1").arg(worst)));
    }

    void shardedSaveOnFourRanksResumesOnTwo()
    {
        // 4 ranks x batch 8 and 2 ranks x batch 16 see the same 32 samples per step, so a run
        // saved on 4 ranks continues on 2 as it does on 4.
        const QStringList zero3{"ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=FULL_SHARD",
                                "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                                "FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT"};
        const QStringList common{"train",           "model=stack", "blocks=3", "constant=1",
                                 "optimizer=adamw", "wrap_root=1", "steps=6"};
        const QString checkpoint = m_dir.filePath("ckpt4");
        const QString whole = m_dir.filePath("whole4.txt"), on4 = m_dir.filePath("resume4.txt"),
                      on2 = m_dir.filePath("resume2.txt");
        Job saved = runRanks(
            4, common + QStringList{"batch=8", "save_at=3", "checkpoint=" + checkpoint, "out=" + whole}, zero3);
        QVERIFY2(saved.ok, qPrintable(saved.errors));
        QVERIFY(QFile::exists(checkpoint + "/pytorch_model_fsdp_0/index.json"));
        QVERIFY(QFile::exists(checkpoint + "/pytorch_model_fsdp_0/rank3.safetensors"));
        QVERIFY(QFile::exists(checkpoint + "/optimizer_0/rank3.safetensors"));
        QVERIFY(!QFile::exists(checkpoint + "/model.safetensors"));
        Job four =
            runRanks(4, common + QStringList{"batch=8", "resume=" + checkpoint, "resume_step=3", "out=" + on4}, zero3);
        QVERIFY2(four.ok, qPrintable(four.errors));
        Job two =
            runRanks(2, common + QStringList{"batch=16", "resume=" + checkpoint, "resume_step=3", "out=" + on2}, zero3);
        QVERIFY2(two.ok, qPrintable(two.errors));
        // accel merge-weights joins the pieces into the model a FULL_STATE_DICT save writes, bit for bit.
        const QString full = m_dir.filePath("ckpt4full");
        Job fullSave = runRanks(4,
                                common + QStringList{"batch=8", "steps=3", "save_at=3", "checkpoint=" + full,
                                                     "out=" + m_dir.filePath("full4.txt")},
                                QStringList(zero3).replaceInStrings("SHARDED_STATE_DICT", "FULL_STATE_DICT"));
        QVERIFY2(fullSave.ok, qPrintable(fullSave.errors));
        const QString merged = m_dir.filePath("merged");
        const auto merge = accel::test::runAccel({"merge-weights", checkpoint, merged});
        QVERIFY2(merge.exitCode == 0, qPrintable(merge.err));
        auto ours = accel::bigmodel::SafetensorsFile::open((merged + "/model.safetensors").toStdString());
        auto theirs = accel::bigmodel::SafetensorsFile::open((full + "/model.safetensors").toStdString());
        QVERIFY(ours && theirs);
        QCOMPARE((*ours)->tensors().size(), (*theirs)->tensors().size());
        for (const auto &tensor : (*theirs)->tensors()) {
            const auto *mine = (*ours)->find(tensor.name);
            QVERIFY2(mine, tensor.name.c_str());
            QCOMPARE(mine->shape, tensor.shape);
            QVERIFY2(std::memcmp(mine->data, tensor.data, tensor.byteSize()) == 0, tensor.name.c_str());
        }
        QCOMPARE(accel::test::runAccel({"merge-weights", m_dir.filePath("nowhere"), merged}).exitCode, 2);

        const QStringList reference = readLines(whole, "param ");
        QCOMPARE(worstDifference(readLines(on4, "param "), reference), 0.0); // same world size: bitwise
        const double worst = worstDifference(readLines(on2, "param "), reference);
        QVERIFY2(worst <= 1e-6, qPrintable(QString("2-rank continuation differs by %1").arg(worst)));
    }

    void gptRecipeShardedMatchesDdp_data()
    {
        QTest::addColumn<QStringList>("env");
        QTest::newRow("ZeRO-3") << QStringList{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"};
        QTest::newRow("FULL_SHARD") << QStringList{"ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=FULL_SHARD",
                                                   "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                                                   "FSDP_TRANSFORMER_CLS_TO_WRAP=Block"};
    }
    void gptRecipeShardedMatchesDdp()
    {
        // 30 steps of accel-worker's gpt recipe (each Block a unit, the model the root) on 2 ranks.
        QFETCH(QStringList, env);
        const QString worker = accel::test::binDir() + "/accel-worker";
        if (!QFile::exists(worker))
            QSKIP("accel-worker is not built");
        QFile corpus(m_dir.filePath("corpus.txt"));
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        for (int i = 0; i < 300; ++i)
            corpus.write("the cat sat on the mat. a dog ran in the fog. ");
        corpus.close();
        const auto job = [&](const QString &name) {
            const QString path = m_dir.filePath(name + ".yaml");
            QFile file(path);
            file.open(QIODevice::WriteOnly);
            file.write(("recipe: gpt\noutput_dir: " + name +
                        "\nmodel: {n_layer: 2, n_head: 2, n_embd: 32, "
                        "block_size: 32}\ndata: {corpus: corpus.txt}\nsample: {length: 0}\n"
                        "training: {max_steps: 30, batch_size: 4, log_every: 10}\n")
                           .toUtf8());
            return path;
        };
        const QString tag = QString(QTest::currentDataTag()).replace('-', '_');
        if (!QFile::exists(m_dir.filePath("gpt_ddp/model.safetensors"))) {
            Job ddp = runJob(worker, 2, {job("gpt_ddp")});
            QVERIFY2(ddp.ok, qPrintable(ddp.errors));
        }
        Job sharded = runJob(worker, 2, {job("gpt_" + tag)}, env);
        QVERIFY2(sharded.ok, qPrintable(sharded.errors));
        QVERIFY2(sharded.out.contains("process(es), " + QString(QTest::currentDataTag())), qPrintable(sharded.out));
        auto a = accel::bigmodel::SafetensorsFile::open(m_dir.filePath("gpt_ddp/model.safetensors").toStdString());
        auto b =
            accel::bigmodel::SafetensorsFile::open(m_dir.filePath("gpt_" + tag + "/model.safetensors").toStdString());
        QVERIFY(a && b);
        QCOMPARE((*a)->tensors().size(), (*b)->tensors().size());
        double worst = 0;
        for (const auto &tensor : (*a)->tensors()) {
            const auto *other = (*b)->find(tensor.name);
            QVERIFY2(other && other->byteSize() == tensor.byteSize(), tensor.name.c_str());
            if (tensor.dtype != accel::bigmodel::DType::F32)
                continue;
            const auto *x = reinterpret_cast<const float *>(tensor.data);
            const auto *y = reinterpret_cast<const float *>(other->data);
            for (uint64_t i = 0; i < tensor.byteSize() / 4; ++i)
                worst = std::max(worst, double(std::abs(x[i] - y[i])));
        }
        qInfo("gpt recipe, %s on 2 ranks: largest difference from DDP after 30 steps %g", QTest::currentDataTag(),
              worst);
        QVERIFY2(worst <= 1e-5, qPrintable(QString("parameters differ from DDP by %1").arg(worst)));
    }

    void gptRecipeZero3InitIsBitIdentical_data()
    {
        QTest::addColumn<int>("world");
        QTest::newRow("2 ranks") << 2;
        QTest::newRow("4 ranks") << 4;
    }
    void gptRecipeZero3InitIsBitIdentical()
    {
        // zero3_init_flag (on by default at ZeRO-3, as in Accelerate's plugin): the gpt recipe shards
        // each block as soon as it is built and initialises it inside modify(). Its initial weights
        // equal DDP's, and both its initial weights and those after 10 steps equal, bit for bit, the
        // same run's with the flag off (the model built whole on every rank, sharded at prepare).
        QFETCH(int, world);
        const QString worker = gptWorker();
        if (worker.isEmpty())
            QSKIP("accel-worker is not built");
        const auto run = [&](const QString &name, int steps, const QStringList &env) {
            const QString path = m_dir.filePath(name + ".yaml");
            QFile file(path);
            file.open(QIODevice::WriteOnly);
            file.write(
                QString("recipe: gpt\noutput_dir: %1\nmodel: {n_layer: 3, n_head: 2, n_embd: 32, block_size: 32}\n"
                        "data: {corpus: corpus.txt}\nsample: {length: 0}\n"
                        "training: {max_steps: %2, batch_size: 4, log_every: 5, resume: none}\n")
                    .arg(name)
                    .arg(steps)
                    .toUtf8());
            file.close();
            return runJob(worker, world, {path}, env);
        };
        const auto bytes = [&](const QString &name) {
            QFile file(m_dir.filePath(name + "/model.safetensors"));
            return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
        };
        const QStringList zero3{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"};
        const QString w = QString::number(world);
        for (int steps : {0, 10}) {
            const QString on = "zero3init_on_" + w + "_" + QString::number(steps);
            const QString off = "zero3init_off_" + w + "_" + QString::number(steps);
            Job built = run(on, steps, zero3);
            QVERIFY2(built.ok, qPrintable(built.errors));
            QVERIFY2(built.err.contains("note: zero3_init_flag: model 0: 3 units sharded as they were built"),
                     qPrintable(built.err));
            Job whole = run(off, steps, zero3 + QStringList{"ACCELERATE_DEEPSPEED_ZERO3_INIT=false"});
            QVERIFY2(whole.ok, qPrintable(whole.errors));
            QVERIFY2(!whole.err.contains("zero3_init_flag"), qPrintable(whole.err));
            QVERIFY(!bytes(on).isEmpty());
            QVERIFY2(bytes(on) == bytes(off), qPrintable(on + " differs from " + off));
            if (steps == 0) {
                Job ddp = run("zero3init_ddp_" + w, 0, {});
                QVERIFY2(ddp.ok, qPrintable(ddp.errors));
                QVERIFY2(bytes(on) == bytes("zero3init_ddp_" + w), "initial weights differ from DDP's");
            }
        }
    }

    void zero3InitBuildsWholeWhereItCannotAndSaysSo()
    {
        // Under zero3_init_flag, what is not built unit by unit is built whole on every rank and
        // sharded at prepare, said by name on rank 0: a model under mixed precision fp8 (converted
        // at prepare; same weights as with the flag off), and the distill recipe's teacher (loaded
        // from its file) next to a student built unit by unit.
        const QString worker = gptWorker();
        if (worker.isEmpty())
            QSKIP("accel-worker is not built");
        const auto write = [&](const QString &name, const QString &text) {
            QFile file(m_dir.filePath(name + ".yaml"));
            file.open(QIODevice::WriteOnly);
            file.write(("output_dir: " + name + "\nmodel: {n_layer: 2, n_head: 2, n_embd: 32, block_size: 32}\n" +
                        "data: {corpus: corpus.txt}\nsample: {length: 0}\n" + text)
                           .toUtf8());
            return file.fileName();
        };
        const QStringList zero3{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"};
        const QStringList fp8{"ACCELERATE_MIXED_PRECISION=fp8", "ACCELERATE_FP8_BACKEND=TE"};
        const QString steps = "recipe: gpt\ntraining: {max_steps: 4, batch_size: 4, log_every: 4, resume: none}\n";
        Job on = runJob(worker, 2, {write("zero3init_fp8_on", steps)}, zero3 + fp8);
        QVERIFY2(on.ok, qPrintable(on.errors));
        QVERIFY2(on.err.contains("note: zero3_init_flag: model 0: built whole on every rank, then sharded at prepare "
                                 "(mixed precision fp8"),
                 qPrintable(on.err));
        Job off = runJob(worker, 2, {write("zero3init_fp8_off", steps)},
                         zero3 + fp8 + QStringList{"ACCELERATE_DEEPSPEED_ZERO3_INIT=false"});
        QVERIFY2(off.ok, qPrintable(off.errors));
        QFile a(m_dir.filePath("zero3init_fp8_on/model.safetensors")),
            b(m_dir.filePath("zero3init_fp8_off/model.safetensors"));
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        QVERIFY(a.readAll() == b.readAll());

        Job distill = runJob(
            worker, 2,
            {write("zero3init_distill", "recipe: distill\nteacher: {weights: zero3init_fp8_off/model.safetensors}\n"
                                        "training: {max_steps: 2, batch_size: 4, log_every: 2, resume: none}\n")},
            zero3);
        QVERIFY2(distill.ok, qPrintable(distill.errors));
        QVERIFY2(distill.err.contains("note: zero3_init_flag: model 0: 2 units sharded as they were built"),
                 qPrintable(distill.err));
        QVERIFY2(distill.err.contains("note: zero3_init_flag: model 1: built whole on every rank, then sharded at "
                                      "prepare (no unit was built with Accelerator::wrapBuilt())"),
                 qPrintable(distill.err));
    }

    void zero3InitFlagNextToAJsonFile()
    {
        // Accelerate reads zero3_init_flag from ACCELERATE_DEEPSPEED_ZERO3_INIT next to a DeepSpeed
        // file too (default: whether the file's stage is 3), and turns it off below stage 3.
        const QString stage3 = m_dir.filePath("zero3init_stage3.json"),
                      stage2 = m_dir.filePath("zero3init_stage2.json");
        for (const auto &[path, stage] : {std::pair{stage3, 3}, std::pair{stage2, 2}}) {
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(QString(R"({"zero_optimization": {"stage": %1}})").arg(stage).toUtf8());
        }
        const auto flag = [](const QString &file, const QString &init) {
            QStringList env{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_CONFIG_FILE=" + file};
            if (!init.isEmpty())
                env << "ACCELERATE_DEEPSPEED_ZERO3_INIT=" + init;
            auto plan = accel::runtime::shardingPlanFromEnvironment(lookup(env));
            return plan ? QString(plan->zero3Init ? "on" : "off") : QString::fromStdString(plan.error().message);
        };
        QCOMPARE(flag(stage3, ""), QString("on"));
        QCOMPARE(flag(stage3, "false"), QString("off"));
        QCOMPARE(flag(stage3, "true"), QString("on"));
        QCOMPARE(flag(stage2, "true"), QString("off"));
        QVERIFY(flag(stage3, "maybe").contains("ACCELERATE_DEEPSPEED_ZERO3_INIT=maybe"));
    }

    void prefetchLeavesResultsBitIdentical_data()
    {
        QTest::addColumn<int>("world");
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QStringList>("without");
        const QStringList fullShard{"ACCELERATE_USE_FSDP=true", "FSDP_VERSION=1", "FSDP_SHARDING_STRATEGY=FULL_SHARD",
                                    "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                                    "FSDP_TRANSFORMER_CLS_TO_WRAP=StackBlock"};
        const QStringList none{"FSDP_FORWARD_PREFETCH=false", "FSDP_BACKWARD_PREFETCH=NO_PREFETCH"};
        QTest::newRow("FULL_SHARD forward + BACKWARD_PRE x2")
            << 2 << fullShard + QStringList{"FSDP_FORWARD_PREFETCH=true", "FSDP_BACKWARD_PREFETCH=BACKWARD_PRE"}
            << fullShard + none;
        QTest::newRow("FULL_SHARD BACKWARD_POST x2")
            << 2 << fullShard + QStringList{"FSDP_BACKWARD_PREFETCH=BACKWARD_POST"} << fullShard + none;
        QTest::newRow("FULL_SHARD forward + BACKWARD_PRE x4 process group")
            << 4
            << fullShard + QStringList{"FSDP_FORWARD_PREFETCH=true", "FSDP_BACKWARD_PREFETCH=BACKWARD_PRE",
                                       "ACCEL_SHM_COLLECTIVES=0"}
            << fullShard + none + QStringList{"ACCEL_SHM_COLLECTIVES=0"};
        // DeepSpeed prefetches by default; a JSON file's stage3_prefetch_bucket_size 0 turns it off.
        const QString json = m_dir.filePath("no_prefetch.json");
        QFile file(json);
        if (file.open(QIODevice::WriteOnly))
            file.write(R"({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 0}})");
        file.close();
        QTest::newRow("ZeRO-3 x2") << 2
                                   << QStringList{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"}
                                   << QStringList{"ACCELERATE_USE_DEEPSPEED=true",
                                                  "ACCELERATE_DEEPSPEED_CONFIG_FILE=" + json};
    }
    void prefetchLeavesResultsBitIdentical()
    {
        // The same steps with and without prefetch of the next unit: every loss and parameter
        // equal bit for bit (an all-gather copies; only its timing moves), and the prefetching run
        // did start all-gathers ahead.
        QFETCH(int, world);
        QFETCH(QStringList, env);
        QFETCH(QStringList, without);
        const QString tag = QString(QTest::currentDataTag()).replace(' ', '_').replace('+', 'p');
        const QString with = m_dir.filePath("prefetch_" + tag + ".txt");
        const QString plain = m_dir.filePath("noprefetch_" + tag + ".txt");
        Job job = runRanks(world, kTrain + QStringList{"wrap_root=1", "log=1", "out=" + with}, env);
        QVERIFY2(job.ok, qPrintable(job.errors));
        job = runRanks(world, kTrain + QStringList{"wrap_root=1", "log=1", "out=" + plain}, without);
        QVERIFY2(job.ok, qPrintable(job.errors));
        QCOMPARE(readLines(with, "param ").size(), readLines(plain, "param ").size());
        QVERIFY(!readLines(with, "param ").isEmpty());
        QCOMPARE(readLines(with, "param "), readLines(plain, "param "));
        QCOMPARE(readLines(with, "loss "), readLines(plain, "loss "));
        const QStringList counted = readLines(with, "log ").filter("parameter all-gathers prefetched");
        const QStringList none = readLines(plain, "log ").filter("parameter all-gathers prefetched");
        QCOMPARE(counted.size(), 1);
        QCOMPARE(none.size(), 1);
        QVERIFY2(counted.front().contains(": 0 of ") == false, qPrintable(counted.front()));
        QVERIFY2(none.front().contains(": 0 of "), qPrintable(none.front()));
        qInfo("%s: %s", QTest::currentDataTag(), qPrintable(counted.front().mid(4)));
    }

    void unimplementedSettingsAreRefusedByName()
    {
        struct Case {
            QStringList env;
            QString needle;
        };
        const QList<Case> cases{
            {{"ACCELERATE_USE_FSDP=true", "FSDP_ACTIVATION_CHECKPOINTING=true"}, "FSDP_ACTIVATION_CHECKPOINTING=true"},
            {{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3",
              "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE=nvme"},
             "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE=nvme"},
            {{"ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=HYBRID_SHARD", "GLOO_SOCKET_IFNAME=lo"},
             "LOCAL_WORLD_SIZE=2"},
        };
        for (const Case &c : cases) {
            const int world = c.needle.startsWith("LOCAL") ? 3 : 2;
            const int port = accel::test::freeLoopbackPort();
            QProcess process;
            QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
            for (const QString &entry :
                 c.env + QStringList{"RANK=0", "WORLD_SIZE=" + QString::number(world), "LOCAL_WORLD_SIZE=2",
                                     "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + QString::number(port)})
                e.insert(entry.section('=', 0, 0), entry.section('=', 1));
            process.setProcessEnvironment(e);
            process.start(accel::test::binDir() + "/accel-runtime-probe", kTrain + QStringList{"timeout=5"});
            QVERIFY(process.waitForFinished(60000));
            const QString err = process.readAllStandardError();
            QCOMPARE(process.exitCode(), 3);
            QVERIFY2(err.contains(c.needle), qPrintable(err));
        }
    }
};

QTEST_GUILESS_MAIN(tst_Sharding)
#include "tst_sharding.moc"
