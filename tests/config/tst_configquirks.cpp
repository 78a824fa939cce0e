// Config files that real Accelerate reads and that Accel Studio once refused or damaged: the
// fp8_config spellings of Accelerate's own FP8 template, override_linear_precision in every
// shape Accelerate has written, backend names in any case, repeated keys, null values, and the
// hardening limits (alias expansion, file size, yaml-cpp's endless documents, invalid UTF-8). One
// regression test per defect.
#include "core/common/fileutil.h"
#include "core/config/configio.h"
#include "core/config/validation.h"
#include "tests/helpers/testsupport.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/resource.h>

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

// Peak resident memory of this process so far, in MiB.
long peakRssMiB()
{
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss / 1024;
}

// An input the config fuzz target found, without its first byte (the target's YAML/JSON selector).
std::string fuzzFinding(const char *name)
{
    const std::string path = (test::sourceDir() + "/tests/fuzz/corpus/config/" + name).toStdString();
    auto bytes = fileutil::readFile(path, kMaxConfigBytes);
    if (!bytes || bytes->empty())
        qFatal("cannot read %s", path.c_str());
    return bytes->substr(1);
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

    // Regression: the alias limit counted values, not their text: one alias of a long string,
    // repeated, made a 1 MiB file take more than 60 s and 4 GB.
    void aliasOfLongTextIsRefused()
    {
        std::string text = "a: &a " + std::string(100000, 'x') + "\nb:\n";
        for (int i = 0; i < 1000; ++i)
            text += "- *a\n";
        QElapsedTimer timer;
        timer.start();
        auto value = parseYamlText(text, "long.yaml");
        QVERIFY(!value);
        QCOMPARE(QString::fromStdString(value.error().toString()),
                 QStringLiteral("long.yaml: line 1: more than 16 MiB of text once YAML aliases (*name) are expanded "
                                "(the limit for a config file)"));
        QVERIFY2(timer.elapsed() < 5000, QByteArray::number(timer.elapsed()));
        // Keys count too.
        std::string keys = "a: &a " + std::string(100000, 'k') + "\nb: {";
        for (int i = 0; i < 1000; ++i)
            keys += "*a : 1, ";
        keys += "}\n";
        auto keyed = parseYamlText(keys, "keys.yaml");
        QVERIFY(!keyed);
        QVERIFY2(keyed.error().message.find("MiB of text once YAML aliases") != std::string::npos,
                 keyed.error().toString().c_str());
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

    // Regression (fuzz finding config-loadall-slow): after a flow mapping closed by "}," the ','
    // cannot start a node; yaml-cpp 0.7 then starts a new empty document at that ',' over and over,
    // and YAML::LoadAll kept appending them: 309 bytes, 7.6 s and 3.7 GB before std::bad_alloc.
    void strayCommaAfterFlowMappingIsRefusedQuickly()
    {
        const std::string text = fuzzFinding("regression_loadall_stray_comma.yaml");
        QCOMPARE(text.size(), size_t(309));
        QElapsedTimer timer;
        timer.start();
        auto config = parseConfig(text, ConfigFormat::Yaml, "slow.yaml");
        QVERIFY(!config);
        QCOMPARE(QString::fromStdString(config.error().toString()),
                 QStringLiteral("slow.yaml: line 4: invalid YAML: ',' outside [ ] or { } cannot start a value"));
        QVERIFY2(timer.elapsed() < 1000, QByteArray::number(timer.elapsed()));
        QVERIFY2(peakRssMiB() < 256, QByteArray::number(qlonglong(peakRssMiB())));
        // The same ',' after a second document, and after a block mapping that ends less indented.
        for (const char *stray : {"a: 1\n---\n,x\n", " a: 1\n,x\n"}) {
            auto value = parseYamlText(stray, "c.yaml");
            QVERIFY2(!value, stray);
            QCOMPARE(QString::fromStdString(value.error().message),
                     QStringLiteral("invalid YAML: ',' outside [ ] or { } cannot start a value"));
        }
    }

    // An Accelerate config is one YAML document (PyYAML's safe_load refuses more).
    void secondDocumentIsRefused()
    {
        auto value = parseYamlText("distributed_type: NO\n---\nnum_processes: 2\n...\n---\na: 1\n", "two.yaml");
        QVERIFY(!value);
        QCOMPARE(QString::fromStdString(value.error().toString()),
                 QStringLiteral("two.yaml: invalid YAML: the file holds 3 YAML documents (the second from line 2); "
                                "a config file is one"));
        // One document with its markers is fine; so is an empty file.
        QVERIFY(parseYamlText("---\ndistributed_type: NO\n...\n", "one.yaml"));
        QVERIFY(parseYamlText("", "empty.yaml"));
    }

    // Regression (fuzz finding config-invalid-utf8-roundtrip): F6 91 8A 92 (a "code point" past
    // U+10FFFF) passed the UTF-8 check, was written back as "\U00191292", and that did not read back.
    void invalidUtf8IsRefusedWithItsKey()
    {
        const std::string text = fuzzFinding("regression_invalid_utf8.yaml");
        auto config = parseConfig(text, ConfigFormat::Yaml, "bad.yaml");
        QVERIFY(!config);
        QCOMPARE(QString::fromStdString(config.error().toString()),
                 QStringLiteral("bad.yaml: line 21: invalid YAML: byte 0xF6 in downcast_bf16 (key at line 4) is not "
                                "valid UTF-8 (YAML is UTF-8 text)"));
        // Every form RFC 3629 forbids (PyYAML's reader refuses each), with the key it is in.
        const struct {
            const char *text;
            const char *message;
        } cases[] = {
            {"a: \xF4\x90\x80\x80\n", "byte 0xF4 in a"},                           // past U+10FFFF
            {"a:\n  b: x\xED\xA0\x80\n", "byte 0xED in a.b"},                      // a surrogate
            {"a: \xE0\x80\xAF\n", "byte 0xE0 in a"},                               // overlong
            {"a: \xF0\x80\x80\xAF\n", "byte 0xF0 in a"},                           // overlong
            {"l:\n- x\nk\xC0\xAF: 1\n", "byte 0xC0 in k\xEF\xBF\xBD\xEF\xBF\xBD"}, // in a key
        };
        for (const auto &c : cases) {
            auto value = parseYamlText(c.text, "c.yaml");
            QVERIFY2(!value, c.text);
            QCOMPARE(QString::fromStdString(value.error().message),
                     QString::fromStdString(std::string("invalid YAML: ") + c.message +
                                            " is not valid UTF-8 (YAML is UTF-8 text)"));
        }
        // The largest code point and the last ones before the surrogates still read.
        auto valid = parseYamlText("a: \xF4\x8F\xBF\xBF \xED\x9F\xBF\n", "c.yaml");
        QVERIFY(valid);
        QCOMPARE(valid->members.at("a").text, std::string("\xF4\x8F\xBF\xBF \xED\x9F\xBF"));
    }

    // Regression (same finding): yaml-cpp 0.7 ends a quote that is never closed at the end of a text
    // that ends with a line break, so the rest of the file became one value.
    void unclosedQuoteIsRefused()
    {
        for (const char *text : {"a: 'x\nb: 1\n", "a: \"x\nb: 1\n", "a: !!str 'x\n", "a: &v 'x''y\n"}) {
            auto value = parseYamlText(text, "c.yaml");
            QVERIFY2(!value, text);
            QVERIFY2(value.error().toString().rfind("c.yaml: line 1: invalid YAML: the ", 0) == 0,
                     value.error().toString().c_str());
            QVERIFY2(value.error().message.find("opens a quoted value that is never closed") != std::string::npos,
                     value.error().toString().c_str());
        }
        auto key = parseYamlText("x: 1\n'k: 2\n", "c.yaml");
        QVERIFY(!key);
        QCOMPARE(QString::fromStdString(key.error().toString()),
                 QStringLiteral("c.yaml: line 2: invalid YAML: the ' at column 1 opens a quoted value that is never "
                                "closed"));
        // Closed quotes with escaped quotes and line breaks inside still read.
        auto closed = parseYamlText("a: 'it''s'\nb: \"say \\\"hi\\\"\"\nc: 'two\n  lines'\n", "c.yaml");
        QVERIFY2(closed, closed ? "" : closed.error().toString().c_str());
        QCOMPARE(closed->members.at("a").text, std::string("it's"));
        QCOMPARE(closed->members.at("b").text, std::string("say \"hi\""));
        QCOMPARE(closed->members.at("c").text, std::string("two lines"));
    }
};

QTEST_GUILESS_MAIN(tst_ConfigQuirks)
#include "tst_configquirks.moc"
