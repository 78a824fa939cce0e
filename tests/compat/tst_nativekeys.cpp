// No silent keys (docs/native-keys.md): every field of Accelerate's config dataclasses (from the
// installed package), every key of a config file, every variable `accel launch` exports and every
// key of a DeepSpeed file the plan reads has a native meaning in the one table
// (core/config/nativekeys.h), and the code refuses or notes what it says: the ranks' start-up
// check, the DeepSpeed file's keys and precision switches, NUMA pinning, the launcher's job check,
// and real `accel launch --job` runs of a tiny gpt job on 1-2 CPU ranks.
#include "tests/compat/oracle.h"
#include "tests/helpers/metricsfile.h"

#include "core/config/configschema.h"
#include "core/config/nativedeepspeed.h"
#include "core/config/nativekeys.h"
#include "core/worker/cpuaffinity.h"
#include "core/worker/nativesettings.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <map>
#include <sched.h>
#include <set>
#include <thread>

using namespace accel;
namespace native = config::native;

namespace {

const char *const kSpAlst = R"({
    "bf16": {
        "enabled": true
    },
    "zero_optimization": {
        "stage": 3
    },
    "gradient_accumulation_steps": 1,
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto",
    "seq_parallel_communication_data_type": "bf16"
})"; // Accelerate's examples/alst_ulysses_sequence_parallelism/sp-alst.ds-config.json

void writeFile(const QString &path, const QByteArray &content)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(content);
}

QString readText(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

Result<worker::NativeSettings> check(const std::map<std::string, std::string> &variables, int worldSize = 2,
                                     const std::string &jobPrecision = {})
{
    return worker::checkNativeSettings(
        [&variables](const char *name) {
            const auto it = variables.find(name);
            return it == variables.end() ? nullptr : it->second.c_str();
        },
        {worldSize, 0, worldSize}, jobPrecision);
}

QString joinedNotes(const worker::NativeSettings &settings)
{
    QStringList notes;
    for (const std::string &note : settings.notes)
        notes << QString::fromStdString(note);
    return notes.join('\n');
}

std::vector<int> allowedCpus()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (::sched_getaffinity(0, sizeof set, &set) == 0)
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &set))
                cpus.push_back(cpu);
    return cpus;
}

// The losses a run's rank 0 logged, in order.
QList<double> losses(const QString &runDir)
{
    return test::metricValues(runDir + "/metrics/rank0.jsonl", "loss");
}

} // namespace

class tst_NativeKeys : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_job;

    // A config file for `accel launch` with `body` and num_processes, on CPU ranks.
    QString config(const QString &name, const QString &body, int processes = 2)
    {
        const QString path = m_dir.filePath(name + ".yaml");
        writeFile(path, QString("compute_environment: LOCAL_MACHINE\n%1machine_rank: 0\nnum_machines: 1\n"
                                "num_processes: %2\nuse_cpu: true\n")
                            .arg(body)
                            .arg(processes)
                            .toUtf8());
        return path;
    }

    struct Launch {
        test::ProcessResult result;
        QString runDir;
        QString rankLog(int rank) const { return readText(runDir + QString("/logs/rank%1.log").arg(rank)); }
    };

    Launch launch(const QString &name, const QString &configPath, const QStringList &extra = {})
    {
        Launch launched;
        launched.runDir = m_dir.filePath("run-" + name);
        launched.result = test::runAccel(QStringList{"launch", "--config_file", configPath, "--run_dir",
                                                     launched.runDir, "--no_mirror", "--main_process_port", "0"} +
                                             extra + QStringList{"--job", m_job},
                                         240000);
        return launched;
    }

    bool haveWorker() const { return QFile::exists(test::binDir() + "/accel-worker"); }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QByteArray text;
        for (int i = 0; i < 200; ++i)
            text += "the cat sat on the mat. ";
        writeFile(m_dir.filePath("corpus.txt"), text);
        m_job = m_dir.filePath("gpt.yaml");
        writeFile(m_job, "recipe: gpt\noutput_dir: out\nseed: 3\n"
                         "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16}\n"
                         "data: {corpus: corpus.txt}\n"
                         "training: {max_steps: 4, batch_size: 4, log_every: 1, learning_rate: 0.01}\n");
    }

    // The census: every field of Accelerate's config dataclasses in the installed package has a row,
    // and every field the table names exists there.
    void everyAccelerateFieldHasANativeMeaning()
    {
        ACCEL_REQUIRE_ORACLE(python, "accelerate");
        QString error;
        const QJsonArray fields = test::runAccelerateOracle(python, {"fields"}, &error).array();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(fields.size() > 150);
        QStringList missing;
        std::set<std::string> accelerate;
        std::map<native::Verdict, int> census;
        for (const QJsonValue &field : fields) {
            const std::string name = field.toString().toStdString();
            accelerate.insert(name);
            const native::Key *key = native::findPythonField(name);
            if (!key)
                missing << field.toString();
            else
                ++census[key->verdict];
        }
        QVERIFY2(missing.isEmpty(), qPrintable("no native meaning for: " + missing.join(", ")));
        QStringList stale;
        for (const native::Section &section : native::sections())
            for (const native::Key &key : section.keys)
                for (const QString &name : QString(key.python).split(' ', Qt::SkipEmptyParts))
                    if (!accelerate.count(name.toStdString()))
                        stale << name;
        QVERIFY2(stale.isEmpty(), qPrintable("not a field of the installed Accelerate: " + stale.join(", ")));
        qInfo("Accelerate fields: %d (acted %d, refused %d, meaningless %d, Python only %d)", int(fields.size()),
              census[native::Verdict::Acted], census[native::Verdict::Refused], census[native::Verdict::Meaningless],
              census[native::Verdict::PythonOnly]);
    }

    // Every key a config file may hold (the schema's, LOCAL_MACHINE and SageMaker, every block's) has
    // a row, and every config key of the table is one.
    void everyConfigKeyHasANativeMeaning()
    {
        std::set<std::string> keys;
        for (bool sageMaker : {false, true}) {
            for (const std::string &top : config::schema::topLevelKeys(sageMaker)) {
                keys.insert(top);
                for (const std::string &inner : config::schema::blockKeys(top))
                    keys.insert(top + "." + inner);
            }
        }
        QStringList missing;
        std::map<native::Verdict, int> census;
        for (const std::string &key : keys) {
            const native::Key *row = native::findConfigKey(key);
            if (!row)
                missing << QString::fromStdString(key);
            else
                ++census[row->verdict];
        }
        QVERIFY2(missing.isEmpty(), qPrintable("no native meaning for config key(s): " + missing.join(", ")));
        for (const native::Section &section : native::sections())
            for (const native::Key &key : section.keys)
                if (*key.config)
                    QVERIFY2(keys.count(key.config), key.config);
        qInfo("config keys: %d (acted %d, refused %d, meaningless %d)", int(keys.size()),
              census[native::Verdict::Acted], census[native::Verdict::Refused], census[native::Verdict::Meaningless]);
    }

    // Every variable `accel launch` exports (its own dry run of configs that use every block) has a row.
    void everyExportedVariableHasANativeMeaning()
    {
        const QString all = config(
            "all-fsdp",
            "distributed_type: FSDP\ndebug: true\nenable_cpu_affinity: true\ngpu_ids: '0'\nmixed_precision: fp8\n"
            "dynamo_config: {dynamo_backend: INDUCTOR, dynamo_mode: max-autotune, dynamo_use_fullgraph: true, "
            "dynamo_use_dynamic: true, dynamo_use_regional_compilation: true}\n"
            "fsdp_config: {fsdp_version: 2, fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP, "
            "fsdp_transformer_layer_cls_to_wrap: Block, fsdp_backward_prefetch: BACKWARD_PRE, "
            "fsdp_state_dict_type: SHARDED_STATE_DICT, fsdp_ignored_modules: x}\n"
            "fp8_config: {backend: TE, fp8_format: HYBRID, margin: 0, interval: 1, amax_history_len: 16, "
            "amax_compute_algo: max, amax_history_length: 16, amax_compute_algorithm: max, "
            "override_linear_precision: [false, false, true], use_autocast_during_eval: true, opt_level: O1, "
            "optimization_level: O1, enable_fsdp_float8_all_gather: true, pad_inner_dim: true}\n"
            "parallelism_config: {parallelism_config_dp_shard_size: 2, parallelism_config_cp_size: 2, "
            "parallelism_config_sp_size: 2, parallelism_config_sp_seq_length: 8}\n");
        const QString megatron = config("all-megatron", "distributed_type: MEGATRON_LM\nmegatron_lm_config:\n"
                                                        "  megatron_lm_tp_degree: 2\n  megatron_lm_pp_degree: 2\n");
        const QString deepspeed =
            config("all-deepspeed", "distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                                    "  zero_stage: 3\n  gradient_clipping: 1.0\n"
                                    "  gradient_accumulation_steps: 2\n"
                                    "  offload_optimizer_device: cpu\n  offload_param_device: cpu\n"
                                    "  zero3_init_flag: true\n  zero3_save_16bit_model: true\n"
                                    "  deepspeed_moe_layer_cls_names: Block\n");
        std::set<QString> variables;
        for (const QStringList &arguments :
             {QStringList{"--config_file", all}, QStringList{"--config_file", megatron},
              QStringList{"--config_file", deepspeed}, QStringList{"--cpu", "--num_processes", "2"}}) {
            const auto plan = test::runAccel(QStringList{"launch", "--dry_run", "--json"} + arguments +
                                             QStringList{"--megatron_lm_decoder_last_pipeline_num_layers", "1",
                                                         "--megatron_lm_num_micro_batches", "2",
                                                         "--megatron_lm_recompute_granularity", "full", "train.py"});
            QVERIFY2(plan.exitCode == 0, qPrintable(arguments.join(' ') + ": " + plan.err));
            const QJsonObject object = QJsonDocument::fromJson(plan.out.toUtf8()).object();
            for (const QJsonValue &rank : object.value("ranks").toArray())
                for (const QString &name : rank.toObject().value("env").toObject().keys())
                    variables.insert(name);
        }
        QStringList missing;
        for (const QString &name : variables)
            if (!native::findVariable(name.toStdString()))
                missing << name;
        QVERIFY2(missing.isEmpty(), qPrintable("no native meaning for variable(s): " + missing.join(", ")));
        for (const char *name : {"PARALLELISM_CONFIG_TP_SIZE", "MEGATRON_LM_PP_DEGREE", "FSDP_IGNORED_MODULES",
                                 "ACCELERATE_CPU_AFFINITY", "KMP_AFFINITY", "ACCELERATE_DEEPSPEED_ZERO3_INIT"})
            QVERIFY2(variables.count(name), name);
        qInfo("variables accel launch exported in these plans: %d", int(variables.size()));
    }

    // docs/native-keys.md's tables are the table's own rendering.
    void docsListEveryKey()
    {
        const QString docs = readText(test::sourceDir() + "/docs/native-keys.md");
        QVERIFY(!docs.isEmpty());
        const QString table = QString::fromStdString(native::markdownTable());
        QVERIFY2(docs.contains(table), "docs/native-keys.md lacks the table's rendering (native::markdownTable())");
    }

    // A DeepSpeed file: every key the table knows is acted on, refused or noted; others are refused
    // by name; fp16 / bf16 decide the precision as Accelerate's DeepSpeed integration does.
    void deepSpeedFileKeys()
    {
        const auto root = nlohmann::json::parse(kSpAlst);
        auto alst = native::checkDeepSpeedFile(root, "sp-alst.ds-config.json", "no");
        QVERIFY2(alst, alst ? "" : alst.error().toString().c_str());
        QCOMPARE(alst->mixedPrecision, std::string("bf16"));
        QString notes;
        for (const std::string &note : alst->notes)
            notes += QString::fromStdString(note) + "\n";
        QVERIFY2(notes.contains("bf16.enabled is true: the job trains in bf16") &&
                     notes.contains("seq_parallel_communication_data_type=\"bf16\""),
                 qPrintable(notes));
        QVERIFY(native::checkDeepSpeedFile(root, "f", "bf16")->notes.size() == 1); // only the meaningless key

        // Every key of the table's DeepSpeed file rows, each with a value that asks for something.
        int known = 0;
        for (const native::Section &section : native::sections()) {
            for (const native::Key &key : section.keys) {
                if (!*key.json)
                    continue;
                nlohmann::json file = nlohmann::json::object();
                nlohmann::json *at = &file;
                const QStringList parts = QString(key.json).split('.');
                for (int i = 0; i < parts.size() - 1; ++i)
                    at = &(*at)[parts[i].toStdString()];
                (*at)[parts.last().toStdString()] = 12345;
                if (std::string(key.json).rfind("fp16.", 0) == 0 && std::string(key.json) != "fp16.enabled")
                    file["fp16"]["enabled"] = true;
                auto checked = native::checkDeepSpeedFile(file, "f.json", "no");
                const std::string message = checked ? std::string() : checked.error().message;
                QVERIFY2(message.find("not a DeepSpeed setting") == std::string::npos, key.json);
                if (key.verdict == native::Verdict::Refused && key.by != native::Actor::Plan &&
                    std::string(key.inert) != "*")
                    QVERIFY2(message.find(key.json) != std::string::npos, key.json);
                if (key.verdict == native::Verdict::Meaningless && std::string(key.inert) != "*") {
                    QVERIFY2(checked, key.json);
                    QVERIFY2(!checked->notes.empty() && checked->notes.back().find(key.json) != std::string::npos,
                             key.json);
                }
                ++known;
            }
        }
        QVERIFY(known > 50);

        auto unknown = native::checkDeepSpeedFile(nlohmann::json::parse(R"({"zero_optimization": {"stage": 2,
            "overlap_comm": true, "stage4_magic": 1}})"),
                                                  "z.json", "no");
        QVERIFY(!unknown);
        QVERIFY2(unknown.error().message.find("zero_optimization.stage4_magic=1: not a DeepSpeed setting") == 0,
                 unknown.error().message.c_str());
        // DeepSpeed's loss-scaler defaults differ from the runtime's: refused with fp16 on, noted with it off.
        const auto scaler = nlohmann::json::parse(R"({"fp16": {"enabled": "auto", "loss_scale_window": 1000}})");
        QVERIFY(!native::checkDeepSpeedFile(scaler, "s.json", "fp16"));
        auto off = native::checkDeepSpeedFile(scaler, "s.json", "no");
        QVERIFY(off && off->mixedPrecision == "no" && off->notes.size() == 1);
        // Contradictions with the requested precision are refused, as Accelerate does.
        const auto fp16 = nlohmann::json::parse(R"({"fp16": {"enabled": true}})");
        auto both = native::checkDeepSpeedFile(fp16, "p.json", "bf16");
        QVERIFY(!both);
        QVERIFY2(both.error().message.find("mixed precision bf16 against fp16.enabled: true") == 0,
                 both.error().message.c_str());
        QCOMPARE(native::checkDeepSpeedFile(fp16, "p.json", "no")->mixedPrecision, std::string("fp16"));
        const auto autoFile = nlohmann::json::parse(R"({"bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}})");
        QCOMPARE(native::checkDeepSpeedFile(autoFile, "a.json", "bf16")->mixedPrecision, std::string("bf16"));
        QCOMPARE(native::checkDeepSpeedFile(autoFile, "a.json", "no")->mixedPrecision, std::string("no"));
        QVERIFY(!native::checkDeepSpeedFile(nlohmann::json::parse(R"({"pipeline": {"stages": 2}})"), "p.json", "no"));
    }

    // The ranks' start-up check over the variables accel launch exports.
    void startupCheck()
    {
        // distributed_type MEGATRON_LM: refused as a whole, naming its keys; pipeline parallel named.
        auto megatron = check(
            {{"ACCELERATE_USE_MEGATRON_LM", "true"}, {"MEGATRON_LM_TP_DEGREE", "2"}, {"MEGATRON_LM_PP_DEGREE", "2"}});
        QVERIFY(!megatron);
        const QString refusal = QString::fromStdString(megatron.error().message);
        QVERIFY2(refusal.startsWith("ACCELERATE_USE_MEGATRON_LM=true with megatron_lm_config tp_degree=2, pp_degree=2: "
                                    "true (distributed_type MEGATRON_LM) is refused as a whole") &&
                     refusal.contains("pipeline parallel training is out of scope") &&
                     refusal.contains("(megatron_lm_pp_degree=2 asks for pipeline parallel training)"),
                 qPrintable(refusal));

        // dynamo: noted, not refused; the defaults accel launch always exports say nothing.
        std::map<std::string, std::string> dynamo{{"ACCELERATE_DYNAMO_BACKEND", "NO"},
                                                  {"ACCELERATE_DYNAMO_MODE", "default"},
                                                  {"ACCELERATE_DYNAMO_USE_FULLGRAPH", "False"},
                                                  {"ACCELERATE_DYNAMO_USE_DYNAMIC", "False"},
                                                  {"ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION", "False"},
                                                  {"KMP_AFFINITY", "granularity=fine,compact,1,0"}};
        QVERIFY(check(dynamo)->notes.empty());
        dynamo["ACCELERATE_DYNAMO_BACKEND"] = "INDUCTOR";
        dynamo["ACCELERATE_DYNAMO_USE_FULLGRAPH"] = "True";
        auto compiled = check(dynamo);
        QVERIFY(compiled);
        QCOMPARE(compiled->notes.size(), size_t(1));
        QVERIFY2(joinedNotes(*compiled).startsWith(
                     "dynamo_config.dynamo_backend (ACCELERATE_DYNAMO_BACKEND=INDUCTOR), "
                     "dynamo_config.dynamo_use_fullgraph (ACCELERATE_DYNAMO_USE_FULLGRAPH=True): libtorch runs the "
                     "model eagerly in C++"),
                 qPrintable(joinedNotes(*compiled)));

        // FSDP keys the plan does not read: noted or refused here.
        auto origParams = check({{"ACCELERATE_USE_FSDP", "true"}, {"FSDP_USE_ORIG_PARAMS", "false"}});
        QVERIFY(origParams &&
                joinedNotes(*origParams).startsWith("fsdp_config.fsdp_use_orig_params (FSDP_USE_ORIG_PARAMS=false)"));
        auto offload = check({{"ACCELERATE_USE_FSDP", "true"}, {"FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", "true"}});
        QVERIFY(!offload);
        QVERIFY(offload.error().message.rfind("FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD=true: true is refused", 0) == 0);

        // parallelism_config on the device mesh: FSDP2 / DDP over the data-parallel ranks times tp_size
        // acted on, the rest refused by name.
        std::map<std::string, std::string> fsdp2{{"ACCELERATE_USE_FSDP", "true"},
                                                 {"FSDP_VERSION", "2"},
                                                 {"ACCELERATE_USE_PARALLELISM_CONFIG", "true"},
                                                 {"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "1"},
                                                 {"PARALLELISM_CONFIG_DP_SHARD_SIZE", "2"},
                                                 {"PARALLELISM_CONFIG_TP_SIZE", "1"},
                                                 {"PARALLELISM_CONFIG_CP_SIZE", "1"},
                                                 {"PARALLELISM_CONFIG_CP_BACKEND", "torch"},
                                                 {"PARALLELISM_CONFIG_SP_SIZE", "1"},
                                                 {"PARALLELISM_CONFIG_SP_BACKEND", "deepspeed"}};
        auto plain = check(fsdp2);
        QVERIFY2(plain && plain->notes.empty(), plain ? "" : plain.error().message.c_str());
        auto refusedWith = [&](std::map<std::string, std::string> variables, int world, const char *expected) {
            auto checked = check(variables, world);
            return !checked && checked.error().message.find(expected) != std::string::npos;
        };
        auto with = [&](std::initializer_list<std::pair<const std::string, std::string>> changes) {
            auto variables = fsdp2;
            for (const auto &[name, value] : changes)
                variables[name] = value;
            return variables;
        };
        QVERIFY(check(with({{"PARALLELISM_CONFIG_TP_SIZE", "2"}, {"PARALLELISM_CONFIG_DP_SHARD_SIZE", "1"}}), 2));
        QVERIFY(check(with({{"PARALLELISM_CONFIG_TP_SIZE", "2"}}), 4)); // dp_shard 2 x tp 2
        QVERIFY(refusedWith(with({{"PARALLELISM_CONFIG_TP_SIZE", "2"}, {"PARALLELISM_CONFIG_DP_SHARD_SIZE", "1"}}), 4,
                            "(PARALLELISM_CONFIG_TP_SIZE=2) = 2 rank(s), but the job has 4 process(es)"));
        QVERIFY(refusedWith(with({{"PARALLELISM_CONFIG_TP_SIZE", "3"}}), 4,
                            "(PARALLELISM_CONFIG_TP_SIZE=3): tp_size does not divide the 4 process(es)"));
        // cp_size: dp_shard 2 x cp 2 on 4 ranks acted on; cp x tp must divide the world.
        QVERIFY(
            check(with({{"PARALLELISM_CONFIG_CP_SIZE", "2"}, {"PARALLELISM_CONFIG_CP_COMM_STRATEGY", "alltoall"}}), 4));
        QVERIFY(refusedWith(with({{"PARALLELISM_CONFIG_CP_SIZE", "2"}, {"PARALLELISM_CONFIG_TP_SIZE", "2"}}), 6,
                            "(PARALLELISM_CONFIG_TP_SIZE=2): cp_size x tp_size does not divide the 6 process(es)"));
        QVERIFY(refusedWith(with({{"PARALLELISM_CONFIG_SP_SIZE", "2"}}), 4, "(PARALLELISM_CONFIG_SP_SIZE=2): above 1"));
        QVERIFY(check(with({{"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "2"}}), 4)); // HSDP: dp_replicate 2 x dp_shard 2
        auto hsdpWithoutFsdp2 = with({{"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "2"}});
        hsdpWithoutFsdp2.erase("ACCELERATE_USE_FSDP");
        QVERIFY(refusedWith(hsdpWithoutFsdp2, 4, "(HSDP) needs distributed_type FSDP with fsdp_version: 2"));
        QVERIFY(refusedWith(fsdp2, 4, "= 2 rank(s), but the job has 4 process(es)"));
        QVERIFY(refusedWith(with({{"PARALLELISM_CONFIG_DP_SHARD_SIZE", "1"}}), 2, "no dimension to shard over"));
        QVERIFY(refusedWith(with({{"PARALLELISM_CONFIG_DP_SHARD_SIZE", "x"}}), 2,
                            "(PARALLELISM_CONFIG_DP_SHARD_SIZE=x): expected a whole number"));
        auto ddp = with({{"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "2"}, {"PARALLELISM_CONFIG_DP_SHARD_SIZE", "1"}});
        ddp.erase("ACCELERATE_USE_FSDP");
        QVERIFY(check(ddp, 2));
        QVERIFY(refusedWith(with({{"PARALLELISM_CONFIG_CP_BACKEND", "other"}, {"PARALLELISM_CONFIG_CP_SIZE", "3"}}), 2,
                            "CP_SIZE=3"));
        auto backend = check(with({{"PARALLELISM_CONFIG_SP_BACKEND", "other"}}));
        QVERIFY(backend &&
                joinedNotes(*backend).contains("(PARALLELISM_CONFIG_SP_BACKEND=other): the sequence-parallel"));
        // Accelerate reads the sizes only with ACCELERATE_USE_PARALLELISM_CONFIG.
        QVERIFY(check(with({{"ACCELERATE_USE_PARALLELISM_CONFIG", "false"}, {"PARALLELISM_CONFIG_TP_SIZE", "2"}})));

        QVERIFY(check({{"ACCELERATE_CPU_AFFINITY", "1"}})->cpuAffinity);
        QVERIFY(!check({})->cpuAffinity);
    }

    // NUMA placement: CPU ranks in blocks over the nodes, a PCI device's node from sysfs, and the
    // mask a thread gets (on a fake two-node sysfs made of this machine's CPUs).
    void cpuAffinityPlacement()
    {
        QCOMPARE(worker::numaNodeOfCpuRank(0, 4, 2), 0);
        QCOMPARE(worker::numaNodeOfCpuRank(1, 4, 2), 0);
        QCOMPARE(worker::numaNodeOfCpuRank(2, 4, 2), 1);
        QCOMPARE(worker::numaNodeOfCpuRank(3, 4, 2), 1);
        QCOMPARE(worker::numaNodeOfCpuRank(1, 2, 4), 2);
        QCOMPARE(worker::numaNodeOfCpuRank(0, 1, 1), 0);
        QCOMPARE(worker::numaNodeOfCpuRank(5, 3, 2), 1); // past the last local rank: clamped

        QTemporaryDir root;
        QVERIFY(QDir(root.path()).mkpath("sys/bus/pci/devices/0000:3b:00.0"));
        writeFile(root.filePath("sys/bus/pci/devices/0000:3b:00.0/numa_node"), "1\n");
        QCOMPARE(worker::numaNodeOfPciDevice("00000000:3B:00.0", root.path().toStdString()), std::optional<int>(1));
        QVERIFY(QDir(root.path()).mkpath("sys/bus/pci/devices/0000:5e:00.0"));
        writeFile(root.filePath("sys/bus/pci/devices/0000:5e:00.0/numa_node"), "-1\n");
        QCOMPARE(worker::numaNodeOfPciDevice("00000000:5E:00.0", root.path().toStdString()), std::nullopt);

        const std::vector<int> cpus = allowedCpus();
        if (cpus.size() < 2)
            QSKIP("one CPU: no second node to pin to");
        for (int node : {0, 1}) {
            QVERIFY(QDir(root.path()).mkpath(QString("sys/devices/system/node/node%1").arg(node)));
            writeFile(root.filePath(QString("sys/devices/system/node/node%1/cpulist").arg(node)),
                      QByteArray::number(cpus[size_t(node)]) + "\n");
        }
        // In a thread of its own: the mask is the calling thread's.
        Result<worker::Pinning> pinned = makeError(ErrorCode::Failed, "not run");
        std::vector<int> after;
        std::thread([&] {
            pinned = worker::pinToNumaNode(1, 2, std::nullopt, root.path().toStdString());
            after = allowedCpus();
        }).join();
        QVERIFY2(pinned, pinned ? "" : pinned.error().toString().c_str());
        QCOMPARE(pinned->node, 1);
        QCOMPARE(pinned->nodeCpus, std::to_string(cpus[1]));
        QCOMPARE(after, std::vector<int>{cpus[1]});
        QCOMPARE(allowedCpus(), cpus); // this thread kept its mask

        QTemporaryDir empty;
        auto none = worker::pinToNumaNode(0, 1, std::nullopt, empty.path().toStdString());
        QVERIFY(!none && none.error().message.rfind("ACCELERATE_CPU_AFFINITY=1 (enable_cpu_affinity): this machine "
                                                    "shows no NUMA node",
                                                    0) == 0);
    }

    // accel launch --job refuses or notes, before any rank starts, the config keys no variable carries.
    void launcherChecksTheJobConfig()
    {
        if (!haveWorker())
            QSKIP("no accel-worker in this build");
        const auto tpu = test::runAccel({"launch", "--dry_run", "--config_file",
                                         config("tpu", "distributed_type: MULTI_CPU\ndowncast_bf16: true\n"
                                                       "main_training_function: train\n"),
                                         "--job", m_job});
        QVERIFY2(tpu.exitCode == 0, qPrintable(tpu.err));
        QVERIFY2(tpu.out.contains("note: config downcast_bf16: true has no effect on a job: TPU pods") &&
                     tpu.out.contains("note: config main_training_function: train has no effect on a job"),
                 qPrintable(tpu.out));
        const auto npu = test::runAccel(
            {"launch", "--dry_run", "--config_file", config("npu", "distributed_type: MULTI_NPU\n"), "--job", m_job});
        QCOMPARE(npu.exitCode, 1);
        QVERIFY2(npu.err.contains("distributed_type: MULTI_NPU: a job runs on accel-worker"), qPrintable(npu.err));
        const auto cpu = test::runAccel({"launch", "--dry_run", "--cpu", "--config_file",
                                         config("cpu-fsdp", "distributed_type: FSDP\n"), "--job", m_job});
        QCOMPARE(cpu.exitCode, 1);
        QVERIFY2(cpu.err.contains("distributed_type: FSDP together with --cpu"), qPrintable(cpu.err));
        // A Python script is launched as accelerate launch would, without the job's checks.
        const auto script = test::runAccel({"launch", "--dry_run", "--config_file",
                                            config("npu-script", "distributed_type: MULTI_NPU\n"), "train.py"});
        QCOMPARE(script.exitCode, 0);
    }

    // Real jobs: Megatron refused by name, dynamo noted, CPU affinity pinned, launcher notes in the log.
    void megatronDynamoAndAffinityInARealJob()
    {
        if (!haveWorker())
            QSKIP("no accel-worker in this build");
        const Launch megatron =
            launch("megatron", config("megatron", "distributed_type: MEGATRON_LM\nmegatron_lm_config:\n"
                                                  "  megatron_lm_tp_degree: 2\n  megatron_lm_pp_degree: 2\n"
                                                  "  megatron_lm_sequence_parallelism: true\n"));
        QVERIFY2(megatron.result.err.contains("run run-megatron: failed"), qPrintable(megatron.result.err));
        for (int rank : {0, 1}) {
            const QString log = megatron.rankLog(rank);
            QVERIFY2(log.contains("accel-worker: ACCELERATE_USE_MEGATRON_LM=true with megatron_lm_config tp_degree=2, "
                                  "pp_degree=2, sequence_parallelism=True") &&
                         log.contains("pipeline parallel training is out of scope"),
                     qPrintable(log));
            qInfo("rank %d: %s", rank, qPrintable(log.trimmed()));
        }
        QVERIFY(!QFile::exists(megatron.runDir + "/metrics/rank0.jsonl"));

        // Every rank starts on one CPU (inherited from here); enable_cpu_affinity pins it to its node.
        const std::vector<int> cpus = allowedCpus();
        if (cpus.size() < 2)
            QSKIP("one CPU: pinning cannot widen the mask to tell");
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[0], &one);
        QVERIFY(::sched_setaffinity(0, sizeof one, &one) == 0);
        const Launch pinned =
            launch("pinned", config("pinned", "distributed_type: MULTI_CPU\nenable_cpu_affinity: true\n"
                                              "downcast_bf16: true\n"
                                              "dynamo_config:\n  dynamo_backend: INDUCTOR\n"));
        cpu_set_t all;
        CPU_ZERO(&all);
        for (int cpu : cpus)
            CPU_SET(cpu, &all);
        QVERIFY(::sched_setaffinity(0, sizeof all, &all) == 0);
        QVERIFY2(pinned.result.exitCode == 0, qPrintable(pinned.result.out + pinned.result.err));
        const QString log0 = pinned.rankLog(0);
        QVERIFY2(log0.contains("note: dynamo_config.dynamo_backend (ACCELERATE_DYNAMO_BACKEND=INDUCTOR): libtorch runs "
                               "the model eagerly in C++"),
                 qPrintable(log0));
        QVERIFY2(log0.startsWith("accel launch: note: config enable_cpu_affinity: true is applied") &&
                     log0.contains("accel launch: note: config downcast_bf16: true has no effect on a job"),
                 qPrintable(log0));
        QVERIFY(!pinned.rankLog(1).contains("dynamo")); // notes are rank 0's
        QDir nodes("/sys/devices/system/node");
        const QStringList nodeNames = nodes.entryList({"node*"}, QDir::Dirs);
        QVERIFY(!nodeNames.isEmpty());
        for (int rank : {0, 1}) {
            const int node = worker::numaNodeOfCpuRank(rank, 2, int(nodeNames.size()));
            const QString nodeCpus = readText(nodes.filePath(QString("node%1/cpulist").arg(node))).trimmed();
            const QRegularExpression line("pinned to NUMA node (\\d+) \\(CPUs ([^)]*)\\); Cpus_allowed_list (\\S+)");
            const auto match = line.match(pinned.rankLog(rank));
            QVERIFY2(match.hasMatch(), qPrintable(pinned.rankLog(rank)));
            QCOMPARE(match.captured(1).toInt(), node);
            QCOMPARE(match.captured(3), nodeCpus);
            QVERIFY2(nodeCpus != QString::number(cpus[0]), "the node has the one CPU the ranks started on");
            qInfo("rank %d: %s", rank, qPrintable(match.captured(0)));
        }
    }

    // parallelism_config: plain FSDP2 acted on (the same losses as without it), tensor parallelism
    // refused for the gpt recipe (only causal_lm splits its model).
    void parallelismConfigUntilTheMesh()
    {
        if (!haveWorker())
            QSKIP("no accel-worker in this build");
        const QString fsdp2 = "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n"
                              "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
        const Launch plain = launch("fsdp2", config("fsdp2", fsdp2));
        const Launch sharded = launch(
            "dp-shard", config("dp-shard", fsdp2 + "parallelism_config:\n  parallelism_config_dp_shard_size: 2\n"));
        QVERIFY2(plain.result.exitCode == 0 && sharded.result.exitCode == 0,
                 qPrintable(plain.result.err + sharded.result.err));
        QCOMPARE(losses(sharded.runDir).size(), 4);
        QCOMPARE(losses(sharded.runDir), losses(plain.runDir));
        const Launch tp = launch("tp", config("tp", fsdp2 + "parallelism_config:\n  parallelism_config_tp_size: 2\n"
                                                            "  parallelism_config_dp_shard_size: 1\n"));
        const QString log = tp.rankLog(0);
        QVERIFY2(log.contains("parallelism_config_tp_size 2: recipe gpt has no tensor-parallel split"),
                 qPrintable(log));
        qInfo("%s", qPrintable(log.trimmed()));
    }

    // Accelerate's sp-alst.ds-config.json (bf16.enabled: true) trains in bf16: the losses of
    // mixed_precision bf16 with ZeRO-3, not those of float32.
    void deepSpeedFileTrainsInBf16()
    {
        if (!haveWorker())
            QSKIP("no accel-worker in this build");
        const QString file = m_dir.filePath("sp-alst.ds-config.json");
        writeFile(file, kSpAlst);
        const Launch alst = launch("alst", config("alst", QString("distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                                                                  "  deepspeed_config_file: %1\n")
                                                              .arg(file)));
        const QString zero3 = "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n";
        const Launch bf16 = launch("bf16", config("bf16", zero3 + "mixed_precision: bf16\n"));
        const Launch float32 = launch("float32", config("float32", zero3 + "mixed_precision: 'no'\n"));
        for (const Launch *run : {&alst, &bf16, &float32})
            QVERIFY2(run->result.exitCode == 0, qPrintable(run->result.out + run->result.err));
        QCOMPARE(losses(alst.runDir).size(), 4);
        QCOMPARE(losses(alst.runDir), losses(bf16.runDir));
        QVERIFY(losses(alst.runDir) != losses(float32.runDir));
        const QString log = alst.rankLog(0);
        QVERIFY2(log.contains("bf16.enabled is true: the job trains in bf16 (mixed precision no otherwise)") &&
                     log.contains("seq_parallel_communication_data_type=\"bf16\": the dtype of sequence parallelism"),
                 qPrintable(log));
    }
};

QTEST_GUILESS_MAIN(tst_NativeKeys)
#include "tst_nativekeys.moc"
