// `accel config` as a user runs it: the real binary, answers piped on stdin, files on disk,
// exit codes and messages.
#include "core/common/fileutil.h"
#include "tests/config/scriptedflows.h"
#include "tests/helpers/sanitizerbuild.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/resource.h>
#include <sys/stat.h>

using namespace accel;
using accel::test::runAccel;

namespace {

QString corpusPath(const QString &name)
{
    return test::dataPath(QStringLiteral("configs/") + name);
}

QString readAll(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return QStringLiteral("<missing %1>").arg(path);
    return QString::fromUtf8(file.readAll());
}

void writeText(const QString &path, const QByteArray &text)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(text);
}

// An input the config fuzz target found, without its first byte (the target's YAML/JSON selector).
QByteArray fuzzFinding(const QString &name)
{
    QFile file(test::sourceDir() + QStringLiteral("/tests/fuzz/corpus/config/") + name);
    if (!file.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(file.fileName()));
    return file.readAll().mid(1);
}

// Peak resident memory of the largest child process this test has waited for, in MiB.
// A normal build's `accel config show` stays well under 256 MiB whatever the input; under ASan
// the shadow memory and quarantine add to every process (278 MiB seen for a 2-line config).
#ifdef ACCEL_UNDER_SANITIZER
constexpr long kChildRssLimitMiB = 768;
#else
constexpr long kChildRssLimitMiB = 256;
#endif
long childrenPeakRssMiB()
{
    struct rusage usage {};
    getrusage(RUSAGE_CHILDREN, &usage);
    return usage.ru_maxrss / 1024;
}

QByteArray lines(const QStringList &answers)
{
    return (answers.join(QLatin1Char('\n')) + QLatin1Char('\n')).toUtf8();
}

} // namespace

class tst_ConfigCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void questionnaireWritesAccelerateFiles_data()
    {
        QTest::addColumn<QStringList>("answers");
        QTest::addColumn<QString>("expected");
        for (const test::ScriptedFlow &flow : test::scriptedFlows())
            QTest::newRow(flow.name) << flow.lines << flow.expectedFile;
    }

    void questionnaireWritesAccelerateFiles()
    {
        QFETCH(QStringList, answers);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("out.yaml"));
        const auto result =
            runAccel({QStringLiteral("config"), QStringLiteral("--config_file"), target}, 60000, lines(answers));
        QVERIFY2(result.exitCode == 0, qPrintable(result.err + result.out));
        QVERIFY(result.out.contains(QStringLiteral("accel configuration saved at ") + target));
        QCOMPARE(readAll(target), readAll(corpusPath(expected)));
    }

    void questionnaireReAsksAndWritesJson()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("sub/cfg.json"));
        const auto result = runAccel({QStringLiteral("config"), QStringLiteral("--config_file"), target}, 60000,
                                     lines({"", "", "perhaps", "yes", "", "7", "no"}));
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.contains(QStringLiteral("please answer yes or no; got perhaps")));
        QVERIFY(
            result.out.contains(QStringLiteral("expected a number from 1 to 4 or one of: no, fp16, bf16, fp8; got 7")));
        const QJsonObject json = QJsonDocument::fromJson(readAll(target).toUtf8()).object();
        QCOMPARE(json.value(QStringLiteral("distributed_type")).toString(), QStringLiteral("NO"));
        QCOMPARE(json.value(QStringLiteral("use_cpu")).toBool(), true);
        QVERIFY(readAll(target).startsWith(QStringLiteral("{\n  \"compute_environment\": \"LOCAL_MACHINE\",\n")));
    }

    void questionnaireStopsWhenInputEnds()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("x.yaml"));
        // Multi-node needs the main process IP, which has no default.
        const auto result = runAccel({QStringLiteral("config"), QStringLiteral("--config_file"), target}, 60000,
                                     lines({"", "multi-GPU", "2", "1"}));
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(QStringLiteral(
                     "accel config: input ended before 'main_process_ip' was answered (an answer is required)")),
                 qPrintable(result.err));
        QVERIFY(!QFile::exists(target));
    }

    void questionnaireUsesDefaultPath()
    {
        QTemporaryDir dir;
        const auto result = runAccel({QStringLiteral("config")}, 60000, lines({"", "", "yes", "", ""}),
                                     {QStringLiteral("HF_HOME=") + dir.path()});
        QCOMPARE(result.exitCode, 0);
        QCOMPARE(readAll(dir.filePath(QStringLiteral("accelerate/default_config.yaml"))),
                 readAll(corpusPath(QStringLiteral("single_cpu.yaml"))));
    }

    void defaultWritesJsonAndNeverOverwrites()
    {
        QTemporaryDir dir;
        const QStringList env{QStringLiteral("HF_HOME="), QStringLiteral("XDG_CACHE_HOME=") + dir.path()};
        const QString target = dir.filePath(QStringLiteral("huggingface/accelerate/default_config.yaml"));
        auto result = runAccel({QStringLiteral("config"), QStringLiteral("default")}, 60000, {}, env);
        QCOMPARE(result.exitCode, 0);
        if (QDir(QStringLiteral("/proc/driver/nvidia/gpus")).exists())
            QSKIP("this machine has NVIDIA GPUs; the CPU default file cannot be compared");
        QCOMPARE(readAll(target), readAll(corpusPath(QStringLiteral("default_config_json.yaml"))));
        result = runAccel({QStringLiteral("config"), QStringLiteral("default"), QStringLiteral("--mixed_precision"),
                           QStringLiteral("bf16")},
                          60000, {}, env);
        QCOMPARE(result.exitCode, 1);
        QCOMPARE(
            result.err,
            QStringLiteral("accel config default: %1 already exists; remove it first or pass --config_file to write "
                           "elsewhere\n")
                .arg(target));
        const QString json = dir.filePath(QStringLiteral("bf16.json"));
        result = runAccel({QStringLiteral("config"), QStringLiteral("default"),
                           QStringLiteral("--mixed_precision=bf16"), QStringLiteral("--config_file"), json});
        QCOMPARE(result.exitCode, 0);
        QCOMPARE(readAll(json), readAll(corpusPath(QStringLiteral("default_config_bf16.json"))));
        result = runAccel({QStringLiteral("config"), QStringLiteral("default"), QStringLiteral("--mixed_precision"),
                           QStringLiteral("fp32")});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err,
                 QStringLiteral(
                     "accel config default: option '--mixed_precision': 'fp32' is not one of no, fp16, bf16, fp8\n"));
    }

    void showPrintsWhatAccelerateWrites()
    {
        auto result = runAccel({QStringLiteral("config"), QStringLiteral("show"),
                                corpusPath(QStringLiteral("deepspeed_zero3_nvme.yaml"))});
        QCOMPARE(result.exitCode, 0);
        QCOMPARE(result.out, readAll(corpusPath(QStringLiteral("deepspeed_zero3_nvme.yaml"))));
        // JSON text in a .yaml file shows as YAML.
        result = runAccel({QStringLiteral("config"), QStringLiteral("show"), QStringLiteral("--config_file"),
                           corpusPath(QStringLiteral("default_config_json.yaml"))});
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.startsWith(
            QStringLiteral("compute_environment: LOCAL_MACHINE\ndebug: false\ndistributed_type: 'NO'\n")));

        result = runAccel({QStringLiteral("config"), QStringLiteral("show"), corpusPath(QStringLiteral("fsdp2.yaml")),
                           QStringLiteral("--json")});
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.out.startsWith(QStringLiteral("{\n  \"schema\": \"accel.config\",\n  \"version\": 1,\n")));
        const QJsonObject json = QJsonDocument::fromJson(result.out.toUtf8()).object();
        QCOMPARE(json.value(QStringLiteral("config"))
                     .toObject()
                     .value(QStringLiteral("fsdp_config"))
                     .toObject()
                     .value(QStringLiteral("fsdp_version"))
                     .toInt(),
                 2);

        result = runAccel({QStringLiteral("config"), QStringLiteral("show"), QStringLiteral("/nonexistent/c.yaml")});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err,
                 QStringLiteral("accel config show: /nonexistent/c.yaml: cannot open: No such file or directory\n"));
    }

    void validateExitCodesAndMessages()
    {
        QTemporaryDir dir;
        auto result = runAccel(
            {QStringLiteral("config"), QStringLiteral("validate"), corpusPath(QStringLiteral("multi_gpu.yaml"))});
        QCOMPARE(result.exitCode, 0);
        QCOMPARE(result.out, corpusPath(QStringLiteral("multi_gpu.yaml")) + QStringLiteral(": valid (0 warnings)\n"));

        const QString bad = dir.filePath(QStringLiteral("config.yaml"));
        writeText(bad, "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_sharding_strategy: FULL\n");
        result = runAccel({QStringLiteral("config"), QStringLiteral("validate"), bad});
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(
            result.err.startsWith(
                QStringLiteral("error: %1: line 4: fsdp_sharding_strategy: expected one of FULL_SHARD, SHARD_GRAD_OP, "
                               "NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2; got FULL\n")
                    .arg(bad)),
            qPrintable(result.err));
        QVERIFY(result.err.endsWith(QStringLiteral("accel config validate: %1: 1 error, 0 warnings\n").arg(bad)));
        QVERIFY(result.out.isEmpty());

        const QString crossField = dir.filePath(QStringLiteral("cross.yaml"));
        writeText(crossField,
                  "distributed_type: MULTI_GPU\nnum_processes: 4\nnum_machines: 2\nenable_cpu_affinity: true\n");
        result = runAccel({QStringLiteral("config"), QStringLiteral("validate"), crossField, QStringLiteral("--json")});
        QCOMPARE(result.exitCode, 2);
        QVERIFY(result.out.startsWith(
            QStringLiteral("{\n  \"schema\": \"accel.config.validation\",\n  \"version\": 1,\n")));
        const QJsonObject json = QJsonDocument::fromJson(result.out.toUtf8()).object();
        QCOMPARE(json.value(QStringLiteral("valid")).toBool(), false);
        QCOMPARE(json.value(QStringLiteral("errors")).toInt(), 1);
        QCOMPARE(json.value(QStringLiteral("warnings")).toInt(), 1);
        QVERIFY(result.err.contains(QStringLiteral("main_process_ip: required when num_machines is 2")));

        result = runAccel(
            {QStringLiteral("config"), QStringLiteral("validate"), dir.filePath(QStringLiteral("missing.yaml"))});
        QCOMPARE(result.exitCode, 2);
    }

    // Regression (hardening round 3): validate said "valid", exit 0, for what launch refuses before
    // parsing: a FIFO (never read, never waited for), a device, a folder, a file over the 1 MiB limit
    // (a sparse 1 GiB file: refused by its size, nothing read) and 90,000 unknown keys (1.9 MB).
    void validateRefusesWhatLaunchRefuses()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath(QStringLiteral("fifo.yaml"));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        const QString sparse = dir.filePath(QStringLiteral("huge.yaml"));
        {
            QFile file(sparse);
            QVERIFY(file.open(QIODevice::WriteOnly));
            QVERIFY(file.resize(qint64(1) << 30));
        }
        QByteArray keys = "distributed_type: NO\n";
        for (int i = 0; i < 90000; ++i)
            keys += "unknown_key_" + QByteArray::number(i).rightJustified(6, '0') + ": 1\n";
        const QString many = dir.filePath(QStringLiteral("many.yaml"));
        writeText(many, keys);
        const struct {
            QString path;
            QString message;
        } cases[] = {
            {fifo, QStringLiteral("is a FIFO (named pipe), expected a regular file")},
            {QStringLiteral("/dev/zero"), QStringLiteral("is a character device, expected a regular file")},
            {dir.path(), QStringLiteral("is a folder, expected a regular file")},
            {sparse, QStringLiteral("file too large: 1073741824 bytes (the limit for this file is 1048576 bytes)")},
            {many, QStringLiteral("file too large: 1980021 bytes (the limit for this file is 1048576 bytes)")},
        };
        for (const auto &c : cases) {
            auto result = runAccel({QStringLiteral("config"), QStringLiteral("validate"), c.path}, 20000);
            QCOMPARE(result.exitCode, 2);
            QVERIFY(result.out.isEmpty());
            QCOMPARE(result.err, QStringLiteral("error: %1: %2\naccel config validate: %1: 1 error, 0 warnings\n")
                                     .arg(c.path, c.message));
            result = runAccel({QStringLiteral("config"), QStringLiteral("validate"), QStringLiteral("--json"), c.path},
                              20000);
            QCOMPARE(result.exitCode, 2);
            const QJsonObject json = QJsonDocument::fromJson(result.out.toUtf8()).object();
            QCOMPARE(json.value(QStringLiteral("valid")).toBool(true), false);
            QCOMPARE(json.value(QStringLiteral("errors")).toInt(), 1);
            // launch refuses the same file with the same message.
            result = runAccel({QStringLiteral("launch"), QStringLiteral("--config_file"), c.path,
                               QStringLiteral("--dry_run"), QStringLiteral("/bin/true")},
                              20000);
            QCOMPARE(result.exitCode, 2);
            QVERIFY2(result.err.contains(c.path + QStringLiteral(": ") + c.message), qPrintable(result.err));
        }
    }

    // The fuzz findings config-loadall-slow (yaml-cpp started endless empty documents at a stray
    // ',': 7.6 s and 3.7 GB before std::bad_alloc) and config-invalid-utf8-roundtrip (F6 91 8A 92
    // was accepted and written back as "\U00191292", which did not read back): both are bad input
    // named by file and line, refused at once by show and validate.
    void fuzzFindingsAreRefusedByName_data()
    {
        QTest::addColumn<QString>("finding");
        QTest::addColumn<QString>("message");
        QTest::newRow("stray comma") << QStringLiteral("regression_loadall_stray_comma.yaml")
                                     << QStringLiteral("line 4: invalid YAML: ',' outside [ ] or { } cannot start a "
                                                       "value");
        QTest::newRow("invalid UTF-8") << QStringLiteral("regression_invalid_utf8.yaml")
                                       << QStringLiteral("line 21: invalid YAML: byte 0xF6 in downcast_bf16 (key at "
                                                         "line 4) is not valid UTF-8 (YAML is UTF-8 text)");
    }

    void fuzzFindingsAreRefusedByName()
    {
        QFETCH(QString, finding);
        QFETCH(QString, message);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.yaml"));
        writeText(path, fuzzFinding(finding));
        QElapsedTimer timer;
        timer.start();
        auto result =
            runAccel({QStringLiteral("config"), QStringLiteral("show"), QStringLiteral("--config_file"), path}, 30000);
        QVERIFY2(timer.elapsed() < 5000, QByteArray::number(timer.elapsed()));
        // The largest child so far: this one, or an earlier one that was already checked.
        QVERIFY2(childrenPeakRssMiB() < kChildRssLimitMiB, QByteArray::number(qlonglong(childrenPeakRssMiB())));
        QCOMPARE(result.exitCode, 2);
        QVERIFY(result.out.isEmpty());
        QVERIFY2(result.err.endsWith(QStringLiteral("accel config show: %1: %2\n").arg(path, message)),
                 qPrintable(result.err));

        result = runAccel({QStringLiteral("config"), QStringLiteral("validate"), path}, 30000);
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err,
                 QStringLiteral("error: %1: %2\naccel config validate: %1: 1 error, 0 warnings\n").arg(path, message));
    }

    void updateRewritesLegacyFiles()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("old.yaml"));
        writeText(file, "distributed_type: MULTI_CPU\nnum_processes: 2\nfp16: true\nipex_config:\n  ipex: true\n");
        auto result =
            runAccel({QStringLiteral("config"), QStringLiteral("update"), QStringLiteral("--config_file"), file});
        QCOMPARE(result.exitCode, 0);
        QCOMPARE(readAll(file), QStringLiteral("compute_environment: LOCAL_MACHINE\n"
                                               "debug: false\n"
                                               "distributed_type: MULTI_CPU\n"
                                               "downcast_bf16: false\n"
                                               "enable_cpu_affinity: false\n"
                                               "ipex_config:\n"
                                               "  ipex: true\n"
                                               "machine_rank: 0\n"
                                               "main_training_function: main\n"
                                               "mixed_precision: fp16\n"
                                               "num_machines: 1\n"
                                               "num_processes: 2\n"
                                               "rdzv_backend: static\n"
                                               "same_network: false\n"
                                               "tpu_use_cluster: false\n"
                                               "tpu_use_sudo: false\n"
                                               "use_cpu: false\n"));
        QVERIFY(result.err.contains(QStringLiteral("fp16: warning: legacy key, replaced by mixed_precision")));

        const QString broken = dir.filePath(QStringLiteral("broken.yaml"));
        writeText(broken, "distributed_type: NO\nnum_procs: 1\n");
        result = runAccel({QStringLiteral("config"), QStringLiteral("update"), broken});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(readAll(broken), QStringLiteral("distributed_type: NO\nnum_procs: 1\n")); // untouched
    }

    void toFsdp2()
    {
        QTemporaryDir dir;
        const QString input = dir.filePath(QStringLiteral("fsdp1.yaml"));
        QVERIFY(QFile::copy(corpusPath(QStringLiteral("fsdp1_legacy_strategy.yaml")), input));
        const QString output = dir.filePath(QStringLiteral("fsdp2.yaml"));
        auto result = runAccel(
            {QStringLiteral("config"), QStringLiteral("to-fsdp2"), input, QStringLiteral("--output_file"), output});
        QCOMPARE(result.exitCode, 0);
        QCOMPARE(readAll(output), QStringLiteral("compute_environment: LOCAL_MACHINE\n"
                                                 "debug: false\n"
                                                 "distributed_type: FSDP\n"
                                                 "downcast_bf16: 'no'\n"
                                                 "enable_cpu_affinity: false\n"
                                                 "fsdp_config:\n"
                                                 "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n"
                                                 "  fsdp_min_num_params: 100000000\n"
                                                 "  fsdp_offload_params: true\n"
                                                 "  fsdp_reshard_after_forward: true\n"
                                                 "  fsdp_state_dict_type: FULL_STATE_DICT\n"
                                                 "  fsdp_version: 2\n"
                                                 "machine_rank: 0\n"
                                                 "main_training_function: main\n"
                                                 "mixed_precision: fp16\n"
                                                 "num_machines: 1\n"
                                                 "num_processes: 2\n"
                                                 "rdzv_backend: static\n"
                                                 "same_network: true\n"
                                                 "tpu_env: []\n"
                                                 "tpu_use_cluster: false\n"
                                                 "tpu_use_sudo: false\n"
                                                 "use_cpu: false\n"));
        QVERIFY(result.err.contains(
            QStringLiteral("fsdp_sharding_strategy FULL_SHARD becomes fsdp_reshard_after_forward: true")));
        QVERIFY(result.err.contains(QStringLiteral("fsdp_backward_prefetch removed")));

        // The output must not exist; exactly one of --output_file / --overwrite.
        result = runAccel(
            {QStringLiteral("config"), QStringLiteral("to-fsdp2"), input, QStringLiteral("--output_file"), output});
        QCOMPARE(result.exitCode, 2);
        result = runAccel({QStringLiteral("config"), QStringLiteral("to-fsdp2"), input});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err,
                 QStringLiteral("accel config to-fsdp2: pass exactly one of --output_file PATH and --overwrite\n"));

        // Already FSDP2: nothing to do, file untouched.
        const QString before = readAll(output);
        result = runAccel({QStringLiteral("config"), QStringLiteral("to-fsdp2"), QStringLiteral("--config_file"),
                           output, QStringLiteral("--overwrite")});
        QCOMPARE(result.exitCode, 0);
        QVERIFY(result.err.contains(QStringLiteral("fsdp_version is already 2; nothing to convert")));
        QCOMPARE(readAll(output), before);

        // --overwrite converts in place.
        result = runAccel({QStringLiteral("config"), QStringLiteral("to-fsdp2"), input, QStringLiteral("--overwrite")});
        QCOMPARE(result.exitCode, 0);
        QCOMPARE(readAll(input), before);
    }

    // `accelerate to-fsdp2` is a top-level command: `accel to-fsdp2` converts the same way and
    // names itself in its messages.
    void toFsdp2AtTopLevel()
    {
        QTemporaryDir dir;
        const QString input = dir.filePath(QStringLiteral("fsdp1.yaml"));
        QVERIFY(QFile::copy(corpusPath(QStringLiteral("fsdp1_legacy_strategy.yaml")), input));
        const QString viaConfig = dir.filePath(QStringLiteral("via-config.yaml"));
        const QString topLevel = dir.filePath(QStringLiteral("top-level.yaml"));
        auto result = runAccel(
            {QStringLiteral("config"), QStringLiteral("to-fsdp2"), input, QStringLiteral("--output_file"), viaConfig});
        QCOMPARE(result.exitCode, 0);
        result = runAccel({QStringLiteral("to-fsdp2"), QStringLiteral("--config_file"), input,
                           QStringLiteral("--output_file"), topLevel});
        QCOMPARE(result.exitCode, 0);
        QCOMPARE(result.out, QStringLiteral("accel to-fsdp2: wrote %1\n").arg(topLevel));
        QVERIFY(result.err.contains(QStringLiteral("fsdp_backward_prefetch removed")));
        QCOMPARE(readAll(topLevel), readAll(viaConfig));

        result = runAccel({QStringLiteral("to-fsdp2"), input});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err,
                 QStringLiteral("accel to-fsdp2: pass exactly one of --output_file PATH and --overwrite\n"));
        result = runAccel({QStringLiteral("to-fsdp2"), QStringLiteral("--help")});
        QCOMPARE(result.exitCode, 0);
        QVERIFY2(result.out.startsWith(QStringLiteral("usage: accel to-fsdp2")), qPrintable(result.out));
    }

    void helpAndUsageErrors()
    {
        for (const char *sub : {"", "default", "show", "validate", "update", "to-fsdp2", "cluster"}) {
            QStringList args{QStringLiteral("config")};
            if (*sub)
                args << QString::fromLatin1(sub);
            args << QStringLiteral("--help");
            const auto result = runAccel(args);
            QCOMPARE(result.exitCode, 0);
            QVERIFY2(result.out.startsWith(QStringLiteral("usage: accel config")), qPrintable(result.out));
        }
        auto result = runAccel({QStringLiteral("config"), QStringLiteral("shw")});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err, QStringLiteral("accel config: unknown sub-command 'shw' (expected one of default, show, "
                                            "validate, update, to-fsdp2, cluster)\n"));
        result = runAccel({QStringLiteral("config"), QStringLiteral("validate"), QStringLiteral("--jsn")});
        QCOMPARE(result.exitCode, 2);
        QCOMPARE(result.err,
                 QStringLiteral("accel config validate: unknown option '--jsn' (did you mean '--json'?)\n"));
    }
};

QTEST_GUILESS_MAIN(tst_ConfigCli)
#include "tst_configcli.moc"
