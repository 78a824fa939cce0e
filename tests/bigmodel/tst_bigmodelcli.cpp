// The big-model commands of the real `accel` binary on generated checkpoints and configs:
// estimate-memory, device-map and inspect, their JSON schemas, exit codes and error messages.
#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"
#include "tests/helpers/testsupport.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>

using namespace accel;
using namespace accel::bigmodel;

namespace {

const char *kTinyLlama = R"({"model_type":"llama","hidden_size":16,"intermediate_size":32,"num_attention_heads":2,
  "num_key_value_heads":1,"num_hidden_layers":4,"vocab_size":64,"max_position_embeddings":128,"torch_dtype":"float32"})";

nlohmann::json parseJson(const QString &text)
{
    return nlohmann::json::parse(text.toStdString(), nullptr, false);
}

} // namespace

class tst_BigModelCli : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_model;

private Q_SLOTS:
    void initTestCase()
    {
        // A tiny Llama checkpoint in two shards, written from the analytic structure.
        m_model = m_dir.path() + "/tiny";
        const std::string folder = m_model.toStdString();
        std::filesystem::create_directories(folder);
        auto config = parseModelConfig(kTinyLlama, "config.json");
        QVERIFY(config);
        const ModelStructure s = buildModelStructure(*config);
        static std::string zeros(1 << 16, '\0');
        std::vector<TensorToWrite> tensors;
        for (const ModelTensor &t : s.tensors()) {
            if (!t.buffer)
                tensors.push_back({t.name, t.dtype, t.shape, zeros.data(), t.elements * 4});
        }
        QVERIFY(writeShardedSafetensors(folder, tensors, 12000));
        QVERIFY(fileutil::writeFileAtomic(folder + "/config.json", kTinyLlama));
    }

    void estimateMemoryTable()
    {
        const auto r = test::runAccel({"estimate-memory", m_model});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("Memory Usage for loading `tiny`"), qPrintable(r.out));
        QVERIFY(r.out.contains(QStringLiteral("│ dtype │Largest Layer│Total Size│Training using Adam│")));
        // Default dtypes, as Accelerate: float32, float16, int8, int4.
        QVERIFY(r.out.contains(QStringLiteral("│float32│")) && r.out.contains(" int4 ") && !r.out.contains("bfloat16"));
        QVERIFY(r.out.contains("N/A"));
        QVERIFY(r.out.contains("Inference with batch 1, context 128"));
    }

    void estimateMemoryJson()
    {
        // nargs-style dtype list followed by the MODEL positional.
        const auto r = test::runAccel({"estimate-memory", "--dtypes", "float32", "bfloat16", m_model + "/config.json",
                                       "--json", "--batch", "2", "--context", "10"});
        QCOMPARE(r.exitCode, 0);
        const auto j = parseJson(r.out);
        QCOMPARE(j["schema"].get<std::string>(), std::string("accel.memory-estimate"));
        QCOMPARE(j["version"].get<int>(), 1);
        // Parameters: embed 64·16, lm_head 64·16, 4 layers × (q 256 + k 128 + v 128 + o 256 +
        // mlp 3·512 + norms 32) = 4 × 2336, final norm 16 → 1024 + 1024 + 9344 + 16 = 11408.
        QCOMPARE(j["parameters"].get<uint64_t>(), uint64_t(11408));
        // Accelerate's figures are of the base model (no lm_head, 1024 parameters) and include the
        // two rotary buffers (4 floats each); the inference weights keep the head.
        QCOMPARE(j["float32_total_bytes"].get<uint64_t>(), uint64_t(10384 * 4 + 32));
        QCOMPARE(j["base_module"].get<std::string>(), std::string("model"));
        QCOMPARE(j["float32_full_model_bytes"].get<uint64_t>(), uint64_t(11408 * 4 + 32));
        QCOMPARE(j["rows"].size(), size_t(2));
        QCOMPARE(j["rows"][1]["dtype"].get<std::string>(), std::string("bfloat16"));
        QCOMPARE(j["rows"][1]["training_adam_bytes"].get<uint64_t>(), uint64_t(2 * (10384 * 4 + 32)));
        QCOMPARE(j["rows"][1]["weights_bytes"].get<uint64_t>(), uint64_t((11408 * 4 + 32) / 2));
        // KV cache: 2 × 10 tokens × 4 layers × 2 (k, v) × 1 head × 8 dims × 2 bytes = 2560.
        QCOMPARE(j["rows"][1]["kv_cache_bytes"].get<uint64_t>(), uint64_t(2560));
    }

    // --config_file: per-rank bytes under the config's strategy, from the runtime's ShardingPlan
    // (parameters P = 11408 elements; Adam: 2 state tensors per parameter).
    void estimateMemoryPerRankUnderAConfig()
    {
        const QString fsdp = m_dir.filePath("fsdp.yaml");
        QVERIFY(fileutil::writeFileAtomic(fsdp.toStdString(),
                                          "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\n"
                                          "fsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_version: 1\n"
                                          "machine_rank: 0\nmixed_precision: 'no'\nnum_machines: 1\n"
                                          "num_processes: 4\nuse_cpu: true\n"));
        const QString zero2 = m_dir.filePath("zero2.yaml");
        QVERIFY(fileutil::writeFileAtomic(zero2.toStdString(),
                                          "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                          "deepspeed_config:\n  zero_stage: 2\nmachine_rank: 0\n"
                                          "mixed_precision: 'no'\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\n"));
        const QString ddp = m_dir.filePath("ddp.yaml");
        QVERIFY(fileutil::writeFileAtomic(ddp.toStdString(),
                                          "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\n"
                                          "machine_rank: 0\nmixed_precision: 'no'\nnum_machines: 1\n"
                                          "num_processes: 2\nuse_cpu: true\n"));
        const uint64_t p = 11408;
        const auto perRank = [this](const QString &config, const QStringList &extra) {
            QStringList args = {"estimate-memory", m_model, "--dtypes", "float32", "--json", "--config_file", config};
            const auto r = test::runAccel(args + extra);
            return std::make_pair(r.exitCode, parseJson(r.out)["per_rank_training"]);
        };
        // FULL_SHARD on 4 ranks: everything is a quarter.
        auto [code, full] = perRank(fsdp, {});
        QCOMPARE(code, 0);
        QCOMPARE(full["world_size"].get<int>(), 4);
        QVERIFY(full["strategy"].get<std::string>().find("FULL_SHARD") != std::string::npos);
        QCOMPARE(full["rows"][0]["parameters_bytes"].get<uint64_t>(), p / 4 * 4);
        QCOMPARE(full["rows"][0]["optimizer_state_bytes"].get<uint64_t>(), 2 * (p / 4 * 4));
        // ZeRO-2 on 4 ranks (--num_processes overrides the config's 2): whole parameters plus the
        // rank's chunk that the optimizer steps, gradients and state sharded.
        auto [code2, zero] = perRank(zero2, {"--num_processes", "4"});
        QCOMPARE(code2, 0);
        QCOMPARE(zero["world_size"].get<int>(), 4);
        QCOMPARE(zero["rows"][0]["parameters_bytes"].get<uint64_t>(), p * 4 + p / 4 * 4);
        QCOMPARE(zero["rows"][0]["gradients_bytes"].get<uint64_t>(), p / 4 * 4);
        // DDP: every rank holds everything (Accelerate's training figure without its buffers).
        auto [code3, plain] = perRank(ddp, {});
        QCOMPARE(code3, 0);
        QCOMPARE(plain["rows"][0]["total_bytes"].get<uint64_t>(), 4 * p * 4);
        // Tensor parallelism on 2 ranks (FSDP2 over dp_shard 1): each rank holds its half of q/k/v, o,
        // gate, up and down, the embeddings, norms and head whole; never the whole model per rank.
        const QString tp = m_dir.filePath("tp.yaml");
        QVERIFY(fileutil::writeFileAtomic(tp.toStdString(),
                                          "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\n"
                                          "fsdp_config:\n  fsdp_version: 2\nparallelism_config:\n"
                                          "  parallelism_config_tp_size: 2\nmachine_rank: 0\nmixed_precision: 'no'\n"
                                          "num_machines: 1\nnum_processes: 2\nuse_cpu: true\n"));
        // This model's one key/value head does not divide: refused by name, as the run refuses it.
        auto r = test::runAccel({"estimate-memory", m_model, "--config_file", tp});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("parallelism_config_tp_size 2: num_attention_heads 2, num_key_value_heads 1 and "
                                "intermediate_size 32 must each divide by tp_size"),
                 qPrintable(r.err));
        // 2 key/value heads: per layer q, k, v and o 16 x 16, gate, up and down 32 x 16 (2560).
        const QString splittable = m_dir.filePath("tp-config.json");
        QVERIFY(fileutil::writeFileAtomic(splittable.toStdString(),
                                          R"({"model_type":"llama","hidden_size":16,"intermediate_size":32,
          "num_attention_heads":2,"num_key_value_heads":2,"num_hidden_layers":4,"vocab_size":64})"));
        r = test::runAccel({"estimate-memory", splittable, "--dtypes", "float32", "--json", "--config_file", tp});
        QCOMPARE(r.exitCode, 0);
        const nlohmann::json answer = parseJson(r.out);
        const uint64_t whole = answer["parameters"].get<uint64_t>();
        const nlohmann::json split = answer["per_rank_training"];
        const uint64_t perTp = whole - 4 * 2560 / 2;
        qInfo("tp 2: %llu of %llu parameters per rank", (unsigned long long)perTp, (unsigned long long)whole);
        QCOMPARE(split["mesh"]["tp"].get<int>(), 2);
        QCOMPARE(split["mesh"]["dp_shard"].get<int>(), 1);
        QCOMPARE(split["mesh"]["description"].get<std::string>(), std::string("tp 2"));
        QCOMPARE(split["tensor_parallel"]["split_parameters"].get<uint64_t>(), uint64_t(4 * 2560));
        QCOMPARE(split["tensor_parallel"]["parameters_per_rank"].get<uint64_t>(), perTp);
        QCOMPARE(split["rows"][0]["parameters_bytes"].get<uint64_t>(), perTp * 4);
        QCOMPARE(split["rows"][0]["total_bytes"].get<uint64_t>(), perTp * 16);
        QCOMPARE(split["rows"][0]["ddp"]["total_bytes"].get<uint64_t>(), whole * 16);
        QVERIFY(split["notes"].dump().find("activations are not predicted") != std::string::npos);
        r = test::runAccel({"estimate-memory", splittable, "--config_file", tp});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("mesh: tp 2\n"), qPrintable(r.out));
        // A family without a tensor-parallel plan is refused with the runtime's words.
        const QString gpt2 = m_dir.filePath("gpt2-config.json");
        QVERIFY(fileutil::writeFileAtomic(gpt2.toStdString(), R"({"model_type":"gpt2","n_embd":16,"n_head":2,
          "n_layer":2,"vocab_size":64,"n_positions":32})"));
        r = test::runAccel({"estimate-memory", gpt2, "--config_file", tp});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("parallelism_config_tp_size 2: model_type 'gpt2' has no tensor-parallel plan"),
                 qPrintable(r.err));
        // Bad input names what is wrong and exits 2.
        r = test::runAccel({"estimate-memory", m_model, "--config_file", m_dir.filePath("missing.yaml")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("missing.yaml"), qPrintable(r.err));
        r = test::runAccel({"estimate-memory", m_model, "--num_processes", "2"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--num_processes needs --config_file"), qPrintable(r.err));
    }

    // Regression (hardening round 3): a DeepSpeed file of the wrong shape aborted estimate-memory
    // (SIGABRT, uncaught type_error) or crashed it (SIGSEGV, 100,000 levels deep), and errors named
    // the Accelerate config instead of the DeepSpeed file.
    void estimateMemoryNamesTheBadDeepSpeedFile()
    {
        const QString ds = m_dir.filePath("ds_bad.json");
        const QString config = m_dir.filePath("ds_file.yaml");
        QVERIFY(fileutil::writeFileAtomic(config.toStdString(),
                                          "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                          "deepspeed_config:\n  deepspeed_config_file: " +
                                              ds.toStdString() +
                                              "\nmachine_rank: 0\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\n"));
        const struct {
            std::string json;
            int exitCode; // 2 bad input, 1 a setting the runtime does not implement
            const char *message;
        } cases[] = {
            {R"({"zero_optimization": {"offload_optimizer": "cpu"}})", 2,
             ": zero_optimization.offload_optimizer=\"cpu\": expected an object of settings"},
            {R"({"optimizer": []})", 1, ": optimizer=[]: DeepSpeed's own optimizer"},
            {"{\"pipeline\": " + std::string(100000, '[') + std::string(100000, ']') + "}", 2,
             ": the DeepSpeed config nested deeper than 64 levels"},
        };
        for (const auto &c : cases) {
            QVERIFY(fileutil::writeFileAtomic(ds.toStdString(), c.json));
            const auto r = test::runAccel({"estimate-memory", m_model, "--config_file", config});
            QVERIFY2(!r.crashed, qPrintable(r.err));
            QCOMPARE(r.exitCode, c.exitCode);
            QVERIFY2(r.err.contains(ds + c.message), qPrintable(r.err));
        }
    }

    // MODEL as a gpt/mlp job file: the model accel-worker builds from it, counted from the job and
    // (mlp) the data file's header and targets, with the recipe's optimizer.
    void estimateMemoryOfARecipeJob()
    {
        const std::string folder = m_dir.path().toStdString();
        // inputs [6, 5] float32, targets [6] int64 with 3 as the largest class id.
        const std::vector<float> inputs(30, 0.5f);
        const std::vector<int64_t> targets{0, 3, 1, 2, 0, 1};
        QVERIFY(writeSafetensors(folder + "/data.safetensors", {{"inputs", DType::F32, {6, 5}, inputs.data(), 30 * 4},
                                                                {"targets", DType::I64, {6}, targets.data(), 6 * 8}}));
        const auto estimate = [this](const std::string &name, const std::string &yaml, const QStringList &extra = {}) {
            const QString job = m_dir.filePath(QString::fromStdString(name));
            if (!fileutil::writeFileAtomic(job.toStdString(), yaml))
                qFatal("cannot write %s", qPrintable(job));
            return test::runAccel(QStringList{"estimate-memory", job, "--json"} + extra);
        };
        // Linear(5, 8), Linear(8, 4), Linear(4, 4 classes): 48 + 36 + 20 parameters; SGD with
        // momentum keeps one buffer per parameter; one process without a config.
        auto r = estimate("mlp.yaml", "recipe: mlp\nmlp: {data: data.safetensors, hidden: [8, 4]}\n");
        QCOMPARE(r.exitCode, 0);
        auto j = parseJson(r.out);
        QCOMPARE(j["recipe"].get<std::string>(), std::string("mlp"));
        QCOMPARE(j["shape"].get<std::string>(), std::string("5 -> 8 -> 4 -> 4"));
        QCOMPARE(j["parameters"].get<uint64_t>(), uint64_t(104));
        auto row = j["per_rank_training"]["rows"][0];
        QCOMPARE(j["per_rank_training"]["optimizer_states"].get<int>(), 1);
        QCOMPARE(row["parameters_bytes"].get<uint64_t>(), uint64_t(104 * 4));
        QCOMPARE(row["optimizer_state_bytes"].get<uint64_t>(), uint64_t(104 * 4));
        QCOMPARE(row["ddp"]["total_bytes"].get<uint64_t>(), row["total_bytes"].get<uint64_t>());
        // mlp.classes wins over the targets; AdamW keeps two moments; SGD without momentum none.
        r = estimate("mlp7.yaml", "recipe: mlp\nmlp: {data: data.safetensors, hidden: [8, 4], classes: 7, "
                                  "optimizer: adamw}\n");
        QCOMPARE(r.exitCode, 0);
        j = parseJson(r.out);
        QCOMPARE(j["parameters"].get<uint64_t>(), uint64_t(48 + 36 + 35));
        QCOMPARE(j["per_rank_training"]["rows"][0]["optimizer_state_bytes"].get<uint64_t>(), uint64_t(119 * 4 * 2));
        r = estimate("sgd0.yaml", "recipe: mlp\nmlp: {data: data.safetensors, hidden: [8, 4], momentum: 0}\n");
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(parseJson(r.out)["per_rank_training"]["rows"][0]["optimizer_state_bytes"].get<uint64_t>(),
                 uint64_t(0));
        // gpt, n_embd E = 8, n_layer 1, block_size 16: embeddings (256 + 16) E, a block of
        // 12 E^2 + 13 E, the final LayerNorm 2 E; the head is tied to the token embedding. Under
        // ZeRO-2 on 2 processes (the config's num_processes).
        const QString zero2 = m_dir.filePath("zero2-job.yaml");
        QVERIFY(fileutil::writeFileAtomic(zero2.toStdString(),
                                          "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                          "deepspeed_config:\n  zero_stage: 2\nmachine_rank: 0\n"
                                          "mixed_precision: 'no'\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\n"));
        r = estimate("gpt.yaml", "recipe: gpt\nmodel: {n_layer: 1, n_head: 2, n_embd: 8, block_size: 16}\n",
                     {"--config_file", zero2});
        QCOMPARE(r.exitCode, 0);
        j = parseJson(r.out);
        const uint64_t p = (256 + 16) * 8 + (12 * 64 + 13 * 8) + 2 * 8;
        QCOMPARE(j["parameters"].get<uint64_t>(), p);
        row = j["per_rank_training"]["rows"][0];
        QCOMPARE(row["parameters_bytes"].get<uint64_t>(), p * 4 + p / 2 * 4);
        QCOMPARE(row["gradients_bytes"].get<uint64_t>(), p / 2 * 4);
        QCOMPARE(row["ddp"]["total_bytes"].get<uint64_t>(), 4 * p * 4);
        // Bad jobs exit 2 and name the key.
        r = estimate("ts.yaml", "recipe: torchscript\ntorchscript: {module: m.pt}\n");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("recipe:") && r.err.contains("torchscript"), qPrintable(r.err));
        r = estimate("nodata.yaml", "recipe: mlp\n");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("mlp.data"), qPrintable(r.err));
        r = estimate("odd.yaml", "recipe: gpt\nmodel: {n_head: 3, n_embd: 8}\n");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("model.n_embd"), qPrintable(r.err));
    }

    void deviceMapJson()
    {
        // 4 decoder layers of 2336 floats = 9344 bytes each; budgets force a split over 0, 1 and cpu.
        const auto r = test::runAccel(
            {"device-map", m_model, "--max-memory", "0=20000,1=20000,cpu=1GB", "--strategy", "sequential", "--json"});
        QCOMPARE(r.exitCode, 0);
        const auto j = parseJson(r.out);
        QCOMPARE(j["schema"].get<std::string>(), std::string("accel.device-map"));
        QCOMPARE(j["no_split"], nlohmann::json::array({"LlamaDecoderLayer"}));
        const auto &map = j["device_map"];
        // GPU 0: 20000 - 9344 reserve leaves 10656: embed (4096) then layer 0 would need 13440 → GPU 1
        // (20000, no reserve): layers 0 and 1 (18688); layer 2 → cpu with the rest.
        QCOMPARE(map["model.embed_tokens"].get<int>(), 0);
        QCOMPARE(map["model.layers.0"].get<int>(), 1);
        QCOMPARE(map["model.layers.1"].get<int>(), 1);
        QCOMPARE(map["model.layers.2"].get<std::string>(), std::string("cpu"));
        QCOMPARE(map["lm_head"].get<std::string>(), std::string("cpu"));
        uint64_t total = 0;
        for (const auto &d : j["per_device"])
            total += d["bytes"].get<uint64_t>();
        QCOMPARE(total, j["total_bytes"].get<uint64_t>());
    }

    void deviceMapNoSplitListAndText()
    {
        const auto r = test::runAccel(
            {"device-map", "--no-split", "LlamaMLP", "LlamaAttention", m_model, "--max-memory", "cpu=1GB"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("no-split LlamaMLP LlamaAttention"), qPrintable(r.out));
        QVERIFY(r.out.contains("(whole model)"));
    }

    void deviceMapFromEnvReport()
    {
        // An `accel env --json` report (from this or another host): GPU 1 listed before GPU 0,
        // topology entries with an index but no memory are ignored, cpu from memory.available_bytes.
        const std::string report =
            R"({"schema":"accel.env","version":1,"memory":{"total_bytes":99999,"available_bytes":50000},
            "gpu":{"gpus":[{"index":1,"name":"B","memory_free_bytes":30000},{"index":0,"name":"A","memory_free_bytes":20000}],
                   "topology":{"devices":[{"index":0}]}}})";
        const std::string file = m_dir.path().toStdString() + "/env.json";
        QVERIFY(fileutil::writeFileAtomic(file, report));
        auto r = test::runAccel(
            {"device-map", m_model, "--env-json", QString::fromStdString(file), "--strategy", "sequential", "--json"});
        QCOMPARE(r.exitCode, 0);
        auto j = parseJson(r.out);
        QCOMPARE(j["budgets"],
                 nlohmann::json::parse(
                     R"([{"device":0,"bytes":20000},{"device":1,"bytes":30000},{"device":"cpu","bytes":50000}])"));
        // A single GPU from the machine gets Accelerate's 10% reserve under "auto".
        QVERIFY(fileutil::writeFileAtomic(
            file, R"({"memory":{"available_bytes":50000},"gpu":{"gpus":[{"index":0,"memory_free_bytes":20000}]}})"));
        r = test::runAccel({"device-map", m_model, "--env-json", QString::fromStdString(file), "--json"});
        QCOMPARE(r.exitCode, 0);
        j = parseJson(r.out);
        QCOMPARE(j["budgets"][0]["bytes"].get<int64_t>(), int64_t(18000));
    }

    void badInputs()
    {
        auto r = test::runAccel({"device-map", m_model, "--max-memory", "0=lots"});
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(
            r.err.trimmed(),
            QStringLiteral(
                "accel device-map: --max-memory: max_memory for 0: \"lots\" is not a memory size: use an "
                "integer number of bytes or a number with GiB, MiB, KiB (powers of 2) or GB, MB, KB (powers of 10)"));
        r = test::runAccel({"device-map", m_model, "--strategy", "greedy"});
        QCOMPARE(r.exitCode, 2);
        r = test::runAccel({"estimate-memory", m_dir.path() + "/missing"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.startsWith("accel estimate-memory: "));
        // A broken shard is named in the error.
        const std::string bad = m_dir.path().toStdString() + "/bad.safetensors";
        QVERIFY(fileutil::writeFileAtomic(bad, std::string("\x02\0\0\0\0\0\0\0{}", 10) + "xx"));
        r = test::runAccel({"inspect", QString::fromStdString(bad)});
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err.trimmed(),
                 QString::fromStdString("accel inspect: " + bad +
                                        ": the data buffer has 2 bytes but the tensors end at 0 (trailing bytes)"));
        r = test::runAccel({"device-map", "--help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("--max-memory") || r.out.contains("--max_memory"));
    }

    // Every refusal of accel device-map: exit 2, one line naming the option, the value and what is valid.
    // Regression (hardening round 3): --env_json was parsed outside the input guard, and a
    // 100,000-deep value crashed the search for GPU entries (SIGSEGV; the studio's planner runs the
    // same code). Values that do not fit a byte count were taken or wrapped silently.
    void deviceMapEnvReportIsGuarded()
    {
        const std::string file = m_dir.path().toStdString() + "/env_bad.json";
        const struct {
            std::string json;
            const char *message;
        } cases[] = {
            {"{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}",
             ": JSON nested deeper than 64 levels"},
            {R"({"gpu":{"gpus":[{"index":0,"memory_free_bytes":1e30}]}})",
             ": GPU entry with index 0 and memory_free_bytes 1e+30: expected whole numbers from 0 to "
             "9223372036854775807"},
            {R"({"gpu":{"gpus":[{"index":18446744073709551615,"memory_free_bytes":1}]}})",
             ": GPU entry with index 18446744073709551615 and memory_free_bytes 1: expected whole numbers"},
            {R"({"memory":{"available_bytes":-5}})",
             ": memory.available_bytes=-5: expected a whole number from 0 to 9223372036854775807"},
        };
        for (const auto &c : cases) {
            QVERIFY(fileutil::writeFileAtomic(file, c.json));
            const auto r = test::runAccel({"device-map", m_model, "--env_json", QString::fromStdString(file)});
            QVERIFY2(!r.crashed, qPrintable(r.err));
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains(QString::fromStdString(file) + c.message), qPrintable(r.err));
        }
    }

    void deviceMapRefusals_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QStringList>("named");
        QTest::newRow("none with classes")
            << QStringList{"--no_split", "none", "LlamaMLP", "LlamaAttention", "--max_memory", "cpu=1GB"}
            << QStringList{"--no_split: \"none\" means no class and cannot be combined with class names (got none "
                           "and LlamaMLP, LlamaAttention)"};
        QTest::newRow("classes with none") << QStringList{"--no_split", "LlamaMLP", "none", "--max_memory", "cpu=1GB"}
                                           << QStringList{"(got none and LlamaMLP)"};
        QTest::newRow("backend-qualified device")
            << QStringList{"--max_memory", "xpu:0=1GB,cpu=1GB"}
            << QStringList{"--max-memory: max_memory: device \"xpu:0\" is not recognized", "mps, cpu and disk",
                           "for xpu:0 write 0"};
        QTest::newRow("cuda device") << QStringList{"--max_memory", "cuda:1=1GB"}
                                     << QStringList{"device \"cuda:1\" is not recognized", "for cuda:1 write 1"};
        QTest::newRow("device twice") << QStringList{"--max_memory", "0=1GB,cpu=1GB,0=2GB"}
                                      << QStringList{"max_memory: device 0 is given twice"};
        QTest::newRow("not DEVICE=SIZE") << QStringList{"--max_memory", "0"}
                                         << QStringList{"\"0\" is not DEVICE=SIZE (e.g. 0=10GiB,cpu=30GiB)"};
        QTest::newRow("empty budgets") << QStringList{"--max_memory", " , "}
                                       << QStringList{"max_memory is empty (e.g. 0=10GiB,cpu=30GiB)"};
        QTest::newRow("negative GPU index")
            << QStringList{"--max_memory", "-1=1GB"} << QStringList{"device \"-1\" is not recognized"};
        QTest::newRow("budgets and report") << QStringList{"--max_memory", "cpu=1GB", "--env_json", "env.json"}
                                            << QStringList{"--max_memory and --env_json cannot be combined"};
        QTest::newRow("missing report") << QStringList{"--env_json", "missing-env.json"}
                                        << QStringList{"missing-env.json"};
        QTest::newRow("report not JSON") << QStringList{"--env_json", "not-json.txt"}
                                         << QStringList{"not-json.txt: not valid JSON"};
        QTest::newRow("dtype") << QStringList{"--dtype", "float12", "--max_memory", "cpu=1GB"}
                               << QStringList{"--dtype: ", "float12"};
        QTest::newRow("strategy") << QStringList{"--strategy", "greedy"}
                                  << QStringList{"greedy", "auto, balanced, balanced_low_0"};
        QTest::newRow("no-split class without config")
            << QStringList{"--no_split", "LlamaDecoderLayer", "--max_memory", "cpu=1GB", "@NOCONFIG"}
            << QStringList{"--no_split LlamaDecoderLayer: the model has no config.json of a known family",
                           "use --no_split none"};
    }

    void deviceMapRefusals()
    {
        QFETCH(QStringList, args);
        QFETCH(QStringList, named);
        // A copy of the checkpoint without its config.json, for the header-only case.
        const QString noConfig = m_dir.path() + "/tiny-no-config";
        if (!QFileInfo::exists(noConfig)) {
            QVERIFY(QDir().mkpath(noConfig));
            for (const QString &f : QDir(m_model).entryList({"*.safetensors*"}, QDir::Files))
                QVERIFY(QFile::copy(m_model + "/" + f, noConfig + "/" + f));
        }
        QVERIFY(fileutil::writeFileAtomic(m_dir.path().toStdString() + "/not-json.txt", "GPU 0: 80 GB"));
        QStringList full{"device-map"};
        full << (args.removeAll("@NOCONFIG") ? noConfig : m_model);
        for (const QString &a : args)
            full << (a.endsWith(".json") || a.endsWith(".txt") ? m_dir.path() + "/" + a : a);
        const auto r = test::runAccel(full);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
        QVERIFY2(r.err.startsWith("accel device-map: ") && r.err.trimmed().count('\n') == 0, qPrintable(r.err));
        for (const QString &n : named)
            QVERIFY2(r.err.contains(n), qPrintable(r.err + " lacks " + n));
    }

    // Planned from the headers alone, the map says what it could not know; with --no_split none it plans.
    void deviceMapWithoutConfigSaysWhatItCannotKnow()
    {
        const QString noConfig = m_dir.path() + "/tiny-headers-only";
        QVERIFY(QDir().mkpath(noConfig));
        for (const QString &f : QDir(m_model).entryList({"*.safetensors*"}, QDir::Files))
            QVERIFY(QFile::copy(m_model + "/" + f, noConfig + "/" + f));
        const auto r =
            test::runAccel({"device-map", noConfig, "--max_memory", "cpu=1GB", "--no_split", "none", "--json"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.err.contains("warning: no config.json of a known family: planned from the tensor names alone, "
                                "without module classes"),
                 qPrintable(r.err));
        const auto j = parseJson(r.out);
        QCOMPARE(j["no_split"], nlohmann::json::array());
        // What stderr says is in the JSON too.
        QVERIFY2(j["warnings"].dump().find("no config.json of a known family: planned from the tensor names alone") !=
                     std::string::npos,
                 j["warnings"].dump().c_str());
        // A config.json of a family nobody plans: the loader's warning, on stderr and in the JSON.
        const QString unknownFamily = m_dir.path() + "/tiny-unknown-family";
        QVERIFY(QDir().mkpath(unknownFamily));
        for (const QString &f : QDir(m_model).entryList({"*.safetensors*"}, QDir::Files))
            QVERIFY(QFile::copy(m_model + "/" + f, unknownFamily + "/" + f));
        QVERIFY(fileutil::writeFileAtomic((unknownFamily + "/config.json").toStdString(), R"({"model_type": "bert"})"));
        const auto estimate = test::runAccel({"estimate-memory", unknownFamily, "--json"});
        QCOMPARE(estimate.exitCode, 0);
        QVERIFY2(estimate.err.contains("using checkpoint names only"), qPrintable(estimate.err));
        QVERIFY2(parseJson(estimate.out)["warnings"].dump().find("using checkpoint names only") != std::string::npos,
                 estimate.out.toStdString().c_str());
        // The config's tie is unknown and the checkpoint holds an lm_head: 11408 parameters as floats.
        QCOMPARE(j["total_bytes"].get<uint64_t>(), uint64_t(11408 * 4));
        // With config.json the rotary buffers (not in the checkpoint) are counted too.
        const auto withConfig = test::runAccel({"device-map", m_model, "--max_memory", "cpu=1GB", "--json"});
        QCOMPARE(withConfig.exitCode, 0);
        QVERIFY2(!withConfig.err.contains("no config.json"), qPrintable(withConfig.err));
        QVERIFY(parseJson(withConfig.out)["total_bytes"].get<uint64_t>() > uint64_t(11408 * 4));
    }

    void inspectSharded()
    {
        const auto r = test::runAccel({"inspect", m_model, "--json", "--tensors"});
        QCOMPARE(r.exitCode, 0);
        const auto j = parseJson(r.out);
        QCOMPARE(j["schema"].get<std::string>(), std::string("accel.inspect"));
        QVERIFY(j["files"].size() > 1);
        QCOMPARE(j["family"].get<std::string>(), std::string("llama"));
        QCOMPARE(j["parameters"].get<uint64_t>(), uint64_t(11408));
        QCOMPARE(j["tensors"].size(), size_t(4 * 9 + 3));
        const auto text = test::runAccel({"inspect", m_model});
        QCOMPARE(text.exitCode, 0);
        QVERIFY(text.out.contains("LlamaDecoderLayer"));
    }
};

QTEST_GUILESS_MAIN(tst_BigModelCli)
#include "tst_bigmodelcli.moc"
