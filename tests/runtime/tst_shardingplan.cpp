// ShardingPlan: Accelerate's fsdp_config / deepspeed_config (as the launcher exports them) to one
// plan, divide factors as PyTorch computes them, and every unimplemented setting refused by name.
#include "core/plan/devicemesh.h"
#include "core/plan/shardingplan.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <memory>
#include <sys/stat.h>

using namespace accel::runtime;

namespace {

using Vars = std::map<std::string, std::string>;

Vars fsdp(Vars extra = {})
{
    // What launcher/envbuilder exports for a default FSDP1 block.
    Vars vars{{"ACCELERATE_USE_FSDP", "true"},
              {"FSDP_VERSION", "1"},
              {"FSDP_SHARDING_STRATEGY", "FULL_SHARD"},
              {"FSDP_RESHARD_AFTER_FORWARD", "true"},
              {"FSDP_OFFLOAD_PARAMS", "false"},
              {"FSDP_MIN_NUM_PARAMS", "100000000"},
              {"FSDP_FORWARD_PREFETCH", "false"},
              {"FSDP_USE_ORIG_PARAMS", "true"},
              {"FSDP_CPU_RAM_EFFICIENT_LOADING", "true"},
              {"FSDP_SYNC_MODULE_STATES", "true"},
              {"FSDP_ACTIVATION_CHECKPOINTING", "false"}};
    for (auto &[key, value] : extra)
        vars[key] = value;
    return vars;
}

Vars deepspeed(Vars extra = {})
{
    Vars vars{{"ACCELERATE_USE_DEEPSPEED", "true"}};
    for (auto &[key, value] : extra)
        vars[key] = value;
    return vars;
}

accel::Result<ShardingPlan> plan(const Vars &vars)
{
    auto shared = std::make_shared<Vars>(vars);
    return shardingPlanFromEnvironment([shared](const char *name) -> const char * {
        auto it = shared->find(name);
        return it == shared->end() ? nullptr : it->second.c_str();
    });
}

// The plan must be refused with a message naming `needle` (the key and its value).
void expectRefused(const Vars &vars, const QString &needle)
{
    auto result = plan(vars);
    QVERIFY2(!result, qPrintable("accepted, expected an error naming " + needle));
    const QString message = QString::fromStdString(result.error().toString());
    QVERIFY2(message.contains(needle), qPrintable(message));
}

} // namespace

class tst_ShardingPlan : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void noDistributedTypeIsDdp()
    {
        auto p = plan({});
        QVERIFY(p);
        QCOMPARE(p->source, ShardingSource::None);
        QCOMPARE(p->stage, 0);
        QVERIFY(!p->sharded());
    }

    void fsdp1Strategies_data()
    {
        QTest::addColumn<QString>("strategy");
        QTest::addColumn<int>("stage");
        QTest::addColumn<bool>("reshard");
        QTest::addColumn<bool>("hybrid");
        QTest::newRow("FULL_SHARD") << "FULL_SHARD" << 3 << true << false;
        QTest::newRow("SHARD_GRAD_OP") << "SHARD_GRAD_OP" << 3 << false << false;
        QTest::newRow("NO_SHARD") << "NO_SHARD" << 0 << false << false;
        QTest::newRow("HYBRID_SHARD") << "HYBRID_SHARD" << 3 << true << true;
        QTest::newRow("HYBRID_SHARD_ZERO2") << "HYBRID_SHARD_ZERO2" << 3 << false << true;
        QTest::newRow("index 2") << "2" << 3 << false << false;
        QTest::newRow("lower case") << "no_shard" << 0 << false << false;
    }
    void fsdp1Strategies()
    {
        QFETCH(QString, strategy);
        QFETCH(int, stage);
        QFETCH(bool, reshard);
        QFETCH(bool, hybrid);
        auto p = plan(fsdp({{"FSDP_SHARDING_STRATEGY", strategy.toStdString()}}));
        QVERIFY2(p, p ? "" : p.error().message.c_str());
        QCOMPARE(p->source, ShardingSource::Fsdp);
        QCOMPARE(p->fsdpVersion, 1);
        QCOMPARE(p->stage, stage);
        QCOMPARE(p->reshardAfterForward, reshard);
        QCOMPARE(p->hybrid, hybrid);
        QCOMPARE(p->stateDictType, StateDictType::Full);
    }

    void fsdp1ShardingStrategyBeatsReshardAfterForward()
    {
        // The questionnaire stores the FSDP1 strategy in fsdp_reshard_after_forward, but the
        // always-exported FSDP_SHARDING_STRATEGY wins, as in Accelerate.
        auto p = plan(fsdp({{"FSDP_RESHARD_AFTER_FORWARD", "SHARD_GRAD_OP"}}));
        QVERIFY(p);
        QCOMPARE(QString::fromStdString(p->strategy), QString("FULL_SHARD"));
        Vars vars = fsdp({{"FSDP_RESHARD_AFTER_FORWARD", "SHARD_GRAD_OP"}});
        vars.erase("FSDP_SHARDING_STRATEGY");
        auto fallback = plan(vars);
        QVERIFY(fallback);
        QCOMPARE(QString::fromStdString(fallback->strategy), QString("SHARD_GRAD_OP"));
    }

    void fsdp2ReshardAfterForward()
    {
        auto on = plan(fsdp({{"FSDP_VERSION", "2"}, {"FSDP_RESHARD_AFTER_FORWARD", "true"}}));
        QVERIFY(on);
        QCOMPARE(on->stage, 3);
        QVERIFY(on->reshardAfterForward);
        QCOMPARE(on->stateDictType, StateDictType::Sharded); // FSDP2's default
        auto off = plan(fsdp({{"FSDP_VERSION", "2"}, {"FSDP_RESHARD_AFTER_FORWARD", "false"}}));
        QVERIFY(off);
        QCOMPARE(off->stage, 3);
        QVERIFY(!off->reshardAfterForward);
        expectRefused(fsdp({{"FSDP_VERSION", "2"}, {"FSDP_RESHARD_AFTER_FORWARD", "2"}}),
                      "FSDP_RESHARD_AFTER_FORWARD=2");
        expectRefused(fsdp({{"FSDP_VERSION", "2"}, {"FSDP_RESHARD_AFTER_FORWARD", "FULL_SHARD"}}),
                      "FSDP_RESHARD_AFTER_FORWARD=FULL_SHARD: expected true or false");
    }

    void fsdpWrapPolicyAndOffload()
    {
        auto p = plan(fsdp({{"FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP"},
                            {"FSDP_TRANSFORMER_CLS_TO_WRAP", "Block, GPT2Block"},
                            {"FSDP_OFFLOAD_PARAMS", "true"},
                            {"FSDP_BACKWARD_PREFETCH", "BACKWARD_PRE"}}));
        QVERIFY(p);
        QCOMPARE(p->wrapPolicy, WrapPolicy::TransformerBlock);
        QCOMPARE(p->wrapClasses, (std::vector<std::string>{"Block", "GPT2Block"}));
        QVERIFY(p->offloadParameters);
        QVERIFY(p->offloadOptimizerState);
        QCOMPARE(QString::fromStdString(p->backwardPrefetch), QString("BACKWARD_PRE"));
        auto size = plan(fsdp({{"FSDP_AUTO_WRAP_POLICY", "SIZE_BASED_WRAP"}, {"FSDP_MIN_NUM_PARAMS", "2000"}}));
        QVERIFY(size);
        QCOMPARE(size->wrapPolicy, WrapPolicy::Size);
        QCOMPARE(size->minNumParams, int64_t(2000));
        // Accelerate 1.0-1.12 exports the default as a float's text.
        auto floatText =
            plan(fsdp({{"FSDP_AUTO_WRAP_POLICY", "SIZE_BASED_WRAP"}, {"FSDP_MIN_NUM_PARAMS", "100000000.0"}}));
        QVERIFY(floatText);
        QCOMPARE(floatText->minNumParams, int64_t(100000000));
    }

    void fsdpRefusedSettings()
    {
        expectRefused(fsdp({{"FSDP_SHARDING_STRATEGY", "FULL"}}),
                      "FSDP_SHARDING_STRATEGY=FULL: expected one of FULL_SHARD, SHARD_GRAD_OP");
        expectRefused(fsdp({{"FSDP_VERSION", "3"}}), "FSDP_VERSION=3: expected 1 or 2");
        expectRefused(fsdp({{"FSDP_ACTIVATION_CHECKPOINTING", "true"}}), "FSDP_ACTIVATION_CHECKPOINTING=true");
        expectRefused(fsdp({{"FSDP_STATE_DICT_TYPE", "LOCAL_STATE_DICT"}}), "FSDP_STATE_DICT_TYPE=LOCAL_STATE_DICT");
        expectRefused(fsdp({{"FSDP_IGNORED_MODULES", "lm_head"}}), "FSDP_IGNORED_MODULES=lm_head");
        expectRefused(fsdp({{"FSDP_VERSION", "2"}, {"FSDP_FORWARD_PREFETCH", "true"}}), "FSDP_FORWARD_PREFETCH=true");
        expectRefused(fsdp({{"FSDP_AUTO_WRAP_POLICY", "SIZE_BASED_WRAP"}, {"FSDP_MIN_NUM_PARAMS", "lots"}}),
                      "FSDP_MIN_NUM_PARAMS=lots");
        expectRefused(fsdp({{"FSDP_AUTO_WRAP_POLICY", "BY_NAME"}}), "FSDP_AUTO_WRAP_POLICY=BY_NAME");
        expectRefused(fsdp({{"FSDP_OFFLOAD_PARAMS", "maybe"}}), "FSDP_OFFLOAD_PARAMS=maybe: expected true or false");
        expectRefused(fsdp({{"FSDP_BACKWARD_PREFETCH", "EARLY"}}), "FSDP_BACKWARD_PREFETCH=EARLY");
        Vars both = fsdp();
        both["ACCELERATE_USE_DEEPSPEED"] = "true";
        expectRefused(both, "both true");
    }

    void deepSpeedStagesFromEnvironment()
    {
        for (int stage = 0; stage <= 3; ++stage) {
            auto p = plan(deepspeed({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", std::to_string(stage)}}));
            QVERIFY(p);
            QCOMPARE(p->source, ShardingSource::DeepSpeed);
            QCOMPARE(p->stage, stage);
            QCOMPARE(p->reshardAfterForward, stage == 3);
            QCOMPARE(QString::fromStdString(p->strategy), QString("ZeRO-%1").arg(stage));
        }
        auto defaults = plan(deepspeed());
        QVERIFY(defaults);
        QCOMPARE(defaults->stage, 2); // Accelerate's plugin default
        auto p = plan(deepspeed({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"},
                                 {"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "cpu"},
                                 {"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "cpu"},
                                 {"ACCELERATE_GRADIENT_CLIPPING", "1.0"},
                                 {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4"},
                                 {"ACCELERATE_DEEPSPEED_ZERO3_INIT", "true"},
                                 {"ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "true"}}));
        QVERIFY(p);
        QVERIFY(p->offloadOptimizerState);
        QVERIFY(p->offloadParameters);
        QCOMPARE(p->gradientClipping, 1.0);
        QCOMPARE(p->gradientAccumulationSteps, 4);
        QVERIFY(p->zero3Init);
        QVERIFY(p->zero3Save16BitModel);
        // Parameter offload below stage 3 is ignored by DeepSpeed: accepted, said in a note.
        auto stage2 = plan(deepspeed(
            {{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "2"}, {"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "cpu"}}));
        QVERIFY(stage2);
        QVERIFY(!stage2->offloadParameters);
        QCOMPARE(stage2->notes.size(), size_t(1));
    }

    void deepSpeedRefusedSettings()
    {
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"},
                                 {"ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "nvme"}}),
                      "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE=nvme: offload to NVMe is not implemented");
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "nvme"}}),
                      "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE=nvme");
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "4"}}), "ACCELERATE_DEEPSPEED_ZERO_STAGE=4");
        expectRefused(deepspeed({{"ACCELERATE_GRADIENT_CLIPPING", "-1"}}), "ACCELERATE_GRADIENT_CLIPPING=-1");
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES", "MixtralSparseMoeBlock"}}),
                      "ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES=MixtralSparseMoeBlock");
    }

    void deepSpeedJsonFile()
    {
        QTemporaryDir dir;
        const auto write = [&](const QString &name, const QByteArray &json) {
            QFile file(dir.filePath(name));
            file.open(QIODevice::WriteOnly);
            file.write(json);
            return dir.filePath(name).toStdString();
        };
        const std::string good = write("ds.json", R"({"train_batch_size": "auto", "gradient_accumulation_steps": 2,
            "gradient_clipping": 0.5, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
            "overlap_comm": true, "stage3_gather_16bit_weights_on_model_save": true}})");
        auto p = plan(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", good}}));
        QVERIFY2(p, p ? "" : p.error().toString().c_str());
        QCOMPARE(p->stage, 3);
        QVERIFY(p->offloadOptimizerState);
        QVERIFY(!p->offloadParameters);
        QCOMPARE(p->gradientAccumulationSteps, 2);
        QCOMPARE(p->gradientClipping, 0.5);
        QVERIFY(p->zero3Save16BitModel);

        const std::string nvme = write("nvme.json", R"({"zero_optimization": {"stage": 3,
            "offload_param": {"device": "nvme", "nvme_path": "/nvme"}}})");
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", nvme}}),
                      "zero_optimization.offload_param.device=nvme");
        const std::string optimizer = write("opt.json", R"({"optimizer": {"type": "AdamW"}})");
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", optimizer}}), "optimizer=\"AdamW\"");
        const std::string broken = write("broken.json", "{\"zero_optimization\": ");
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", broken}}), "broken.json");
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", dir.filePath("missing.json").toStdString()}}),
                      "missing.json");
        // Accelerate's guard: a value from the accelerate config next to a JSON file is an error.
        expectRefused(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", good},
                                 {"ACCELERATE_CONFIG_DS_FIELDS", "zero_stage,deepspeed_config_file"}}),
                      "zero_stage is set next to deepspeed_config_file");
    }

    // Regression (hardening round 3): the DeepSpeed file was read with std::ifstream and nlohmann's
    // throwing accessors. A 100,000-deep value crashed (SIGSEGV in the message's dump()), a block of
    // the wrong type aborted (uncaught type_error), a FIFO blocked forever, a 200 MB file took
    // gigabytes, and 4294967299 / 4294967297 were read as 3 / 1 (get<int>() wraps).
    void deepSpeedJsonHostileInputsAreRefused()
    {
        QTemporaryDir dir;
        int count = 0;
        const auto refused = [&](const QByteArray &json, const QString &needle) {
            const QString name = QStringLiteral("ds%1.json").arg(count++);
            QFile file(dir.filePath(name));
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(json);
            file.close();
            auto result = plan(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", dir.filePath(name).toStdString()}}));
            QVERIFY2(!result, qPrintable(name + " accepted, expected " + needle));
            // The DeepSpeed file is named, not the Accelerate config that points to it.
            QCOMPARE(QString::fromStdString(result.error().context), dir.filePath(name));
            QVERIFY2(QString::fromStdString(result.error().message).contains(needle),
                     qPrintable(QString::fromStdString(result.error().toString())));
        };
        const QByteArray deep = "{\"pipeline\": " + QByteArray(100000, '[') + QByteArray(100000, ']') + "}";
        refused(deep, "nested deeper than 64 levels");
        const QByteArray deepStage =
            "{\"zero_optimization\": {\"stage\": " + QByteArray(100000, '[') + QByteArray(100000, ']') + "}}";
        refused(deepStage, "nested deeper than 64 levels");
        refused(R"({"optimizer": []})", "optimizer=[]: DeepSpeed's own optimizer");
        refused(R"({"scheduler": 7})", "scheduler=7: DeepSpeed's own optimizer");
        refused(R"({"zero_optimization": []})", "zero_optimization=[]: expected an object of settings");
        refused(R"({"zero_optimization": {"offload_optimizer": "cpu"}})",
                "zero_optimization.offload_optimizer=\"cpu\": expected an object of settings");
        refused(R"({"zero_optimization": {"stage": 4294967299}})", "zero_optimization.stage=4294967299: expected 0");
        refused(R"({"zero_optimization": {"stage": 2.0}})", "zero_optimization.stage=2.0: expected 0");
        refused(R"({"gradient_accumulation_steps": 4294967297})", "gradient_accumulation_steps=4294967297: expected a "
                                                                  "whole number from 1 to 2147483647");
        refused(R"({"gradient_accumulation_steps": 18446744073709551615})", "gradient_accumulation_steps=");
        refused(R"({"gradient_clipping": 1e999})", "not valid JSON: number overflow parsing '1e999'");
        refused(R"({"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": "yes"}})",
                "zero_optimization.stage3_gather_16bit_weights_on_model_save=\"yes\": expected true or false");
        refused("[1, 2]", "expected a JSON object at the top; got [1,2]");
        // Over the size limit: refused by its size, before it is read.
        refused("{\"x\": \"" + QByteArray(1 << 20, 'x') + "\"}", "file too large: 1048585 bytes (the limit for this "
                                                                 "file is 1048576 bytes)");
        // A FIFO in place of the file: refused at once (a reader that waited for a writer would
        // hang here until the test's time limit).
        const std::string fifo = dir.filePath("fifo.json").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        const auto fromFifo = plan(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", fifo}}));
        QVERIFY(!fromFifo);
        QCOMPARE(fromFifo.error().toString(), fifo + ": is a FIFO (named pipe), expected a regular file");
        // null blocks read as absent (DeepSpeed's defaults).
        QFile file(dir.filePath("nulls.json"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(R"({"zero_optimization": {"stage": 1, "offload_optimizer": null}})");
        file.close();
        auto nulls = plan(deepspeed({{"ACCELERATE_DEEPSPEED_CONFIG_FILE", dir.filePath("nulls.json").toStdString()}}));
        QVERIFY2(nulls, nulls ? "" : nulls.error().toString().c_str());
        QCOMPARE(nulls->stage, 1);
    }

    void divideFactorsAsPyTorchComputesThem()
    {
        // FSDP1's values for W = 2, 3, 4, 6, 8, 12, 16.
        const std::vector<std::tuple<int, double, double>> expected{{2, 2, 1}, {3, 2, 1.5}, {4, 2, 2}, {6, 4, 1.5},
                                                                    {8, 4, 2}, {12, 4, 3},  {16, 4, 4}};
        for (auto [world, pre, post] : expected) {
            const DivideFactors f = fsdpDivideFactors(world);
            QCOMPARE(f.pre, pre);
            QCOMPARE(f.post, post);
        }
        auto fsdp2 = plan(fsdp({{"FSDP_VERSION", "2"}}));
        QCOMPARE(fsdp2->divideFactors(4).pre, 1.0);
        QCOMPARE(fsdp2->divideFactors(4).post, 4.0);
        auto zero = plan(deepspeed());
        QCOMPARE(zero->divideFactors(4).pre, 4.0);
        QCOMPARE(zero->divideFactors(4).post, 1.0);
        QCOMPARE(zero->divideFactors(1).pre, 1.0);
    }

    void predictedMemoryPerStage()
    {
        // 1000 fp32 parameters, AdamW (2 states), 4 ranks: DDP 4 x 4000 bytes per rank.
        const auto predict = [](const Vars &vars, int world = 4, int local = 4) {
            return plan(vars)->predictMemory(1000, 4, 2, world, local);
        };
        const TrainingMemory ddp = predict({});
        QCOMPARE(ddp.total(), int64_t(16000));
        const TrainingMemory z1 = predict(deepspeed({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "1"}}));
        QCOMPARE(z1.parameters, int64_t(5000));
        QCOMPARE(z1.gradients, int64_t(4000));
        QCOMPARE(z1.optimizerState, int64_t(2000));
        const TrainingMemory z2 = predict(deepspeed({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "2"}}));
        QCOMPARE(z2.total(), int64_t(5000 + 1000 + 2000));
        const TrainingMemory z3 = predict(fsdp());
        QCOMPARE(z3.total(), ddp.total() / 4);
        // Hybrid on 2 machines of 2: shards in halves.
        const TrainingMemory hybrid = predict(fsdp({{"FSDP_SHARDING_STRATEGY", "HYBRID_SHARD"}}), 4, 2);
        QCOMPARE(hybrid.total(), ddp.total() / 2);
        // One process: nothing to shard.
        QCOMPARE(predict(fsdp(), 1, 1).total(), ddp.total());
        // Uneven: 1001 parameters on 4 ranks keep 251 each.
        QCOMPARE(plan(fsdp())->predictMemory(1001, 4, 2, 4, 4).parameters, int64_t(251 * 4));
    }

    void hybridNeedsEqualMachines()
    {
        auto p = plan(fsdp({{"FSDP_SHARDING_STRATEGY", "HYBRID_SHARD"}}));
        QVERIFY(p->checkTopology(8, 4));
        auto bad = p->checkTopology(6, 4);
        QVERIFY(!bad);
        QVERIFY(QString::fromStdString(bad.error().message).contains("LOCAL_WORLD_SIZE=4"));
        QVERIFY(QString::fromStdString(p->describe()).contains("replicated across machines"));
    }

    // HSDP: FSDP2 with parallelism_config dp_replicate_size shards over dp_shard = the data ranks /
    // dp_replicate_size, the replicas holding the same chunks.
    void hybridShardingFromParallelismConfig()
    {
        const Vars hsdp = fsdp({{"FSDP_VERSION", "2"},
                                {"ACCELERATE_USE_PARALLELISM_CONFIG", "true"},
                                {"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "2"}});
        auto p = plan(hsdp);
        QVERIFY(p);
        QCOMPARE(p->dataParallelReplicateSize, 2);
        const DeviceMesh mesh = DeviceMesh::forPlan(*p, 4, 4);
        QCOMPARE(mesh.describe(), std::string("dp_replicate 2 x dp_shard 2"));
        QCOMPARE(mesh.group(MeshDim::DpShard, 3), (std::vector<int>{2, 3}));
        QCOMPARE(mesh.group(MeshDim::DpReplicate, 3), (std::vector<int>{1, 3}));
        QVERIFY(p->checkTopology(4, 4));
        // Each rank holds half the model on 4 ranks, as FSDP2 on 2.
        QCOMPARE(p->predictMemory(1000, 4, 2, 4, 4).parameters, int64_t(500 * 4));
        Vars tp = hsdp;
        tp["PARALLELISM_CONFIG_TP_SIZE"] = "2";
        QCOMPARE(DeviceMesh::forPlan(*plan(tp), 8, 8).describe(), std::string("dp_replicate 2 x dp_shard 2 x tp 2"));
        // Without the flag Accelerate reads no size; a size that does not divide the data ranks is refused.
        Vars off = hsdp;
        off["ACCELERATE_USE_PARALLELISM_CONFIG"] = "false";
        QCOMPARE(DeviceMesh::forPlan(*plan(off), 4, 4).describe(), std::string("dp_shard 4"));
        Vars three = hsdp;
        three["PARALLELISM_CONFIG_DP_REPLICATE_SIZE"] = "3";
        auto refused = plan(three)->checkTopology(4, 4);
        QVERIFY(!refused);
        QVERIFY2(refused.error().message.find("parallelism_config_dp_replicate_size 3 does not divide the job's 4 "
                                              "data-parallel process(es)") != std::string::npos,
                 refused.error().message.c_str());
        // Read under FSDP2 only: ZeRO-3 with the size still shards over every data rank.
        Vars zero3 = deepspeed({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"},
                                {"ACCELERATE_USE_PARALLELISM_CONFIG", "true"},
                                {"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "4"}});
        QCOMPARE(DeviceMesh::forPlan(*plan(zero3), 4, 4).describe(), std::string("dp_shard 4"));
        // FSDP1's HYBRID_SHARD replicates by machine (nativesettings refuses dp_shard_size without FSDP2).
        Vars fsdp1 = fsdp({{"FSDP_SHARDING_STRATEGY", "HYBRID_SHARD"},
                           {"ACCELERATE_USE_PARALLELISM_CONFIG", "true"},
                           {"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "4"}});
        QCOMPARE(DeviceMesh::forPlan(*plan(fsdp1), 4, 2).describe(), std::string("dp_replicate 2 x dp_shard 2"));
    }

    // The strategies' groups come from the device mesh: DDP replicates over every rank, ZeRO / FSDP
    // shard over every rank, hybrid sharding shards among a machine's ranks (ranks r = machine *
    // local + i) and replicates across machines; torch's dimension order, the last fastest.
    void deviceMeshGroupsFromThePlan()
    {
        const DeviceMesh ddp = DeviceMesh::forPlan(*plan({}), 4, 4);
        QCOMPARE(ddp.size(MeshDim::DpReplicate), 4);
        QCOMPARE(ddp.size(MeshDim::DpShard), 1);
        QCOMPARE(ddp.group(MeshDim::DpReplicate, 2), (std::vector<int>{0, 1, 2, 3}));
        QCOMPARE(ddp.describe(), std::string("dp_replicate 4"));
        const DeviceMesh zero3 =
            DeviceMesh::forPlan(*plan(deepspeed({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"}})), 4, 2);
        QCOMPARE(zero3.size(MeshDim::DpShard), 4);
        QCOMPARE(zero3.group(MeshDim::DpShard, 3), (std::vector<int>{0, 1, 2, 3}));
        QCOMPARE(zero3.coordinate(MeshDim::DpShard, 3), 3);
        const DeviceMesh hybrid = DeviceMesh::forPlan(*plan(fsdp({{"FSDP_SHARDING_STRATEGY", "HYBRID_SHARD"}})), 8, 4);
        QCOMPARE(hybrid.describe(), std::string("dp_replicate 2 x dp_shard 4"));
        QCOMPARE(hybrid.worldSize(), 8);
        QCOMPARE(hybrid.group(MeshDim::DpShard, 6), (std::vector<int>{4, 5, 6, 7}));
        QCOMPARE(hybrid.coordinate(MeshDim::DpShard, 6), 2);
        QCOMPARE(hybrid.group(MeshDim::DpReplicate, 6), (std::vector<int>{2, 6}));
        QCOMPARE(hybrid.coordinate(MeshDim::DpReplicate, 6), 1);
        QCOMPARE(hybrid.groupName(MeshDim::DpShard, 6), std::string("dp_shard/4"));
        QCOMPARE(hybrid.groupName(MeshDim::DpReplicate, 6), std::string("dp_replicate/2"));
        QCOMPARE(hybrid.groupName(MeshDim::DpReplicate, 2), hybrid.groupName(MeshDim::DpReplicate, 6));
        // Hybrid on one machine shards over every rank.
        QCOMPARE(DeviceMesh::forPlan(*plan(fsdp({{"FSDP_SHARDING_STRATEGY", "HYBRID_SHARD"}})), 4, 4).describe(),
                 std::string("dp_shard 4"));
        // A full mesh: tp varies fastest, then cp, dp_shard, dp_replicate.
        const DeviceMesh full({2, 2, 2, 2});
        QCOMPARE(full.group(MeshDim::Tp, 5), (std::vector<int>{4, 5}));
        QCOMPARE(full.group(MeshDim::Cp, 5), (std::vector<int>{5, 7}));
        QCOMPARE(full.group(MeshDim::DpShard, 5), (std::vector<int>{1, 5}));
        QCOMPARE(full.group(MeshDim::DpReplicate, 5), (std::vector<int>{5, 13}));
    }

    // parallelism_config tp_size: the tp dimension last (ranks 0 and 1 one tp group), the data-parallel
    // dimension (DDP or FSDP2) over the rest; the ranks of a tp group read the same samples. Read only
    // with ACCELERATE_USE_PARALLELISM_CONFIG; a size that does not divide the world is refused naming it.
    void tensorParallelMeshFromTheEnvironment()
    {
        const Vars tp{{"ACCELERATE_USE_PARALLELISM_CONFIG", "true"}, {"PARALLELISM_CONFIG_TP_SIZE", "2"}};
        const DeviceMesh ddp = DeviceMesh::forPlan(*plan(tp), 4, 4);
        QCOMPARE(ddp.describe(), std::string("dp_replicate 2 x tp 2"));
        QCOMPARE(ddp.group(MeshDim::Tp, 3), (std::vector<int>{2, 3}));
        QCOMPARE(ddp.group(MeshDim::DpReplicate, 3), (std::vector<int>{1, 3}));
        QCOMPARE(ddp.dataParallelSize(), 2);
        QCOMPARE(ddp.dataParallelIndex(0), 0);
        QCOMPARE(ddp.dataParallelIndex(1), 0);
        QCOMPARE(ddp.dataParallelIndex(2), 1);
        Vars fsdp2 = fsdp({{"FSDP_VERSION", "2"}});
        fsdp2.insert(tp.begin(), tp.end());
        QCOMPARE(DeviceMesh::forPlan(*plan(fsdp2), 4, 4).describe(), std::string("dp_shard 2 x tp 2"));
        QCOMPARE(DeviceMesh::forPlan(*plan(tp), 2, 2).describe(), std::string("tp 2"));
        QCOMPARE(DeviceMesh::forPlan(*plan(tp), 2, 2).dataParallelSize(), 1);
        // Without the switch the size is not read (as Accelerate).
        QCOMPARE(plan({{"PARALLELISM_CONFIG_TP_SIZE", "2"}})->tensorParallelSize, 1);
        auto odd = plan(Vars{{"ACCELERATE_USE_PARALLELISM_CONFIG", "true"}, {"PARALLELISM_CONFIG_TP_SIZE", "3"}});
        auto refused = odd->checkTopology(4, 4);
        QVERIFY(!refused);
        QVERIFY2(QString::fromStdString(refused.error().message)
                     .contains("parallelism_config_tp_size 3 does not divide the job's 4 process(es)"),
                 refused.error().message.c_str());
        Vars hybrid = fsdp({{"FSDP_SHARDING_STRATEGY", "HYBRID_SHARD"}});
        hybrid.insert(tp.begin(), tp.end());
        QVERIFY(!plan(hybrid)->checkTopology(8, 4));
        expectRefused(Vars{{"ACCELERATE_USE_PARALLELISM_CONFIG", "true"}, {"PARALLELISM_CONFIG_TP_SIZE", "two"}},
                      "PARALLELISM_CONFIG_TP_SIZE=two: expected a whole number of ranks");
    }
};

QTEST_GUILESS_MAIN(tst_ShardingPlan)
#include "tst_shardingplan.moc"
