// Bad config files and the exact message each one gets, from the reader (keys, types, values,
// syntax) and from validate() (cross-field rules, and warnings for keys Accelerate ignores).
#include "core/config/configio.h"
#include "core/config/validation.h"

#include <QtTest>

using namespace accel;
using namespace accel::config;

namespace {

// Every diagnostic, parse and validation, as "file: line N: key: message" strings.
QStringList check(const std::string &text, bool *parsed = nullptr)
{
    Diagnostics diagnostics;
    auto config = parseConfig(text, text.rfind("{", 0) == 0 ? ConfigFormat::Json : ConfigFormat::Yaml, "config.yaml",
                              &diagnostics);
    if (parsed)
        *parsed = config.has_value();
    if (config) {
        const Diagnostics more = validate(*config);
        diagnostics.insert(diagnostics.end(), more.begin(), more.end());
    }
    QStringList out;
    for (const Diagnostic &d : diagnostics)
        out << QString::fromStdString(d.toString());
    return out;
}

const char *multiGpu = "compute_environment: LOCAL_MACHINE\n" // line 1
                       "distributed_type: MULTI_GPU\n"        // line 2
                       "num_processes: 2\n";                  // line 3

} // namespace

class tst_Validation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void badInputHasExactMessage_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::addColumn<bool>("loads"); // false: the reader refuses the file

        const QString gpu = QString::fromLatin1(multiGpu);
        QTest::newRow("unknown key") << gpu + "num_proceses: 2\n"
                                     << "config.yaml: line 4: num_proceses: unknown key; did you mean 'num_processes'?"
                                     << false;
        QTest::newRow("unknown nested key")
            << gpu + "fsdp_config:\n  fsdp_sharding_stratgy: FULL_SHARD\n"
            << "config.yaml: line 5: fsdp_sharding_stratgy: unknown key in fsdp_config; did you mean "
               "'fsdp_sharding_strategy'?"
            << false;
        QTest::newRow("bad enum")
            << "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_sharding_strategy: FULL\n"
            << "config.yaml: line 4: fsdp_sharding_strategy: expected one of FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, "
               "HYBRID_SHARD, HYBRID_SHARD_ZERO2; got FULL"
            << false;
        QTest::newRow("bad distributed type")
            << "distributed_type: MULTI_TPU\n"
            << "config.yaml: line 1: distributed_type: expected one of NO, MULTI_CPU, MULTI_GPU, MULTI_NPU, "
               "MULTI_MLU, MULTI_SDAA, MULTI_MUSA, MULTI_XPU, MULTI_HPU, MULTI_NEURON, DEEPSPEED, FSDP, XLA, "
               "MEGATRON_LM; got MULTI_TPU"
            << false;
        QTest::newRow("missing distributed type")
            << "num_processes: 1\n"
            << "config.yaml: distributed_type: missing (required): one of NO, MULTI_CPU, MULTI_GPU, "
               "MULTI_NPU, MULTI_MLU, MULTI_SDAA, MULTI_MUSA, MULTI_XPU, MULTI_HPU, MULTI_NEURON, "
               "DEEPSPEED, FSDP, XLA, MEGATRON_LM"
            << false;
        QTest::newRow("bad mixed precision")
            << gpu + "mixed_precision: fp32\n"
            << "config.yaml: line 4: mixed_precision: expected one of no, fp16, bf16, fp8; got fp32" << false;
        QTest::newRow("text for integer")
            << "distributed_type: MULTI_GPU\nnum_processes: two\n"
            << "config.yaml: line 2: num_processes: expected an integer >= -1; got two" << false;
        QTest::newRow("quoted boolean") << gpu + "use_cpu: 'yes'\n"
                                        << "config.yaml: line 4: use_cpu: expected true or false; got 'yes'" << false;
        QTest::newRow("zero stage out of range")
            << "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 4\n"
            << "config.yaml: line 4: zero_stage: expected an integer from 0 to 3; got 4" << false;
        QTest::newRow("text for number")
            << "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  gradient_clipping: high\n"
            << "config.yaml: line 4: gradient_clipping: expected a number; got high" << false;
        QTest::newRow("block is a list")
            << gpu + "fsdp_config:\n- fsdp_version\n"
            << "config.yaml: line 4: fsdp_config: expected a mapping of fsdp_config keys; got a list" << false;
        QTest::newRow("short boolean list")
            << gpu + "mixed_precision: fp8\nfp8_config:\n  override_linear_precision: [false, true]\n"
            << "config.yaml: line 6: override_linear_precision: expected a list of 3 booleans; got 2 items" << false;
        QTest::newRow("sagemaker key in local config")
            << gpu + "region: us-east-1\n"
            << "config.yaml: line 4: region: only valid in a SageMaker config "
               "(compute_environment: AMAZON_SAGEMAKER)"
            << false;
        QTest::newRow("local key in sagemaker config")
            << "compute_environment: AMAZON_SAGEMAKER\ndistributed_type: NO\nec2_instance_type: "
               "ml.p3.2xlarge\niam_role_name: r\nnum_processes: 2\n"
            << "config.yaml: line 5: num_processes: not valid in a SageMaker config (compute_environment: "
               "AMAZON_SAGEMAKER)"
            << false;
        QTest::newRow("sagemaker without role")
            << "compute_environment: AMAZON_SAGEMAKER\ndistributed_type: NO\nec2_instance_type: ml.p3.2xlarge\n"
            << "config.yaml: iam_role_name: missing (required in a SageMaker config)" << false;
        QTest::newRow("yaml syntax") << gpu + "fsdp_config: [a, b\n"
                                     << "config.yaml: line 5: invalid YAML: end of sequence flow not found" << false;
        QTest::newRow("json syntax")
            << "{\n  \"distributed_type\": \"NO\",\n}\n"
            << "config.yaml: line 3: invalid JSON: syntax error while parsing object key - unexpected '}'; "
               "expected string literal"
            << false;
        // Regression: a repeated key refused the file; PyYAML keeps the last value and Accelerate loads it.
        QTest::newRow("repeated key keeps the last value")
            << gpu + "num_processes: 4\n"
            << "config.yaml: line 4: num_processes: warning: repeated key (first at line 3); the last value is "
               "used, as Accelerate's YAML loader does"
            << true;
        QTest::newRow("override_linear_precision bad text")
            << gpu + "mixed_precision: fp8\nfp8_config:\n  override_linear_precision: (false, maybe, false)\n"
            << "config.yaml: line 6: override_linear_precision: expected a list of 3 booleans, true/false or text "
               "like '(false, false, true)'; got (false, maybe, false)"
            << false;
        QTest::newRow("fp8 backend unknown")
            << gpu + "mixed_precision: fp8\nfp8_config:\n  backend: teh\n"
            << "config.yaml: line 6: backend: expected one of AO, TE, MSAMP; got teh" << false;
        QTest::newRow("bad compute environment")
            << "compute_environment: CLOUD\ndistributed_type: NO\n"
            << "config.yaml: line 1: compute_environment: expected one of LOCAL_MACHINE, AMAZON_SAGEMAKER; got CLOUD"
            << false;
        QTest::newRow("empty file") << ""
                                    << "config.yaml: the file is empty; expected a mapping of config keys" << false;
        QTest::newRow("top-level list")
            << "- distributed_type\n"
            << "config.yaml: line 1: expected a mapping of config keys at the top level; got a list" << false;
        QTest::newRow("string for list") << gpu + "tpu_env: FOO=1\n"
                                         << "config.yaml: line 4: tpu_env: expected a list of strings; got FOO=1"
                                         << false;
        QTest::newRow("port out of range")
            << gpu + "main_process_port: 70000\n"
            << "config.yaml: line 4: main_process_port: expected an integer from 0 to 65535; got 70000" << false;
        QTest::newRow("unknown megatron key")
            << "distributed_type: MEGATRON_LM\nnum_processes: 2\nmegatron_lm_config:\n  megatron_lm_tp_degre: 2\n"
            << "config.yaml: line 4: megatron_lm_tp_degre: unknown key in megatron_lm_config; did you mean "
               "'megatron_lm_tp_degree'?"
            << false;
        QTest::newRow("unknown key far from any")
            << gpu + "zzzzzzzz: 1\n"
            << "config.yaml: line 4: zzzzzzzz: unknown key; known keys: command_file, commands, "
               "compute_environment, debug, deepspeed_config, distributed_type, downcast_bf16, "
               "dynamo_config, enable_cpu_affinity, fp8_config, fsdp_config, gpu_ids, ipex_config, "
               "machine_rank, main_process_ip, main_process_port, main_training_function, "
               "megatron_lm_config, mixed_precision, mpirun_config, num_machines, num_processes, "
               "parallelism_config, rdzv_backend, same_network, tpu_env, tpu_name, tpu_use_cluster, "
               "tpu_use_sudo, tpu_vm, tpu_zone, use_cpu"
            << false;

        // Cross-field rules: the file loads, validate() reports an error.
        QTest::newRow("rank beyond machines")
            << gpu + "num_machines: 2\nmachine_rank: 2\nmain_process_ip: 10.0.0.1\n"
            << "config.yaml: line 5: machine_rank: expected 0..1 (num_machines is 2); got 2" << true;
        QTest::newRow("multi-node without ip")
            << "distributed_type: MULTI_GPU\nnum_processes: 4\nnum_machines: 2\n"
            << "config.yaml: main_process_ip: required when num_machines is 2: the address of the machine "
               "with machine_rank 0"
            << true;
        QTest::newRow("processes not divisible")
            << "distributed_type: MULTI_GPU\nnum_processes: 3\nnum_machines: 2\nmain_process_ip: h\n"
            << "config.yaml: line 2: num_processes: is the total over all machines and must be divisible "
               "by num_machines (2); got 3"
            << true;
        QTest::newRow("multi-gpu single process")
            << "distributed_type: MULTI_GPU\nnum_processes: 1\n"
            << "config.yaml: line 2: num_processes: MULTI_GPU with one machine needs more than one process; "
               "use distributed_type NO to train on one device"
            << true;
        QTest::newRow("NO with several processes")
            << "distributed_type: 'NO'\nnum_processes: 4\n"
            << "config.yaml: line 2: num_processes: distributed_type NO runs a single process; got 4 "
               "(choose MULTI_GPU, MULTI_CPU, FSDP or DEEPSPEED to run several)"
            << true;
        QTest::newRow("fp8 block without fp8")
            << gpu + "mixed_precision: bf16\nfp8_config:\n  backend: TE\n"
            << "config.yaml: line 5: fp8_config: is only used with mixed_precision fp8; mixed_precision is bf16"
            << true;
        QTest::newRow("fsdp2 with strategy")
            << "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n"
               "  fsdp_reshard_after_forward: SHARD_GRAD_OP\n"
            << "config.yaml: line 5: fsdp_reshard_after_forward: expected true or false with fsdp_version 2; "
               "got SHARD_GRAD_OP (run 'accel config to-fsdp2' to convert an FSDP1 config)"
            << true;
        QTest::newRow("fsdp2 local state dict")
            << "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n"
               "  fsdp_state_dict_type: LOCAL_STATE_DICT\n"
            << "config.yaml: line 5: fsdp_state_dict_type: expected one of SHARDED_STATE_DICT, "
               "FULL_STATE_DICT with fsdp_version 2; got LOCAL_STATE_DICT"
            << true;
        QTest::newRow("deepspeed file and inline keys")
            << "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n  "
               "zero_stage: 3\n"
            << "config.yaml: line 5: zero_stage: is set in the accelerate config while deepspeed_config_file is used; "
               "the training "
               "process refuses to start (ACCELERATE_CONFIG_DS_FIELDS): put it in the DeepSpeed file instead"
            << true;
        QTest::newRow("deepspeed file and mixed precision")
            << "distributed_type: DEEPSPEED\nnum_processes: 2\nmixed_precision: bf16\ndeepspeed_config:\n  "
               "deepspeed_config_file: ds.json\n"
            << "config.yaml: line 3: mixed_precision: is set in the accelerate config while deepspeed_config_file is "
               "used; the training "
               "process refuses to start (ACCELERATE_CONFIG_DS_FIELDS): put it in the DeepSpeed file instead"
            << true;
        QTest::newRow("parallelism with fsdp1")
            << "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 1\n"
               "parallelism_config:\n  parallelism_config_tp_size: 2\n"
            << "config.yaml: line 5: parallelism_config: needs distributed_type FSDP with "
               "fsdp_config.fsdp_version 2"
            << true;
        QTest::newRow("parallelism sizes")
            << "distributed_type: FSDP\nnum_processes: 8\nfsdp_config:\n  fsdp_version: 2\n"
               "parallelism_config:\n  parallelism_config_tp_size: 2\n  parallelism_config_dp_shard_size: 2\n"
            << "config.yaml: line 5: parallelism_config: dp_replicate x dp_shard x tp x cp sizes (4) must "
               "equal num_processes (8)"
            << true;
        QTest::newRow("bad gpu ids")
            << gpu + "gpu_ids: 0;1\n"
            << "config.yaml: line 4: gpu_ids: expected all or a comma-separated list of device numbers such as "
               "0,1,3; got 0;1"
            << true;
        QTest::newRow("megatron degrees")
            << "distributed_type: MEGATRON_LM\nnum_processes: 6\nmegatron_lm_config:\n"
               "  megatron_lm_tp_degree: 2\n  megatron_lm_pp_degree: 2\n"
            << "config.yaml: line 4: megatron_lm_tp_degree: megatron_lm_tp_degree x megatron_lm_pp_degree (4) "
               "must divide num_processes (6)"
            << true;
        QTest::newRow("torchao with ram-efficient loading")
            << "distributed_type: FSDP\nnum_processes: 2\nmixed_precision: fp8\nfp8_config:\n  backend: "
               "AO\nfsdp_config:\n  fsdp_version: 2\n"
            << "config.yaml: fsdp_cpu_ram_efficient_loading: the AO (torchao) FP8 backend refuses FSDP with "
               "CPU-RAM-efficient loading; "
               "set it to false"
            << true;

        // Warnings for keys Accelerate's launcher ignores.
        QTest::newRow("rdzv backend ignored")
            << "distributed_type: MULTI_GPU\nnum_processes: 4\nnum_machines: 2\nmain_process_ip: h\n"
               "rdzv_backend: c10d\n"
            << "config.yaml: line 5: rdzv_backend: warning: accelerate launch ignores this key (its "
               "--rdzv_backend default static wins); pass --rdzv_backend c10d at launch"
            << true;
        QTest::newRow("cpu affinity ignored")
            << gpu + "enable_cpu_affinity: true\n"
            << "config.yaml: line 4: enable_cpu_affinity: warning: accelerate launch ignores this key (its "
               "--enable_cpu_affinity default false wins); pass --enable_cpu_affinity at launch"
            << true;
        QTest::newRow("downcast ignored")
            << gpu + "downcast_bf16: 'yes'\n"
            << "config.yaml: line 4: downcast_bf16: warning: accelerate launch ignores this key (its "
               "--downcast_bf16 default false wins); pass --downcast_bf16 at launch"
            << true;
        QTest::newRow("amax history ignored")
            << gpu + "mixed_precision: fp8\nfp8_config:\n  backend: TE\n  amax_history_length: 16\n"
            << "config.yaml: line 7: amax_history_length: warning: never reaches the FP8 recipe (exported as "
               "ACCELERATE_FP8_AMAX_HISTORY_LENGTH, the recipe reads ..._AMAX_HISTORY_LEN); write "
               "amax_history_len instead"
            << true;
        QTest::newRow("optimization level ignored")
            << gpu + "mixed_precision: fp8\nfp8_config:\n  backend: msamp\n  optimization_level: O1\n"
            << "config.yaml: line 7: optimization_level: warning: never reaches the MS-AMP recipe (exported as "
               "ACCELERATE_FP8_OPTIMIZATION_LEVEL, the recipe reads ..._OPT_LEVEL); write opt_level instead"
            << true;
        QTest::newRow("short spelling for the wrong backend")
            << gpu + "mixed_precision: fp8\nfp8_config:\n  backend: ao\n  amax_history_len: 16\n"
            << "config.yaml: line 7: amax_history_len: warning: is a TE setting; ignored with backend AO" << true;
        QTest::newRow("fsdp1 strategy overridden")
            << "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 1\n"
               "  fsdp_reshard_after_forward: SHARD_GRAD_OP\n"
            << "config.yaml: line 5: fsdp_reshard_after_forward: warning: FSDP1 reads "
               "FSDP_SHARDING_STRATEGY first, which accelerate launch always exports (FULL_SHARD by "
               "default), so SHARD_GRAD_OP here has no effect; also set fsdp_sharding_strategy: "
               "SHARD_GRAD_OP"
            << true;
        QTest::newRow("nvme path not exported")
            << "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 3\n"
               "  offload_param_device: nvme\n  offload_param_nvme_path: /nvme\n"
            << "config.yaml: line 6: offload_param_nvme_path: warning: accelerate launch never exports "
               "NVMe paths; the DeepSpeed plugin uses its default (none): put the path in a DeepSpeed "
               "JSON file"
            << true;
        QTest::newRow("legacy ipex")
            << "distributed_type: MULTI_CPU\nnum_processes: 2\nipex_config:\n  ipex: true\n"
            << "config.yaml: line 3: ipex_config: warning: legacy block (Accelerate <= 1.12): kept but unused; "
               "Accelerate >= 1.13 refuses files containing it"
            << true;
    }

    void badInputHasExactMessage()
    {
        QFETCH(QString, text);
        QFETCH(QString, message);
        QFETCH(bool, loads);
        bool parsed = false;
        const QStringList messages = check(text.toStdString(), &parsed);
        QVERIFY2(messages.contains(message), qPrintable(messages.join(QLatin1Char('\n'))));
        QCOMPARE(parsed, loads);
    }

    void parseErrorNamesFirstProblemAndCount()
    {
        auto config = parseConfig("distributed_type: MULTI_GPU\nnum_processes: x\nuse_cpu: 3\ndebug: 4\n",
                                  ConfigFormat::Yaml, "c.yaml");
        QVERIFY(!config.has_value());
        QCOMPARE(config.error().code, ErrorCode::InvalidInput);
        QCOMPARE(QString::fromStdString(config.error().toString()),
                 QStringLiteral("c.yaml: line 4: debug: expected true or false; got 4 (and 2 more problems)"));
        QCOMPARE(exitCodeFor(config.error()), 2);
    }

    void corpusHasNoErrors()
    {
        // Files Accelerate itself writes must validate without errors (warnings are fine).
        QDir dir(QStringLiteral(ACCEL_CONFIG_CORPUS));
        const QStringList files = dir.entryList({QStringLiteral("*.yaml"), QStringLiteral("*.json")}, QDir::Files);
        QVERIFY(files.size() > 30);
        for (const QString &file : files) {
            Diagnostics diagnostics;
            auto config = loadConfigFile(dir.filePath(file).toStdString(), &diagnostics);
            QVERIFY(config.has_value());
            for (const Diagnostic &d : validate(*config))
                QVERIFY2(d.severity == Severity::Warning, d.toString().c_str());
        }
    }

    void lenientPlainEnums()
    {
        // PyYAML would read an unquoted NO as false; the text is what the user meant.
        bool parsed = false;
        const QStringList messages = check("distributed_type: NO\nmixed_precision: no\n", &parsed);
        QVERIFY(parsed);
        QVERIFY2(messages.isEmpty(), qPrintable(messages.join(QLatin1Char('\n'))));
    }
};

QTEST_GUILESS_MAIN(tst_Validation)
#include "tst_validation.moc"
