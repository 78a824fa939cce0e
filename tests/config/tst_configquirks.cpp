// Config files that real Accelerate reads and that Accel Studio once refused or damaged: the
// fp8_config spellings of Accelerate's own FP8 template, override_linear_precision in every
// shape Accelerate has written, backend names in any case, repeated keys, null values, and the
// hardening limits (alias expansion, file size). One regression test per defect.
#include "core/common/fileutil.h"
#include "core/config/configio.h"
#include "core/config/validation.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::config;

namespace {

const std::string fp8Gpu = "compute_environment: LOCAL_MACHINE\n"
                           "debug: false\n"
                           "distributed_type: MULTI_GPU\n"
                           "downcast_bf16: 'no'\n"
                           "enable_cpu_affinity: false\n";
const std::string fp8Rest = "gpu_ids: all\n"
                            "machine_rank: 0\n"
                            "main_training_function: main\n"
                            "mixed_precision: fp8\n"
                            "num_machines: 1\n"
                            "num_processes: 2\n"
                            "rdzv_backend: static\n"
                            "same_network: true\n"
                            "tpu_env: []\n"
                            "tpu_use_cluster: false\n"
                            "tpu_use_sudo: false\n"
                            "use_cpu: false\n";

std::string fp8File(const std::string &block)
{
    return fp8Gpu + "fp8_config:\n" + block + fp8Rest;
}

QStringList warningsOf(const Diagnostics &diagnostics)
{
    QStringList out;
    for (const Diagnostic &d : diagnostics)
        if (d.severity == Severity::Warning)
            out << QString::fromStdString(d.toString());
    return out;
}

} // namespace

class tst_ConfigQuirks : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Regression: amax_history_len, amax_compute_algo and opt_level (the keys Accelerate's FP8
    // template and docs use, and the ones its recipes read) were rejected as unknown keys.
    void fp8TemplateKeysLoadAndSaveByteIdentical()
    {
        const std::string text = fp8File("  amax_compute_algo: max\n"
                                         "  amax_history_len: 16\n"
                                         "  backend: TE\n"
                                         "  fp8_format: E4M3\n"
                                         "  opt_level: O1\n"
                                         "  override_linear_precision: (false, false, false)\n");
        Diagnostics diagnostics;
        auto config = parseConfig(text, ConfigFormat::Yaml, "fp8.yaml", &diagnostics);
        QVERIFY2(config, config ? "" : config.error().toString().c_str());
        QCOMPARE(config->fp8.amaxHistoryLen, std::optional<std::int64_t>(16));
        QCOMPARE(config->fp8.amaxComputeAlgo, std::optional<std::string>("max"));
        QCOMPARE(config->fp8.optLevel, std::optional<std::string>("O1"));
        QVERIFY(!config->fp8.amaxHistoryLength);
        QCOMPARE(*config->fp8.overrideLinearPrecision, (std::vector<bool>{false, false, false}));
        QCOMPARE(serializeConfig(*config, ConfigFormat::Yaml), text);
        QVERIFY2(warningsOf(diagnostics).isEmpty(), qPrintable(warningsOf(diagnostics).join('\n')));
    }

    // The questionnaire's long spellings load as written and are saved back; validate() says the
    // value never reaches the recipe (Accelerate exports them under names nothing reads).
    void questionnaireSpellingsWarn()
    {
        const std::string text = fp8File("  amax_compute_algorithm: most_recent\n"
                                         "  amax_history_length: 32\n"
                                         "  backend: TE\n");
        auto config = parseConfig(text, ConfigFormat::Yaml, "fp8.yaml");
        QVERIFY(config);
        QCOMPARE(config->fp8.amaxHistoryLength, std::optional<std::int64_t>(32));
        QVERIFY(!config->fp8.amaxHistoryLen);
        QCOMPARE(serializeConfig(*config, ConfigFormat::Yaml), text);
        QStringList messages;
        for (const Diagnostic &d : validate(*config))
            messages << QString::fromStdString(d.toString());
        QVERIFY2(messages.filter("amax_history_length: warning: never reaches the FP8 recipe").size() == 1,
                 qPrintable(messages.join('\n')));
        QVERIFY2(messages.filter("amax_compute_algorithm: warning: never reaches the FP8 recipe").size() == 1,
                 qPrintable(messages.join('\n')));
    }

    // Regression: override_linear_precision written as a bool or as the text "(false, false, false)"
    // (Accelerate's FP8 template) was rejected; each shape loads and saves as written.
    void overrideLinearPrecisionShapes_data()
    {
        QTest::addColumn<QString>("written");
        QTest::addColumn<QString>("saved");
        QTest::addColumn<QString>("values");
        QTest::newRow("list") << "\n  - false\n  - false\n  - true"
                              << "\n  - false\n  - false\n  - true"
                              << "001";
        QTest::newRow("flow list") << " [false, true, false]"
                                   << "\n  - false\n  - true\n  - false"
                                   << "010";
        QTest::newRow("bool") << " false"
                              << " false"
                              << "000";
        QTest::newRow("bool true") << " true"
                                   << " true"
                                   << "111";
        QTest::newRow("template text") << " (false, false, false)"
                                       << " (false, false, false)"
                                       << "000";
        QTest::newRow("python text") << " '(False, False, True)'"
                                     << " (False, False, True)"
                                     << "001";
        QTest::newRow("comma text") << " false,true,true"
                                    << " false,true,true"
                                    << "011";
    }
    void overrideLinearPrecisionShapes()
    {
        QFETCH(QString, written);
        QFETCH(QString, saved);
        QFETCH(QString, values);
        const std::string text = fp8File("  backend: TE\n  override_linear_precision:" + written.toStdString() + "\n");
        auto config = parseConfig(text, ConfigFormat::Yaml, "fp8.yaml");
        QVERIFY2(config, config ? "" : config.error().toString().c_str());
        std::vector<bool> expected;
        for (QChar c : values)
            expected.push_back(c == '1');
        QCOMPARE(*config->fp8.overrideLinearPrecision, expected);
        QCOMPARE(QString::fromStdString(serializeConfig(*config, ConfigFormat::Yaml)),
                 QString::fromStdString(
                     fp8File("  backend: TE\n  override_linear_precision:" + saved.toStdString() + "\n")));
        // A value changed since loading is saved as a list (the written form no longer means it).
        config->fp8.overrideLinearPrecision = std::vector<bool>{true, false, false};
        QVERIFY(serializeConfig(*config, ConfigFormat::Yaml).find("override_linear_precision:\n  - true\n") !=
                std::string::npos);
    }

    // Regression: `backend: te` was refused although Accelerate's launcher accepts any case.
    void fp8BackendAnyCase()
    {
        for (const char *backend : {"te", "Te", "msamp", "ao", "AO"}) {
            const std::string text = fp8File(std::string("  backend: ") + backend + "\n");
            auto config = parseConfig(text, ConfigFormat::Yaml, "fp8.yaml");
            QVERIFY2(config, backend);
            QCOMPARE(config->fp8.backend, std::optional<std::string>(backend));
            QCOMPARE(serializeConfig(*config, ConfigFormat::Yaml), text);
        }
    }

    // Regression: Accelerate's test configs repeat a key; PyYAML keeps the last value and
    // Accelerate loads the file, which was refused here.
    void repeatedKeyKeepsLastValue()
    {
        Diagnostics diagnostics;
        auto config = parseConfig("distributed_type: MULTI_GPU\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 1\n"
                                  "num_processes: 4\nfsdp_config:\n  fsdp_version: 2\n",
                                  ConfigFormat::Yaml, "c.yaml", &diagnostics);
        QVERIFY2(config, config ? "" : config.error().toString().c_str());
        QCOMPARE(config->numProcesses, std::optional<std::int64_t>(4));
        QCOMPARE(config->fsdp.version, std::optional<std::int64_t>(2));
        const QStringList warnings = warningsOf(diagnostics);
        QVERIFY2(warnings.contains("c.yaml: line 5: num_processes: warning: repeated key (first at line 2); the last "
                                   "value is used, as Accelerate's YAML loader does"),
                 qPrintable(warnings.join('\n')));
        QCOMPARE(warnings.filter("repeated key").size(), 2);
        // JSON keeps the last value too (Python's json module does).
        auto json = parseConfig("{\"distributed_type\": \"NO\", \"num_processes\": 1, \"num_processes\": 1, "
                                "\"debug\": false, \"debug\": true}",
                                ConfigFormat::Json, "c.json");
        QVERIFY(json);
        QCOMPARE(json->debug, std::optional<bool>(true));
    }

    // Regression: a nested key with a null value (fsdp_ignored_modules: null) was dropped on save;
    // Accelerate keeps nested nulls (it drops only top-level ones).
    void nullValueSurvivesSave()
    {
        const std::string text = "compute_environment: LOCAL_MACHINE\n"
                                 "debug: false\n"
                                 "distributed_type: FSDP\n"
                                 "downcast_bf16: 'no'\n"
                                 "enable_cpu_affinity: false\n"
                                 "fsdp_config:\n"
                                 "  fsdp_ignored_modules: null\n"
                                 "  fsdp_transformer_layer_cls_to_wrap: null\n"
                                 "  fsdp_version: 2\n"
                                 "machine_rank: 0\n"
                                 "main_training_function: main\n"
                                 "num_machines: 1\n"
                                 "num_processes: 2\n"
                                 "rdzv_backend: static\n"
                                 "same_network: false\n"
                                 "tpu_use_cluster: false\n"
                                 "tpu_use_sudo: false\n"
                                 "use_cpu: false\n";
        auto config = parseConfig(text, ConfigFormat::Yaml, "c.yaml");
        QVERIFY(config);
        QVERIFY(!config->fsdp.ignoredModules);
        QCOMPARE(serializeConfig(*config, ConfigFormat::Yaml), text);
        QVERIFY(serializeConfig(*config, ConfigFormat::Json).find("\"fsdp_ignored_modules\": null") !=
                std::string::npos);
        // A block holding only nulls is not empty (Accelerate writes it).
        auto onlyNull =
            parseConfig("distributed_type: NO\nmegatron_lm_config:\n  megatron_lm_attention_backend: null\n",
                        ConfigFormat::Yaml, "c.yaml");
        QVERIFY(onlyNull);
        QVERIFY(serializeConfig(*onlyNull, ConfigFormat::Yaml)
                    .find("megatron_lm_config:\n  megatron_lm_attention_backend: null\n") != std::string::npos);
        // A value set after loading wins over the remembered null.
        config->fsdp.ignoredModules = "lm_head";
        QVERIFY(serializeConfig(*config, ConfigFormat::Yaml).find("fsdp_ignored_modules: lm_head\n") !=
                std::string::npos);
    }

    // Regression (#19): aliases were expanded without limit; a 430-byte file took gigabytes.
    void aliasBombIsRefused()
    {
        std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
        for (int i = 1; i < 10; ++i) {
            text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
            for (int k = 0; k < 10; ++k)
                text += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
            text += "]\n";
        }
        text += "distributed_type: NO\n";
        QVERIFY(text.size() < 600);
        QElapsedTimer timer;
        timer.start();
        auto config = parseConfig(text, ConfigFormat::Yaml, "bomb.yaml");
        QVERIFY(!config);
        QVERIFY2(config.error().message.find("more than 100000 values once YAML aliases (*name) are expanded") !=
                     std::string::npos,
                 config.error().toString().c_str());
        QVERIFY2(config.error().context.find("bomb.yaml") != std::string::npos, config.error().context.c_str());
        QVERIFY2(timer.elapsed() < 5000, QByteArray::number(timer.elapsed()));
        // A few legitimate aliases still load.
        QVERIFY(parseConfig("distributed_type: NO\ntpu_env: &e [A=1]\ntpu_vm: *e\n", ConfigFormat::Yaml, "ok.yaml"));
    }

    // Regression (#19): there was no size limit; an 11 MB config took a minute to be refused.
    void oversizedFileIsRefused()
    {
        QTemporaryDir dir;
        const std::string path = (dir.path() + "/huge.yaml").toStdString();
        std::string text = "distributed_type: NO\ntpu_env:\n";
        while (text.size() <= kMaxConfigBytes)
            text += "- PADDING=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
        QVERIFY(fileutil::writeFileAtomic(path, text));
        auto loaded = loadConfigFile(path);
        QVERIFY(!loaded);
        QVERIFY2(loaded.error().toString().find("huge.yaml") != std::string::npos, loaded.error().toString().c_str());
        QVERIFY2(loaded.error().toString().find(std::to_string(kMaxConfigBytes)) != std::string::npos,
                 loaded.error().toString().c_str());
        auto parsed = parseConfig(text, ConfigFormat::Yaml, "huge.yaml");
        QVERIFY(!parsed);
        QVERIFY2(parsed.error().toString().find("a config file is at most 1048576 bytes") != std::string::npos,
                 parsed.error().toString().c_str());
    }
};

QTEST_GUILESS_MAIN(tst_ConfigQuirks)
#include "tst_configquirks.moc"
