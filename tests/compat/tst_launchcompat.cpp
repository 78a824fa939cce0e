// Launch environments against real Accelerate: for a corpus of configs x flag sets,
// `accel launch --dry-run --json` gives rank 0 the variables that Accelerate's own launch code
// computes for the same command line (launch_command_parser, _validate_launch_command, then
// prepare_simple_launcher_cmd_env / prepare_multi_gpu_env / prepare_deepspeed_cmd_env), key for
// key. Variables torchrun adds per worker, and Accel Studio's own, are the only extra keys; every
// other difference is listed below with its reason (and in docs/compatibility.md).
#include "core/common/programs.h"
#include "launcher/ports.h"
#include "tests/compat/oracle.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

using namespace accel;

namespace {

struct Case {
    QString id;
    QStringList argv; // Accelerate's spelling, script last
    QJsonObject env;  // variables set for both sides; null unsets
};

// Set by torchrun for each worker (Accelerate's environment goes through it), or by Accel Studio
// for its run directory; a simple launch with several processes gets torchrun's set too (Accel
// Studio starts every rank itself where Accelerate leaves that to mpirun).
const std::set<QString> &addedKeys()
{
    static const std::set<QString> keys = {
        QStringLiteral("RANK"),
        QStringLiteral("LOCAL_RANK"),
        QStringLiteral("WORLD_SIZE"),
        QStringLiteral("LOCAL_WORLD_SIZE"),
        QStringLiteral("GROUP_RANK"),
        QStringLiteral("GROUP_WORLD_SIZE"),
        QStringLiteral("ROLE_NAME"),
        QStringLiteral("ROLE_RANK"),
        QStringLiteral("ROLE_WORLD_SIZE"),
        QStringLiteral("MASTER_ADDR"),
        QStringLiteral("MASTER_PORT"),
        QStringLiteral("TORCHELASTIC_RESTART_COUNT"),
        QStringLiteral("TORCHELASTIC_MAX_RESTARTS"),
        QStringLiteral("TORCHELASTIC_RUN_ID"),
        QStringLiteral("TORCHELASTIC_USE_AGENT_STORE"),
        QStringLiteral("TORCHELASTIC_ERROR_FILE"),
        QStringLiteral("TORCH_NCCL_ASYNC_ERROR_HANDLING"),
        QStringLiteral("NCCL_ASYNC_ERROR_HANDLING"),
        QStringLiteral("ACCEL_RUN_DIR"),
        QStringLiteral("ACCEL_METRICS_FILE"),
    };
    return keys;
}

// Deliberate value differences: variable -> reason.
const std::map<QString, QString> &deliberate()
{
    static const std::map<QString, QString> reasons = {
        {QStringLiteral("ACCELERATE_FP8_BACKEND"),
         QStringLiteral("upper-cased: the training side parses it case-sensitively and rejects te/ao/msamp")},
        {QStringLiteral("ACCELERATE_CPU_AFFINITY"),
         QStringLiteral("a config's enable_cpu_affinity: true is applied (Accelerate's flag default overrides it)")},
        {QStringLiteral("PYTHONPATH"),
         QStringLiteral("the run's python/ folder is appended: the trackers' start-up hook (docs/trackers.md)")},
    };
    return reasons;
}

QStringList configCorpus()
{
    // Every corpus config accel launch runs: not SageMaker or TPU (unsupported, an error in accel launch),
    // not ipex_config (refused by Accelerate 1.13+), not mpirun (Accelerate needs an MPI installation).
    const QDir corpus(test::dataPath(QStringLiteral("configs")));
    QStringList files;
    for (const QString &name : corpus.entryList({QStringLiteral("*.yaml"), QStringLiteral("*.json")}, QDir::Files)) {
        if (name.startsWith(QLatin1String("sagemaker")) || name.startsWith(QLatin1String("tpu")) ||
            name.contains(QLatin1String("ipex")) || name.contains(QLatin1String("mpirun")))
            continue;
        files << corpus.filePath(name);
    }
    return files;
}

} // namespace

class tst_LaunchCompat : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void environmentEqualsAccelerate()
    {
        ACCEL_REQUIRE_ORACLE(python, QStringLiteral("accelerate"), QStringLiteral("torch"));
        QTemporaryDir dir;
        auto freePort = launcher::pickFreePort();
        QVERIFY(freePort);
        const QString port = QString::number(*freePort);

        // Configs: the corpus, FP8 in the template's spellings, and no config at all.
        QStringList configs = configCorpus();
        const QString fp8 = dir.filePath(QStringLiteral("fp8_template.yaml"));
        {
            QFile file(fp8);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nfp8_config:\n"
                       "  amax_compute_algo: max\n  amax_history_len: 16\n  backend: TE\n  opt_level: O1\n"
                       "  override_linear_precision: [false, false, true]\n  pad_inner_dim: false\n"
                       "  amax_history_length: 32\nmixed_precision: fp8\nnum_processes: 2\ngpu_ids: all\n");
        }
        configs << fp8 << QString();

        const QList<QStringList> flagSets = {
            {},
            {QStringLiteral("--cpu")},
            {QStringLiteral("--cpu"), QStringLiteral("--num_processes"), QStringLiteral("2")},
            {QStringLiteral("--num_processes"), QStringLiteral("2"), QStringLiteral("--mixed_precision"),
             QStringLiteral("fp16"), QStringLiteral("--num_cpu_threads_per_process"), QStringLiteral("3")},
            {QStringLiteral("--mixed_precision"), QStringLiteral("fp8"), QStringLiteral("--fp8_pad_inner_dim"),
             QStringLiteral("false"), QStringLiteral("--fp8_override_linear_precision"), QStringLiteral("true,false,1"),
             QStringLiteral("--fp8_amax_history_len"), QStringLiteral("64"),
             QStringLiteral("--fp8_use_autocast_during_eval")},
            {QStringLiteral("--dynamo_backend"), QStringLiteral("inductor"), QStringLiteral("--dynamo_use_fullgraph"),
             QStringLiteral("--dynamo_mode"), QStringLiteral("max-autotune"), QStringLiteral("--debug")},
            {QStringLiteral("--use_megatron_lm"), QStringLiteral("--num_processes"), QStringLiteral("2"),
             QStringLiteral("--megatron_lm_tp_degree"), QStringLiteral("2"),
             QStringLiteral("--megatron_lm_attention_backend"), QStringLiteral("flash"),
             QStringLiteral("--megatron_lm_eod_mask_loss"), QStringLiteral("no"),
             QStringLiteral("--megatron_lm_hidden_dropout"), QStringLiteral("0")},
            {QStringLiteral("--use_fsdp"), QStringLiteral("--fsdp_version"), QStringLiteral("2"),
             QStringLiteral("--num_processes"), QStringLiteral("4"), QStringLiteral("--use_parallelism_config"),
             QStringLiteral("--parallelism_config_cp_size"), QStringLiteral("2"),
             QStringLiteral("--parallelism_config_sp_size"), QStringLiteral("2"),
             QStringLiteral("--parallelism_config_sp_seq_length_is_variable"), QStringLiteral("false"),
             QStringLiteral("--fsdp_activation_checkpointing_offload"), QStringLiteral("true")},
            {QStringLiteral("--use_deepspeed"), QStringLiteral("--num_processes"), QStringLiteral("2"),
             QStringLiteral("--zero_stage"), QStringLiteral("3"), QStringLiteral("--gradient_clipping"),
             QStringLiteral("1"), QStringLiteral("--gradient_accumulation_steps"), QStringLiteral("4")},
        };

        std::vector<Case> cases;
        for (const QString &config : configs) {
            for (int f = 0; f < flagSets.size(); ++f) {
                Case c;
                c.id = QStringLiteral("%1 x flags%2")
                           .arg(config.isEmpty() ? QStringLiteral("<no config>") : QFileInfo(config).fileName())
                           .arg(f);
                if (!config.isEmpty())
                    c.argv << QStringLiteral("--config_file") << config;
                c.argv << flagSets[f] << QStringLiteral("--main_process_port") << port << QStringLiteral("train.py")
                       << QStringLiteral("--lr") << QStringLiteral("1");
                cases.push_back(c);
            }
        }
        // The CPU thread rule with OMP_NUM_THREADS unset.
        for (const QString &config : {test::dataPath(QStringLiteral("configs/multi_cpu.yaml")), QString()}) {
            Case c;
            c.id = QStringLiteral("%1 x --cpu, OMP_NUM_THREADS unset")
                       .arg(config.isEmpty() ? QStringLiteral("<no config>") : QFileInfo(config).fileName());
            if (!config.isEmpty())
                c.argv << QStringLiteral("--config_file") << config;
            c.argv << QStringLiteral("--cpu") << QStringLiteral("--num_processes") << QStringLiteral("2")
                   << QStringLiteral("--main_process_port") << port << QStringLiteral("train.py");
            c.env[QStringLiteral("OMP_NUM_THREADS")] = QJsonValue::Null;
            cases.push_back(c);
        }

        // Both sides' ranks run the oracle's Python (Accelerate's PYTHON_EXEC), so ours reads the torch
        // version from the Python Accelerate runs in. Without it each of ours asks `python3` on the
        // PATH, which a pyenv shim answers in about 0.2 s: the test took 86.5 s so on the AVX2 EPYC,
        // 43.4 s with it.
        for (Case &c : cases)
            c.env.insert(QString::fromUtf8(pythonProgramVariable), python);
        QJsonArray caseList;
        for (const Case &c : cases)
            caseList.append(QJsonObject{{QStringLiteral("argv"), QJsonArray::fromStringList(c.argv)},
                                        {QStringLiteral("env"), c.env}});
        const QString casesFile = dir.filePath(QStringLiteral("cases.json"));
        {
            QFile file(casesFile);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(QJsonDocument(caseList).toJson());
        }
        QString error;
        const QJsonArray theirs =
            test::runAccelerateOracle(python, {QStringLiteral("launch"), casesFile}, &error).array();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(theirs.size(), qsizetype(cases.size()));

        int agreed = 0, bothRefused = 0, compared = 0;
        QStringList disagreements;
        for (size_t i = 0; i < cases.size(); ++i) {
            const Case &c = cases[i];
            const QJsonObject expected = theirs[qsizetype(i)].toObject();
            QStringList extraEnv;
            for (auto it = c.env.begin(); it != c.env.end(); ++it)
                extraEnv << it.key() + QLatin1Char('=') + it.value().toString();
            const auto ours = test::runAccel(
                QStringList{QStringLiteral("launch"), QStringLiteral("--dry-run"), QStringLiteral("--json")} + c.argv,
                60000, {}, extraEnv);
            ++compared;
            if (expected.contains(QStringLiteral("error"))) {
                if (ours.exitCode != 0)
                    ++bothRefused, ++agreed;
                else
                    disagreements << c.id + QStringLiteral(": Accelerate refuses (") +
                                         expected.value(QStringLiteral("error")).toString().left(300) +
                                         QStringLiteral("), accel launch runs it");
                continue;
            }
            if (ours.exitCode != 0) {
                disagreements << c.id + QStringLiteral(": accel launch refuses: ") + ours.err.trimmed();
                continue;
            }
            const QJsonObject plan = QJsonDocument::fromJson(ours.out.toUtf8()).object();
            const QJsonObject env = plan.value(QStringLiteral("ranks"))
                                        .toArray()
                                        .first()
                                        .toObject()
                                        .value(QStringLiteral("env"))
                                        .toObject();
            const QJsonObject want = expected.value(QStringLiteral("env")).toObject();
            QStringList problems;
            for (auto it = want.begin(); it != want.end(); ++it) {
                const QString got = env.value(it.key()).toString(QStringLiteral("<unset>"));
                if (got != it.value().toString() && !deliberate().count(it.key()) &&
                    !(addedKeys().count(it.key()) && env.contains(it.key())))
                    problems << QStringLiteral("%1: accelerate %2, accel %3").arg(it.key(), it.value().toString(), got);
            }
            for (auto it = env.begin(); it != env.end(); ++it) {
                if (!want.contains(it.key()) && !addedKeys().count(it.key()) && !deliberate().count(it.key()))
                    problems << QStringLiteral("%1: accelerate <unset>, accel %2").arg(it.key(), it.value().toString());
            }
            if (problems.isEmpty())
                ++agreed;
            else
                disagreements << c.id + QStringLiteral(" [") + expected.value(QStringLiteral("launcher")).toString() +
                                     QStringLiteral("]: ") + problems.join(QStringLiteral("; "));
        }
        qInfo("compat launch environments: %d agree of %d tried (%d refused by both)", agreed, compared, bothRefused);
        for (const QString &disagreement : disagreements)
            qWarning().noquote() << disagreement;
        QVERIFY2(disagreements.isEmpty(), "see the warnings above");
    }
};

QTEST_GUILESS_MAIN(tst_LaunchCompat)
#include "tst_launchcompat.moc"
