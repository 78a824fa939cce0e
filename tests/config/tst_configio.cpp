// Reading and writing Accelerate config files: byte identity over the corpus in
// tests/data/configs (files in the exact format Accelerate writes), JSON inside .yaml, the
// YAML emitter against PyYAML itself, Python float formatting, default path rules.
#include "core/common/fileutil.h"
#include "core/config/configio.h"
#include "core/config/configschemadoc.h"
#include "core/config/configvalue.h"
#include "core/config/schemakey.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdlib>

using namespace accel;
using namespace accel::config;

namespace {

QStringList corpusFiles()
{
    QDir dir(test::dataPath(QStringLiteral("configs")));
    return dir.entryList({QStringLiteral("*.yaml"), QStringLiteral("*.json")}, QDir::Files, QDir::Name);
}

std::string readText(const QString &path)
{
    auto text = fileutil::readFile(path.toStdString());
    return text ? *text : std::string();
}

// Sets or unsets an environment variable for the scope.
class EnvGuard {
public:
    EnvGuard(const char *name, const char *value) : m_name(name)
    {
        if (const char *old = std::getenv(name))
            m_old = old;
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~EnvGuard()
    {
        if (m_old)
            ::setenv(m_name, m_old->c_str(), 1);
        else
            ::unsetenv(m_name);
    }

private:
    const char *m_name;
    std::optional<std::string> m_old;
};

} // namespace

class tst_ConfigIo : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void corpusIsPresent() { QVERIFY2(corpusFiles().size() >= 30, qPrintable(QString::number(corpusFiles().size()))); }

    void roundTripIsByteIdentical_data()
    {
        QTest::addColumn<QString>("file");
        for (const QString &name : corpusFiles())
            QTest::newRow(qPrintable(name)) << name;
    }

    void roundTripIsByteIdentical()
    {
        QFETCH(QString, file);
        const QString path = test::dataPath(QStringLiteral("configs/") + file);
        const std::string original = readText(path);
        QVERIFY(!original.empty());
        Diagnostics diagnostics;
        auto config = loadConfigFile(path.toStdString(), &diagnostics);
        QVERIFY2(config.has_value(), config ? "" : config.error().toString().c_str());
        QVERIFY(!hasErrors(diagnostics));
        // JSON text in a .yaml file is written back as JSON only when asked for JSON.
        const bool jsonText = original.front() == '{';
        const std::string saved =
            serializeConfig(*config, jsonText ? ConfigFormat::Json : formatForPath(path.toStdString()));
        QCOMPARE(QString::fromStdString(saved), QString::fromStdString(original));

        // saveConfigFile writes the same bytes, into a folder it creates.
        QTemporaryDir dir;
        const std::string target =
            dir.filePath(QStringLiteral("nested/folder/") + (jsonText ? QStringLiteral("out.json") : file))
                .toStdString();
        QVERIFY(saveConfigFile(*config, target).has_value());
        QCOMPARE(QString::fromStdString(readText(QString::fromStdString(target))), QString::fromStdString(original));
    }

    void jsonInYamlFileLoads()
    {
        auto config = loadConfigFile(test::dataPath(QStringLiteral("configs/default_config_json.yaml")).toStdString());
        QVERIFY(config.has_value());
        QCOMPARE(config->distributedType, DistributedType::No);
        QCOMPARE(config->useCpu.value_or(false), true);
        QVERIFY(config->mixedPrecision == MixedPrecision::No);
        QVERIFY(std::holds_alternative<bool>(*config->downcastBf16));
        QCOMPARE(config->source.lineOf("use_cpu"), 16);
    }

    void typedValuesOfTheCorpus()
    {
        auto fsdp = loadConfigFile(test::dataPath(QStringLiteral("configs/fsdp1.yaml")).toStdString());
        QVERIFY(fsdp.has_value());
        QCOMPARE(fsdp->distributedType, DistributedType::Fsdp);
        QCOMPARE(*fsdp->fsdp.version, std::int64_t(1));
        QCOMPARE(std::get<std::string>(*fsdp->fsdp.reshardAfterForward), std::string("SHARD_GRAD_OP"));
        auto fp8 = loadConfigFile(test::dataPath(QStringLiteral("configs/fp8_te.yaml")).toStdString());
        QVERIFY(fp8.has_value());
        QCOMPARE(*fp8->fp8.backend, std::string("TE"));
        QCOMPARE(fp8->fp8.overrideLinearPrecision->size(), size_t(3));
        auto sage = loadConfigFile(test::dataPath(QStringLiteral("configs/sagemaker_custom.yaml")).toStdString());
        QVERIFY(sage.has_value());
        QVERIFY(sage->isSageMaker());
        QCOMPARE(std::get<double>(sage->sagemaker.additionalArgs.at("volume_size")), 30.5);
        // toDocument() is the tree serializeConfig() writes.
        const ConfigValue tree = toDocument(*fp8);
        QCOMPARE(tree.members.at("fp8_config").members.at("margin").integer, std::int64_t(0));
        QVERIFY(!tree.members.count("gpu_ids") || tree.members.at("gpu_ids").text == "all");
        QCOMPARE(emitYaml(tree), serializeConfig(*fp8, ConfigFormat::Yaml));
        auto json = loadConfigFile(test::dataPath(QStringLiteral("configs/deepspeed_zero2.json")).toStdString());
        QVERIFY(json.has_value());
        QCOMPARE(*json->deepspeed.gradientClipping, 1.0);
        QCOMPARE(json->source.lineOf("deepspeed_config.zero_stage"), 10);
    }

    void legacyFixUps()
    {
        const std::string text =
            "distributed_type: MULTI_GPU\nfp16: true\ndynamo_backend: INDUCTOR\nnum_processes: 2\n";
        Diagnostics diagnostics;
        auto config = parseConfig(text, ConfigFormat::Yaml, "old.yaml", &diagnostics);
        QVERIFY2(config.has_value(), config ? "" : config.error().toString().c_str());
        QCOMPARE(config->computeEnvironment, ComputeEnvironment::LocalMachine);
        QVERIFY(config->mixedPrecision == MixedPrecision::Fp16);
        QCOMPARE(*config->dynamo.backend, std::string("INDUCTOR"));
        QCOMPARE(*config->useCpu, false);
        QCOMPARE(*config->debug, false);
        QCOMPARE(*config->enableCpuAffinity, false);
        QCOMPARE(diagnostics.size(), size_t(2)); // two legacy-key warnings
        QVERIFY(!hasErrors(diagnostics));

        auto noDynamo = parseConfig("distributed_type: 'NO'\ndynamo_backend: 'NO'\n", ConfigFormat::Yaml, "a.yaml");
        QVERIFY(noDynamo.has_value());
        QVERIFY(noDynamo->dynamo.isEmpty());
        QCOMPARE(*noDynamo->numProcesses, std::int64_t(1)); // NO without num_processes -> 1
        QVERIFY(!noDynamo->mixedPrecision.has_value());

        auto multi = parseConfig("distributed_type: MULTI_CPU\n", ConfigFormat::Yaml, "a.yaml");
        QVERIFY(multi.has_value());
        QCOMPARE(*multi->numProcesses, std::int64_t(-1));
    }

    void updateWritesAccelerateDefaults()
    {
        // What `accelerate config update` writes for a minimal hand-written file.
        auto config = parseConfig("distributed_type: NO\nmixed_precision: no\n", ConfigFormat::Yaml, "min.yaml");
        QVERIFY2(config.has_value(), config ? "" : config.error().toString().c_str());
        QCOMPARE(QString::fromStdString(serializeConfig(*config, ConfigFormat::Yaml)),
                 QStringLiteral("compute_environment: LOCAL_MACHINE\n"
                                "debug: false\n"
                                "distributed_type: 'NO'\n"
                                "downcast_bf16: false\n"
                                "enable_cpu_affinity: false\n"
                                "machine_rank: 0\n"
                                "main_training_function: main\n"
                                "mixed_precision: 'no'\n"
                                "num_machines: 1\n"
                                "num_processes: 1\n"
                                "rdzv_backend: static\n"
                                "same_network: false\n"
                                "tpu_use_cluster: false\n"
                                "tpu_use_sudo: false\n"
                                "use_cpu: false\n"));
    }

    void unprefixedFsdpKeysAreAccepted()
    {
        Diagnostics diagnostics;
        auto config = parseConfig("distributed_type: FSDP\nfsdp_config:\n  version: 2\n  offload_params: true\n",
                                  ConfigFormat::Yaml, "f.yaml", &diagnostics);
        QVERIFY(config.has_value());
        QCOMPARE(*config->fsdp.version, std::int64_t(2));
        QCOMPARE(*config->fsdp.offloadParams, true);
        QCOMPARE(diagnostics.size(), size_t(2));
        QCOMPARE(QString::fromStdString(diagnostics[0].toString()),
                 QStringLiteral("f.yaml: line 4: offload_params: warning: written without the 'fsdp_' prefix; read "
                                "(and saved) as 'fsdp_offload_params'"));
    }

    void pythonFloatRepr_data()
    {
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("repr");
        QTest::newRow("1.0") << 1.0 << "1.0";
        QTest::newRow("0.1") << 0.1 << "0.1";
        QTest::newRow("1e-05") << 1e-05 << "1e-05";
        QTest::newRow("0.0001") << 0.0001 << "0.0001";
        QTest::newRow("1e16") << 1e16 << "1e+16";
        QTest::newRow("1e15") << 1e15 << "1000000000000000.0";
        QTest::newRow("123456789.123") << 123456789.123 << "123456789.123";
        QTest::newRow("-2.5") << -2.5 << "-2.5";
        QTest::newRow("1.5e-07") << 1.5e-07 << "1.5e-07";
        QTest::newRow("1e100") << 1e100 << "1e+100";
        QTest::newRow("0.30000000000000004") << 0.1 + 0.2 << "0.30000000000000004";
        QTest::newRow("-0.0") << -0.0 << "-0.0";
    }

    void pythonFloatRepr()
    {
        QFETCH(double, value);
        QFETCH(QString, repr);
        QCOMPARE(QString::fromStdString(config::pythonFloatRepr(value)), repr);
    }

    void yamlScalarStyles()
    {
        ConfigValue map = ConfigValue::map();
        for (const char *text :
             {"no", "yes",   "on",   "off",  "true", "null",       "1.0", "12",   "0x1f",      "~",
              "",   "plain", "a: b", "a #b", "- x",  "2024-01-01", ":x",  "it's", "tab\there", "caf\xc3\xa9"})
            map.members[std::string("k_") + text] = ConfigValue::fromString(text);
        map.members["float"] = ConfigValue::fromFloat(1e-5);
        map.members["big"] = ConfigValue::fromFloat(1e16);
        map.members["inf"] = ConfigValue::fromFloat(INFINITY);
        map.members["empty_list"] = ConfigValue::list();
        map.members["empty_map"] = ConfigValue::map();
        QCOMPARE(QString::fromStdString(emitYaml(map)), QStringLiteral("big: 1.0e+16\n"
                                                                       "empty_list: []\n"
                                                                       "empty_map: {}\n"
                                                                       "float: 1.0e-05\n"
                                                                       "inf: .inf\n"
                                                                       "k_: ''\n"
                                                                       "k_- x: '- x'\n"
                                                                       "k_0x1f: '0x1f'\n"
                                                                       "k_1.0: '1.0'\n"
                                                                       "k_12: '12'\n"
                                                                       "k_2024-01-01: '2024-01-01'\n"
                                                                       "k_:x: :x\n"
                                                                       "'k_a #b': 'a #b'\n"
                                                                       "'k_a: b': 'a: b'\n"
                                                                       "\"k_caf\\xE9\": \"caf\\xE9\"\n"
                                                                       "k_it's: it's\n"
                                                                       "k_no: 'no'\n"
                                                                       "k_null: 'null'\n"
                                                                       "k_off: 'off'\n"
                                                                       "k_on: 'on'\n"
                                                                       "k_plain: plain\n"
                                                                       "\"k_tab\\there\": \"tab\\there\"\n"
                                                                       "k_true: 'true'\n"
                                                                       "k_yes: 'yes'\n"
                                                                       "k_~: '~'\n"));
    }

    // Random documents through our emitter and through PyYAML's safe_dump: the bytes must agree.
    void emitterMatchesPyYaml()
    {
        QProcess probe;
        probe.start(QStringLiteral("python3"), {QStringLiteral("-c"), QStringLiteral("import yaml")});
        if (!probe.waitForFinished(20000) || probe.exitStatus() != QProcess::NormalExit || probe.exitCode() != 0)
            QSKIP("python3 with PyYAML is not available to cross-check the emitter");
        QRandomGenerator random(20261122);
        const char *words[] = {"no",
                               "yes",
                               "NO",
                               "On",
                               "null",
                               "~",
                               "1.0",
                               "1e5",
                               "010",
                               "0x1F",
                               "1_000",
                               "12:30",
                               "main",
                               "all",
                               "0,1,3",
                               "/home/user/hostfile",
                               "a: b",
                               "x #y",
                               "#c",
                               "- d",
                               "it's",
                               "say \"hi\"",
                               "caf\xc3\xa9",
                               "tab\tx",
                               "line\nbreak",
                               " lead",
                               "trail ",
                               "",
                               "=",
                               "<<",
                               "2024-01-01",
                               "-",
                               "?",
                               "a,b",
                               "[x]",
                               "{y}",
                               "*star",
                               "&amp",
                               "!bang",
                               "%pct",
                               "@at",
                               "`tick",
                               "---x",
                               "...y",
                               "LlamaDecoderLayer",
                               "ml.p3.2xlarge",
                               "+1",
                               ".5",
                               "-.inf",
                               "True",
                               "FALSE"};
        const int wordCount = int(sizeof words / sizeof words[0]);
        std::function<ConfigValue(int)> make = [&](int depth) -> ConfigValue {
            const int kind = random.bounded(depth > 2 ? 6 : 8);
            switch (kind) {
            case 0:
                return ConfigValue::fromBool(random.bounded(2) == 1);
            case 1:
                return ConfigValue::fromInt(std::int64_t(random.bounded(-100000, 100000)) *
                                            (random.bounded(3) == 0 ? 100000 : 1));
            case 2:
                return ConfigValue::fromFloat(std::ldexp(random.generateDouble() - 0.5, random.bounded(-30, 60)));
            case 3:
                return ConfigValue::null();
            case 4: {
                std::string text;
                const int parts = 1 + random.bounded(random.bounded(4) == 0 ? 30 : 3);
                for (int i = 0; i < parts; ++i)
                    text += (i ? " " : "") + std::string(words[random.bounded(wordCount)]);
                return ConfigValue::fromString(text);
            }
            case 5:
                return ConfigValue::fromString(words[random.bounded(wordCount)]);
            case 6: {
                ConfigValue list = ConfigValue::list();
                const int n = random.bounded(4);
                for (int i = 0; i < n; ++i)
                    list.items.push_back(make(depth + 1));
                return list;
            }
            default: {
                ConfigValue map = ConfigValue::map();
                const int n = random.bounded(5);
                for (int i = 0; i < n; ++i)
                    map.members[std::string(words[random.bounded(wordCount)]) + "_" + std::to_string(i)] =
                        make(depth + 1);
                return map;
            }
            }
        };
        QTemporaryDir dir;
        QStringList inputs;
        std::vector<std::string> expected;
        for (int i = 0; i < 300; ++i) {
            ConfigValue document = ConfigValue::map();
            const int n = 1 + random.bounded(8);
            for (int k = 0; k < n; ++k)
                document.members["key" + std::to_string(k)] = make(0);
            const QString path = dir.filePath(QStringLiteral("doc%1.json").arg(i));
            QFile file(path); // plain writes: 300 fsyncs would dominate the test's time
            QVERIFY(file.open(QIODevice::WriteOnly));
            const std::string json = emitJson(document);
            file.write(json.data(), qint64(json.size()));
            inputs << path;
            expected.push_back(emitYaml(document));
        }
        const QString script = QStringLiteral("import json, sys, yaml\n"
                                              "for path in sys.argv[1:]:\n"
                                              "    with open(path) as f:\n"
                                              "        data = json.load(f)\n"
                                              "    with open(path[:-5] + '.yaml', 'w') as f:\n"
                                              "        yaml.safe_dump(data, f)\n");
        QProcess python;
        python.start(QStringLiteral("python3"), QStringList{QStringLiteral("-c"), script} + inputs);
        QVERIFY(python.waitForFinished(60000));
        QCOMPARE(python.exitCode(), 0);
        for (int i = 0; i < inputs.size(); ++i) {
            QString yamlPath = inputs[i];
            yamlPath.chop(5);
            const std::string pyyaml = readText(yamlPath + QStringLiteral(".yaml"));
            if (pyyaml != expected[size_t(i)]) {
                qWarning().noquote() << "PyYAML:\n"
                                     << QString::fromStdString(pyyaml) << "\nours:\n"
                                     << QString::fromStdString(expected[size_t(i)]);
                QFAIL(qPrintable(QStringLiteral("document %1 differs").arg(i)));
            }
            // And our reader reads PyYAML's output back to the same document.
            auto reread = parseYamlText(pyyaml, "doc.yaml");
            QVERIFY(reread.has_value());
            QCOMPARE(QString::fromStdString(emitYaml(*reread)), QString::fromStdString(pyyaml));
        }
    }

    void defaultPathRules()
    {
        {
            EnvGuard hf("HF_HOME", "/opt/hf");
            EnvGuard xdg("XDG_CACHE_HOME", "/ignored");
            QCOMPARE(QString::fromStdString(defaultConfigPath()),
                     QStringLiteral("/opt/hf/accelerate/default_config.yaml"));
        }
        {
            EnvGuard hf("HF_HOME", "~/hfhome");
            EnvGuard home("HOME", "/home/tester");
            QCOMPARE(QString::fromStdString(defaultCacheDir()), QStringLiteral("/home/tester/hfhome/accelerate"));
        }
        {
            EnvGuard hf("HF_HOME", nullptr);
            EnvGuard xdg("XDG_CACHE_HOME", "/var/cache/me");
            QCOMPARE(QString::fromStdString(defaultConfigPath()),
                     QStringLiteral("/var/cache/me/huggingface/accelerate/default_config.yaml"));
        }
        {
            EnvGuard hf("HF_HOME", "");
            EnvGuard xdg("XDG_CACHE_HOME", nullptr);
            EnvGuard home("HOME", "/home/tester");
            QCOMPARE(QString::fromStdString(defaultConfigPath()),
                     QStringLiteral("/home/tester/.cache/huggingface/accelerate/default_config.yaml"));
        }
        QCOMPARE(formatForPath("a.json"), ConfigFormat::Json);
        QCOMPARE(formatForPath("a.yaml"), ConfigFormat::Yaml);
        QCOMPARE(formatForPath("a.yml"), ConfigFormat::Yaml);
        QCOMPARE(formatForPath("a.JSON"), ConfigFormat::Yaml);
    }

    // Regression: yaml-cpp 0.7 starts endless empty documents at a ',' starting a token outside
    // [ ] / { } (found by tst_configfuzz); the reader stops at the second one and names the ','.
    void strayCommaDoesNotHangTheReader()
    {
        for (const char *text :
             {",", ",x: 1\n", "  ,x\n", "# c\n,x\n", "'a' ,\n", "[a],\n", "{\"a\": 1},\n", "!tag ,\n"}) {
            auto result = parseYamlText(text, "c.yaml");
            QVERIFY2(!result.has_value(), text);
            QCOMPARE(QString::fromStdString(result.error().message),
                     QStringLiteral("invalid YAML: ',' outside [ ] or { } cannot start a value"));
        }
        // Commas inside plain scalars and flow collections are text.
        for (const char *text :
             {"gpu_ids: 0,1,3\n", "a: b , c\n", "l: [1, 2]\n", "c:\n- echo a, b\n", "q: 'x, y'\n", "b: |\n  ,x\n"})
            QVERIFY2(parseYamlText(text, "c.yaml").has_value(), text);
    }

    // Regression: yaml-cpp decodes "\xE9", "\N" and "\_" to raw bytes, not UTF-8 (found by tst_configfuzz).
    void latin1EscapesReadAsCodePoints()
    {
        auto value = parseYamlText("a: \"caf\\xE9 \\N \\_ \\u00e9\"\n", "c.yaml");
        QVERIFY(value.has_value());
        QCOMPARE(value->members.at("a").text, std::string("caf\xc3\xa9 \xc2\x85 \xc2\xa0 \xc3\xa9"));
        // And what PyYAML writes for a non-ASCII path loads back to the same path.
        auto config = parseConfig("distributed_type: MULTI_CPU\nnum_processes: 2\nmpirun_config:\n  mpirun_hostfile: "
                                  "\"/home/jos\\xE9/hosts\"\n",
                                  ConfigFormat::Yaml, "c.yaml");
        QVERIFY(config.has_value());
        QCOMPARE(*config->mpirun.mpirunHostfile, std::string("/home/jos\xc3\xa9/hosts"));
        QVERIFY(serializeConfig(*config, ConfigFormat::Yaml).find("mpirun_hostfile: \"/home/jos\\xE9/hosts\"\n") !=
                std::string::npos);
    }

    void unreadableTextIsRefused()
    {
        auto latin1 = parseYamlText("a: caf\xe9\n", "c.yaml");
        QVERIFY(!latin1.has_value());
        QCOMPARE(
            QString::fromStdString(latin1.error().toString()),
            QStringLiteral("c.yaml: line 1: invalid YAML: byte 0xE9 in a is not valid UTF-8 (YAML is UTF-8 text)"));
        auto control = parseYamlText("a: 1\nb: x\x07\n", "c.yaml");
        QVERIFY(!control.has_value());
        QCOMPARE(QString::fromStdString(control.error().toString()),
                 QStringLiteral("c.yaml: line 2: invalid YAML: control character 0x07 in b is not allowed"));
    }

    // Regression: a null required key or a NaN number loaded but could not be saved and re-loaded.
    void savedConfigsAlwaysReload()
    {
        Diagnostics diagnostics;
        auto sage = parseConfig("compute_environment: AMAZON_SAGEMAKER\ndistributed_type: NO\nec2_instance_type: "
                                "ml.p3.2xlarge\niam_role_name:\n",
                                ConfigFormat::Yaml, "s.yaml", &diagnostics);
        QVERIFY(!sage.has_value());
        QCOMPARE(QString::fromStdString(sage.error().toString()),
                 QStringLiteral("s.yaml: iam_role_name: missing (required in a SageMaker config)"));
        auto nan =
            parseConfig("distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  gradient_clipping: .nan\n",
                        ConfigFormat::Yaml, "d.yaml");
        QVERIFY(!nan.has_value());
        QCOMPARE(QString::fromStdString(nan.error().toString()),
                 QStringLiteral("d.yaml: line 4: gradient_clipping: expected a finite number; got .nan"));
    }

    // schema::visitKey reaches each key the schema declares by its dotted name, once, on the
    // member the reader fills (whatever the compute environment), and no other name.
    void everySchemaKeyIsReachedByName()
    {
        struct Count {
            int calls = 0;
            std::optional<std::int64_t> *lastInteger = nullptr;
            void flag(const char *, std::optional<bool> &) { ++calls; }
            void integer(const char *, std::optional<std::int64_t> &v, schema::Range) { ++calls, lastInteger = &v; }
            void number(const char *, std::optional<double> &) { ++calls; }
            void text(const char *, std::optional<std::string> &, const schema::Choices &) { ++calls; }
            void boolOrText(const char *, std::optional<BoolOrString> &, const schema::Choices &) { ++calls; }
            void textList(const char *, std::optional<std::vector<std::string>> &) { ++calls; }
            void flagList(const char *, std::optional<std::vector<bool>> &, size_t, std::optional<BoolOrString> &)
            {
                ++calls;
            }
        };
        std::vector<std::string> keys;
        for (const std::string &key : schema::topLevelKeys(false)) {
            keys.push_back(key);
            for (const std::string &nested : schema::blockKeys(key))
                keys.push_back(key + "." + nested);
        }
        int declared = 0;
        for (const std::string &key : keys) {
            ClusterConfig config;
            Count count;
            const bool found = schema::visitKey(config, key, count);
            QCOMPARE(found, schema::keyRule(key) != nullptr);
            QCOMPARE(count.calls, found ? 1 : 0);
            declared += found;
        }
        QVERIFY2(declared > 80, std::to_string(declared).c_str());

        ClusterConfig sageMaker;
        sageMaker.computeEnvironment = ComputeEnvironment::AmazonSageMaker;
        Count count;
        QVERIFY(schema::visitKey(sageMaker, "fsdp_config.fsdp_version", count));
        QCOMPARE(count.lastInteger, &sageMaker.fsdp.version);
        QVERIFY(schema::visitKey(sageMaker, "main_process_port", count));
        QCOMPARE(count.lastInteger, &sageMaker.mainProcessPort);
        for (const char *unknown : {"fsdp_version", "fsdp_config.", "fsdp_config.fsdp_versions", "num_processe"}) {
            Count none;
            QVERIFY2(!schema::visitKey(sageMaker, unknown, none), unknown);
            QCOMPARE(none.calls, 0);
        }
    }

    // docs/compatibility.md's "Config keys" tables are the schema's rendering, and the rendering
    // lists every key a config may hold (both compute environments, every block).
    void docsListEveryConfigKey()
    {
        const std::string rendering = schema::markdownReference();
        for (const bool sageMaker : {false, true}) {
            for (const std::string &key : schema::topLevelKeys(sageMaker)) {
                const bool block = !schema::blockKeys(key).empty();
                const std::string row = block ? "### `" + key + "`\n" : "| `" + key + "` |";
                QVERIFY2(rendering.find(row) != std::string::npos, key.c_str());
                for (const std::string &nested : schema::blockKeys(key))
                    QVERIFY2(rendering.find("| `" + nested + "` |") != std::string::npos, nested.c_str());
            }
        }
        const std::string docs = readText(test::sourceDir() + QStringLiteral("/docs/compatibility.md"));
        QVERIFY(!docs.empty());
        QVERIFY2(docs.find(rendering) != std::string::npos,
                 "docs/compatibility.md lacks the config schema's rendering (schema::markdownReference())");
    }

    void missingFileIsNotFound()
    {
        auto config = loadConfigFile("/nonexistent/accel.yaml");
        QVERIFY(!config.has_value());
        QCOMPARE(config.error().code, ErrorCode::NotFound);
        QCOMPARE(QString::fromStdString(config.error().context), QStringLiteral("/nonexistent/accel.yaml"));
    }
};

QTEST_GUILESS_MAIN(tst_ConfigIo)
#include "tst_configio.moc"
