// Launch command exports: every form re-imports to the same settings, the generated shell is
// valid bash (and shellcheck-clean when shellcheck is installed), and the sbatch script run
// under bash with a fake scontrol/srun starts one launcher per node with that node's rank.
#include "core/config/configio.h"
#include "launcher/export/commandexport.h"
#include "launcher/export/shellquote.h"

#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::launcher::exporting;

namespace {

config::ClusterConfig parseYaml(const char *text)
{
    auto parsed = config::parseConfig(text, config::ConfigFormat::Yaml, "test.yaml");
    if (!parsed)
        qFatal("test config does not parse: %s", parsed.error().toString().c_str());
    return *parsed;
}

std::string yamlOf(const config::ClusterConfig &config)
{
    return config::serializeConfig(config, config::ConfigFormat::Yaml);
}

QString writeFile(const QString &path, const QString &text, bool executable = false)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(path));
    file.write(text.toUtf8());
    file.close();
    if (executable)
        file.setPermissions(file.permissions() | QFileDevice::ExeOwner | QFileDevice::ExeUser);
    return path;
}

struct Shell {
    int exitCode = -1;
    QString out;
    QString err;
};

Shell run(const QString &program, const QStringList &args, const QStringList &env = {})
{
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const QString &entry : env)
        environment.insert(entry.section('=', 0, 0), entry.section('=', 1));
    process.setProcessEnvironment(environment);
    process.start(program, args);
    process.waitForFinished(30000);
    return {process.exitCode(), QString::fromUtf8(process.readAllStandardOutput()),
            QString::fromUtf8(process.readAllStandardError())};
}

} // namespace

class tst_CommandExport : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void shellQuoting();
    void roundTrip_data();
    void roundTrip();
    void torchrunCarriesEnvironment();
    void otherInterpreterRunsTheLaunchers();
    void jobProgram();
    void sbatchRunsOnePerNode();
    void badInputIsReported();
    void sbatchHeaderNewlineIsRefused_data();
    void sbatchHeaderNewlineIsRefused();
};

void tst_CommandExport::shellQuoting()
{
    const std::vector<std::string> words = {"plain", "with space", "it's", "$HOME", "", "a\"b", "x\ny"};
    const std::string joined = shellJoin(words);
    auto back = shellSplit(joined);
    QVERIFY(back);
    QCOMPARE(*back, words);
    // What bash itself makes of the quoted words.
    const Shell shell = run("bash", {"-c", QString::fromStdString("printf '%s|' " + joined)});
    QCOMPARE(shell.out, QString("plain|with space|it's|$HOME||a\"b|x\ny|"));
    QVERIFY(!shellSplit("echo 'open"));
}

void tst_CommandExport::roundTrip_data()
{
    QTest::addColumn<QString>("yaml");
    QTest::newRow("single-cpu") << "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nmixed_precision: 'no'\n"
                                   "num_processes: 1\nuse_cpu: true\n";
    QTest::newRow("multi-cpu-2") << "distributed_type: MULTI_CPU\nmixed_precision: bf16\nnum_processes: 2\n"
                                    "num_machines: 1\nmain_process_port: 29600\n";
    QTest::newRow("multi-gpu-2-nodes") << "distributed_type: MULTI_GPU\nmixed_precision: fp16\nnum_processes: 8\n"
                                          "num_machines: 2\nmachine_rank: 0\nmain_process_ip: 10.1.2.3\n"
                                          "main_process_port: 29555\ngpu_ids: all\n";
    QTest::newRow("fsdp2") << "distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 4\n"
                              "fsdp_config:\n  fsdp_version: 2\n  fsdp_reshard_after_forward: true\n"
                              "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                              "  fsdp_transformer_layer_cls_to_wrap: 'Block, Layer'\n"
                              "  fsdp_state_dict_type: SHARDED_STATE_DICT\n  fsdp_cpu_ram_efficient_loading: true\n"
                              "  fsdp_offload_params: false\n  fsdp_activation_checkpointing: false\n";
    QTest::newRow("deepspeed") << "distributed_type: DEEPSPEED\nmixed_precision: bf16\nnum_processes: 2\n"
                                  "deepspeed_config:\n  zero_stage: 2\n  offload_optimizer_device: cpu\n"
                                  "  offload_param_device: none\n  gradient_accumulation_steps: 4\n"
                                  "  gradient_clipping: 1.0\n  zero3_init_flag: false\n";
    QTest::newRow("fp8") << "distributed_type: MULTI_GPU\nmixed_precision: fp8\nnum_processes: 2\n"
                            "fp8_config:\n  backend: TE\n  fp8_format: HYBRID\n  margin: 0\n  interval: 1\n"
                            "  amax_history_length: 1024\n  amax_compute_algorithm: max\n"
                            "  override_linear_precision: [false, false, true]\n  use_autocast_during_eval: false\n";
}

void tst_CommandExport::roundTrip()
{
    QFETCH(QString, yaml);
    QTemporaryDir dir;
    const config::ClusterConfig original = parseYaml(yaml.toUtf8().constData());
    const std::string configPath = (dir.path() + "/cluster config.yaml").toStdString();
    QVERIFY(config::saveConfigFile(original, configPath));

    ExportInput input;
    input.config = original;
    input.configPath = configPath;
    input.program.kind = launcher::ProgramSpec::Kind::PythonScript;
    input.program.target = "/opt/my train/train.py";
    input.program.args = {"--lr", "3e-4", "--name", "it's a run"};
    input.program.python = "/opt/my venv/bin/python";
    input.runDirectory = "/runs/the run";
    input.runName = "sweep-1";
    input.cpusPerTask = 8;

    for (ExportForm form :
         {ExportForm::AccelLaunch, ExportForm::AccelerateLaunch, ExportForm::Torchrun, ExportForm::Sbatch}) {
        const QByteArray tag = exportFormName(form);
        auto text = exportCommand(form, input);
        QVERIFY2(text, (tag + ": " + QByteArray::fromStdString(text ? "" : text.error().toString())).constData());
        // Valid bash.
        const QString scriptPath =
            writeFile(dir.path() + "/" + tag + ".sh",
                      QString::fromStdString(form == ExportForm::Sbatch ? *text : "#!/bin/bash\n" + *text));
        const Shell syntax = run("bash", {"-n", scriptPath});
        QVERIFY2(syntax.exitCode == 0, qPrintable(tag + ": " + syntax.err));
        if (!QStandardPaths::findExecutable("shellcheck").isEmpty()) {
            const Shell check = run("shellcheck", {"-S", "warning", scriptPath});
            QVERIFY2(check.exitCode == 0, qPrintable(tag + ": " + check.out));
        }

        auto imported = importCommand(*text);
        QVERIFY2(imported,
                 (tag + ": " + QByteArray::fromStdString(imported ? "" : imported.error().toString())).constData());
        QCOMPARE(imported->form, form);
        QCOMPARE(imported->program.target, input.program.target);
        QCOMPARE(imported->program.args, input.program.args);
        QCOMPARE(imported->config.distributedType == config::DistributedType::No ||
                     imported->config.distributedType == config::DistributedType::MultiCpu,
                 original.distributedType == config::DistributedType::No ||
                     original.distributedType == config::DistributedType::MultiCpu);
        if (original.distributedType != config::DistributedType::No || form != ExportForm::Torchrun)
            QCOMPARE(imported->config.distributedType, original.distributedType);
        QCOMPARE(imported->config.numProcesses, original.numProcesses);
        QCOMPARE(imported->config.numMachines.value_or(1), original.numMachines.value_or(1));
        QCOMPARE(imported->config.mixedPrecision, original.mixedPrecision);
        QCOMPARE(imported->config.fsdp.version, original.fsdp.version);
        QCOMPARE(imported->config.deepspeed.zeroStage, original.deepspeed.zeroStage);
        QCOMPARE(imported->config.fp8.backend, original.fp8.backend);
        // Every form keeps the interpreter; the accel forms the run's name (and, but for sbatch, its
        // folder).
        const bool accelForm = form == ExportForm::AccelLaunch || form == ExportForm::Sbatch;
        QCOMPARE(imported->program.python, input.program.python);
        QCOMPARE(imported->runName, accelForm ? input.runName : std::string());
        QCOMPARE(imported->runDirectory, form == ExportForm::AccelLaunch ? input.runDirectory : std::string());
        if (form == ExportForm::AccelLaunch) {
            QCOMPARE(imported->configPath, configPath);
            QCOMPARE(yamlOf(imported->config), yamlOf(original));
        } else if (form != ExportForm::Torchrun) {
            // Every flag came back: exporting the import gives the same text.
            ExportInput again = input;
            again.config = imported->config;
            if (form == ExportForm::Sbatch) {
                again.config.mainProcessIp = original.mainProcessIp;
                again.config.mainProcessPort = original.mainProcessPort;
            }
            auto second = exportCommand(form, again);
            QVERIFY(second);
            QCOMPARE(*second, *text);
            QCOMPARE(imported->config.fp8.overrideLinearPrecision, original.fp8.overrideLinearPrecision);
            QCOMPARE(imported->config.fsdp.transformerLayerClsToWrap, original.fsdp.transformerLayerClsToWrap);
            QCOMPARE(imported->config.deepspeed.offloadOptimizerDevice, original.deepspeed.offloadOptimizerDevice);
        }
        if (form == ExportForm::AccelerateLaunch || form == ExportForm::Torchrun) {
            QCOMPARE(imported->config.mainProcessIp, original.mainProcessIp);
        }
    }
}

void tst_CommandExport::torchrunCarriesEnvironment()
{
    ExportInput input;
    input.config = parseYaml("distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 4\nnum_machines: 2\n"
                             "main_process_ip: node0\nmain_process_port: 29700\n"
                             "fsdp_config:\n  fsdp_version: 2\n  fsdp_reshard_after_forward: true\n");
    input.program.target = "train.py";
    auto text = exportTorchrun(input);
    QVERIFY2(text, text ? "" : text.error().toString().c_str());
    const QString t = QString::fromStdString(*text);
    QVERIFY(t.contains("export ACCELERATE_MIXED_PRECISION=bf16\n"));
    QVERIFY(t.contains("export ACCELERATE_USE_FSDP=true\n"));
    QVERIFY(t.contains("export FSDP_VERSION=2\n"));
    QVERIFY(t.contains("torchrun --nproc_per_node 2 --nnodes 2 --node_rank 0 --rdzv_endpoint node0:29700 train.py\n"));
    QVERIFY(t.contains("torchrun --nproc_per_node 2 --nnodes 2 --node_rank 1 --rdzv_endpoint node0:29700 train.py\n"));
    QVERIFY(!t.contains("export RANK="));
}

// The accelerate and torchrun forms of a script run by the project's Python (not python3) run that
// Python's launchers, which start the script on it: the exported lines, run by bash, report it.
void tst_CommandExport::otherInterpreterRunsTheLaunchers()
{
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        QSKIP("the project's Python environment (ACCEL_PYTHON) is not set up");
    QTemporaryDir dir;
    const QString out = dir.path() + "/interpreter.txt";
    ExportInput input;
    input.config = parseYaml("distributed_type: 'NO'\nnum_processes: 1\nuse_cpu: true\nmain_process_port: 0\n");
    input.program.target =
        writeFile(dir.path() + "/train.py", "import sys\nopen(sys.argv[1], 'w').write(sys.executable)\n").toStdString();
    input.program.args = {out.toStdString()};
    input.program.python = python.toStdString();
    for (ExportForm form : {ExportForm::AccelerateLaunch, ExportForm::Torchrun}) {
        QFile::remove(out);
        auto text = exportCommand(form, input);
        QVERIFY(text);
        QVERIFY2(QString::fromStdString(*text).contains(python + " -m "), text->c_str());
        const Shell shell = run("bash", {"-c", QString::fromStdString(*text)}, {"PATH=/usr/bin:/bin"});
        QVERIFY2(shell.exitCode == 0, qPrintable(QString::fromStdString(*text) + shell.err));
        QFile written(out);
        QVERIFY2(written.open(QIODevice::ReadOnly), qPrintable(shell.err));
        QCOMPARE(QString::fromUtf8(written.readAll()), python);
    }
}

void tst_CommandExport::jobProgram()
{
    ExportInput input;
    input.config = parseYaml("distributed_type: MULTI_CPU\nnum_processes: 2\nuse_cpu: true\n");
    input.configPath = "/tmp/c.yaml";
    input.program.kind = launcher::ProgramSpec::Kind::Job;
    input.program.target = "resources/jobs/demo-gpt.yaml";
    auto accel = exportAccelLaunch(input);
    QVERIFY(accel);
    QCOMPARE(*accel, std::string("accel launch --config_file /tmp/c.yaml --job resources/jobs/demo-gpt.yaml\n"));
    auto accelerate = exportAccelerateLaunch(input);
    QVERIFY(accelerate);
    QCOMPARE(QString::fromStdString(*accelerate), QString("accelerate launch --num_machines 1 --num_processes 2 --cpu "
                                                          "--no_python accel-worker resources/jobs/demo-gpt.yaml\n"));
    auto imported = importCommand(*accelerate);
    QVERIFY(imported);
    QCOMPARE(imported->program.kind, launcher::ProgramSpec::Kind::Job);
    QCOMPARE(imported->program.target, input.program.target);
    QCOMPARE(imported->config.distributedType, config::DistributedType::MultiCpu);
}

void tst_CommandExport::sbatchRunsOnePerNode()
{
    QTemporaryDir dir;
    const QString bin = dir.path() + "/bin";
    QVERIFY(QDir().mkpath(bin));
    // Fake SLURM: scontrol lists two hosts, srun starts the command once per node with its rank.
    // It prints many hosts, slowly, as a large allocation would: a reader that stops after the first
    // line would make it die of SIGPIPE (the generated script runs under pipefail).
    writeFile(bin + "/scontrol",
              "#!/bin/bash\n[ \"$1 $2\" = 'show hostnames' ] || exit 3\n"
              "[ \"$3\" = \"$SLURM_JOB_NODELIST\" ] || exit 4\necho nodeA\nsleep 0.05\n"
              "for i in $(seq 1 2000); do echo node$i; done\n",
              true);
    writeFile(bin + "/srun",
              "#!/bin/bash\nwhile [[ \"$1\" == --* ]]; do shift; done\n"
              "for i in 0 1; do SLURM_NODEID=$i SLURM_PROCID=$i \"$@\"; done\n",
              true);
    // The launchers only print what they were given, one argument per line.
    const QString echoArgs = "#!/bin/bash\necho \"$(basename \"$0\") $*\" >> \"$OUT_FILE\"\n";
    writeFile(bin + "/accel", echoArgs, true);
    writeFile(bin + "/accelerate", echoArgs, true);

    ExportInput input;
    input.config = parseYaml("distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 4\nnum_machines: 2\n"
                             "main_process_ip: ignored\nmain_process_port: 29800\n");
    input.program.target = "train.py";
    input.program.args = {"--tag", "a b"};
    input.fixedPort = true;
    for (bool accelerate : {false, true}) {
        input.sbatchUseAccelerate = accelerate;
        auto script = exportSbatch(input);
        QVERIFY(script);
        QVERIFY(QString::fromStdString(*script).contains("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"));
        const QString path = writeFile(dir.path() + "/job.sbatch", QString::fromStdString(*script));
        const QString out = dir.path() + (accelerate ? "/out-accelerate.txt" : "/out-accel.txt");
        const Shell shell = run("bash", {path},
                                {"PATH=" + bin + ":" + qEnvironmentVariable("PATH"), "SLURM_JOB_NODELIST=nodeA,nodeB",
                                 "OUT_FILE=" + out, "SLURM_NODEID=9", "SLURM_JOB_ID=77", "ACCEL_RUN_DIR=/runs/job 77"});
        QVERIFY2(shell.exitCode == 0, qPrintable(shell.err));
        QFile file(out);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(file.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 2);
        const QString head = accelerate ? "accelerate launch" : "accel launch";
        // accel launch writes node N's run directory into $ACCEL_RUN_DIR/node<N> (accel slurm follow).
        const QString common =
            " --multi_gpu --mixed_precision bf16 --num_machines 2 --num_processes 4 --machine_rank %1"
            " --main_process_ip nodeA --main_process_port 29800%2 train.py --tag a b";
        auto runDir = [accelerate](int node) {
            return accelerate ? QString() : QStringLiteral(" --run_dir /runs/job 77/node%1").arg(node);
        };
        QCOMPARE(lines.at(0), head + common.arg(0).arg(runDir(0)));
        QCOMPARE(lines.at(1), head + common.arg(1).arg(runDir(1)));
    }
    // A free port chosen when the script runs.
    input.fixedPort = false;
    auto script = exportSbatch(input);
    QVERIFY(script);
    QVERIFY(QString::fromStdString(*script).contains("s.bind((\"\", 0))"));
}

// Regression: a newline in an sbatch header field injected a line (e.g. a shell command) into the script.
void tst_CommandExport::sbatchHeaderNewlineIsRefused_data()
{
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value");
    QTest::newRow("job name") << "job name"
                              << "train\nrm -rf ~";
    QTest::newRow("partition") << "partition"
                               << "gpu\n#SBATCH --account=other";
    QTest::newRow("time limit") << "time limit"
                                << "01:00:00\rtouch /tmp/x";
    QTest::newRow("tab") << "job name"
                         << "a\tb";
}

void tst_CommandExport::sbatchHeaderNewlineIsRefused()
{
    QFETCH(QString, field);
    QFETCH(QString, value);
    ExportInput input;
    input.config = parseYaml("distributed_type: 'NO'\n");
    input.program.target = "train.py";
    input.partition = "gpu";
    input.timeLimit = "01:00:00";
    QVERIFY(exportSbatch(input));
    if (field == "job name")
        input.jobName = value.toStdString();
    else if (field == "partition")
        input.partition = value.toStdString();
    else
        input.timeLimit = value.toStdString();
    auto script = exportSbatch(input);
    QVERIFY(!script);
    QCOMPARE(script.error().code, accel::ErrorCode::InvalidInput);
    QCOMPARE(accel::exitCodeFor(script.error()), 2);
    QVERIFY2(QString::fromStdString(script.error().message).startsWith(field + ":"), script.error().message.c_str());
}

void tst_CommandExport::badInputIsReported()
{
    auto none = importCommand("echo hello\n");
    QVERIFY(!none);
    auto badFlag = importCommand("accelerate launch --num_processes two train.py");
    QVERIFY(!badFlag);
    QVERIFY(QString::fromStdString(badFlag.error().message).contains("--num_processes two"));
    auto unknown = importCommand("accelerate launch --frobnicate train.py");
    QVERIFY(!unknown);
    QVERIFY(QString::fromStdString(unknown.error().message).contains("--frobnicate"));
    auto precision = importCommand("accelerate launch --mixed_precision fp32 train.py");
    QVERIFY(!precision);
    QCOMPARE(precision.error().message, std::string("--mixed_precision fp32: expected one of no, fp16, bf16, fp8"));
    ExportInput input;
    input.config = parseYaml("distributed_type: 'NO'\n");
    input.program.target = "t.py";
    QVERIFY(!exportAccelLaunch(input)); // no config path
}

QTEST_GUILESS_MAIN(tst_CommandExport)
#include "tst_commandexport.moc"
