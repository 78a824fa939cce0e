// accel slurm: SLURM on a cluster's login node over SSH (docs/remote.md, "SLURM").
//   submit   export a cluster config + program as a batch script (or take a script), copy it to
//            the host and run sbatch there; prints the job id and where its run directory will be.
//   queue    squeue, plus sacct for ended jobs (cmd_slurm_queue.cpp).
//   cancel   scancel a job and report the state it ends in.
//   follow   wait for a job's run directory, then `accel tail --follow` it on the host.
#include "app/cli/cmd_slurm_common.h"
#include "app/cli/command.h"

#include "core/config/configio.h"
#include "launcher/export/commandexport.h"
#include "launcher/jsonoutput.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QRandomGenerator>

#include <cstdio>
#include <cstring>

namespace accel::cli {

int runSlurmQueue(int argc, char **argv); // cmd_slurm_queue.cpp
int runSlurmCancel(int argc, char **argv);
int runSlurmFollow(int argc, char **argv);

namespace {

using namespace accel::launcher;
namespace ex = accel::launcher::exporting;

struct BatchScript {
    QByteArray text;
    QString jobName;
    bool knowsRunDirectory = false; // the script exports ACCEL_RUN_DIR (Accel Studio's own)
    bool given = false;             // a script from the user, not exported here
};

// The program words after the config: a script and its arguments, or --job / -m / --no_python.
Result<ProgramSpec> programOf(const ArgParser &parser)
{
    ProgramSpec program;
    const std::vector<std::string> words = parser.positional("program");
    if (auto job = parser.value("job")) {
        if (!words.empty())
            return makeError(ErrorCode::InvalidInput,
                             "--job runs a job file: give no script after it (got '" + words.front() + "')");
        program.kind = ProgramSpec::Kind::Job;
        program.target = *job;
        return program;
    }
    if (words.empty())
        return makeError(ErrorCode::InvalidInput,
                         "a config needs the program to run: --job JOB.yaml, or SCRIPT [ARGS...] after the config "
                         "(paths as the compute nodes see them)");
    program.kind = parser.isSet("module")      ? ProgramSpec::Kind::PythonModule
                   : parser.isSet("no_python") ? ProgramSpec::Kind::Executable
                                               : ProgramSpec::Kind::PythonScript;
    program.target = words.front();
    program.args.assign(words.begin() + 1, words.end());
    return program;
}

Result<BatchScript> batchScript(const ArgParser &parser, const QString &remoteAccel)
{
    const QString path = QString::fromStdString(parser.firstPositional("CONFIG_OR_SCRIPT").value_or(""));
    QFile file(path);
    if (path.isEmpty())
        return makeError(ErrorCode::InvalidInput, "expected a cluster config (.yaml/.json) or a batch script",
                         "CONFIG_OR_SCRIPT");
    if (!file.open(QIODevice::ReadOnly))
        return makeError(ErrorCode::InvalidInput, "cannot read it: " + file.errorString().toStdString(),
                         path.toStdString());
    BatchScript script;
    const QByteArray head = file.peek(2);
    if (head == "#!") {
        if (!parser.positional("program").empty() || parser.isSet("job"))
            return makeError(ErrorCode::InvalidInput,
                             "a batch script runs its own program: give no --job or script after it",
                             path.toStdString());
        script.text = file.readAll();
        script.given = true;
        script.knowsRunDirectory = script.text.contains("ACCEL_RUN_DIR");
        script.jobName = QString::fromStdString(parser.valueOr("job_name", QFileInfo(path).baseName().toStdString()));
        return script;
    }
    auto config = config::loadConfigFile(path.toStdString());
    if (!config)
        return makeError(ErrorCode::InvalidInput, config.error().toString() +
                                                      " (expected a cluster config, or a batch script starting "
                                                      "with #!)");
    auto program = programOf(parser);
    if (!program)
        return tl::unexpected(program.error());
    ex::ExportInput input;
    input.config = *config;
    input.configPath = path.toStdString();
    input.program = *program;
    input.accelProgram = remoteAccel.isEmpty() ? "accel" : remoteAccel.toStdString();
    input.jobName = parser.valueOr("job_name", "accel");
    input.partition = parser.valueOr("partition", "");
    input.timeLimit = parser.valueOr("time", "");
    input.sbatchUseAccelerate = parser.isSet("accelerate");
    input.fixedPort = parser.isSet("fixed_port");
    const std::string cpus = parser.valueOr("cpus_per_task", "0");
    input.cpusPerTask = QString::fromStdString(cpus).toInt();
    if (input.cpusPerTask < 0 || (input.cpusPerTask == 0 && cpus != "0"))
        return makeError(ErrorCode::InvalidInput, "expected a whole number of CPUs, got '" + cpus + "'",
                         "--cpus_per_task");
    auto text = ex::exportSbatch(input);
    if (!text)
        return tl::unexpected(text.error());
    script.text = QByteArray::fromStdString(*text);
    script.jobName = QString::fromStdString(input.jobName);
    script.knowsRunDirectory = !input.sbatchUseAccelerate;
    return script;
}

// "<job name>-<UTC time>-<4 hex>.sbatch", only [A-Za-z0-9._-] from the name.
QString scriptFileName(const QString &jobName)
{
    QString safe;
    for (const QChar c : jobName)
        safe += (c.isLetterOrNumber() && c.unicode() < 128) || c == QLatin1Char('.') || c == QLatin1Char('-') ||
                        c == QLatin1Char('_')
                    ? c
                    : QLatin1Char('_');
    if (safe.isEmpty() || safe.startsWith(QLatin1Char('.')))
        safe.prepend(QStringLiteral("job"));
    return QStringLiteral("%1-%2-%3.sbatch")
        .arg(safe.left(64), QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss")))
        .arg(QRandomGenerator::global()->bounded(0x10000), 4, 16, QLatin1Char('0'));
}

int runSlurmSubmit(int argc, char **argv)
{
    ArgParser parser("accel slurm submit",
                     "Submit a batch job on a SLURM cluster over SSH: a cluster config and a program become the "
                     "batch script Accel Studio exports (or a script is taken as it is); it is copied to the login "
                     "node and sbatch runs it there.");
    parser.addPositional({"CONFIG_OR_SCRIPT", "cluster config (.yaml/.json) or a batch script (#!...)"});
    parser.addPositional({"program", "with a config: the training script and its arguments", true, true});
    slurmcli::addCommonOptions(parser, "machine-readable output (" +
                                           schemaAndVersion(launcher::SlurmSubmitSchema, launcher::SlurmSubmitVersion) +
                                           ")");
    parser.addValue("job", "JOB.yaml", "with a config: run an accel-worker job (path on the compute nodes)");
    parser.addFlag("module", "with a config: the program is a Python module", 'm');
    parser.addFlag("no_python", "with a config: run the program directly, not through python3");
    parser.addValue("job_name", "NAME", "the job's name (#SBATCH --job-name)", "accel");
    parser.addValue("partition", "NAME", "partition (#SBATCH --partition; passed to sbatch for a script)");
    parser.addValue("time", "LIMIT", "time limit, e.g. 01:00:00 (#SBATCH --time; passed to sbatch for a script)");
    parser.addValue("cpus_per_task", "N", "CPUs per node's launcher (#SBATCH --cpus-per-task)");
    parser.addFlag("accelerate", "the nodes run `accelerate launch` instead of `accel launch` (no run directory)");
    parser.addFlag("fixed_port", "use the config's main_process_port instead of a free port chosen at run time");
    parser.addValue("remote_dir", "DIR",
                    "folder on the login node for the script; the job's working directory (relative: to the login "
                    "directory)",
                    "accel-slurm");
    parser.addOption({"sbatch_arg", "ARG", "extra sbatch argument, e.g. --qos=high (repeatable)", "", 0, true, {}});
    parser.setEpilog("The job writes its run directory to accel-run-<job id> in DIR (a multi-node job: one node<K> "
                     "run directory per node in there); accel slurm follow finds it and follows every node. Exit "
                     "status: 0 submitted, 1 failed (host, sbatch), 2 bad arguments.");
    if (const int code = slurmcli::parseOrExit(parser, argc, argv, "submit"); code >= 0)
        return code;
    auto remote = slurmcli::connectRemote(parser);
    if (!remote)
        return slurmcli::reportError("submit", remote.error());
    auto script = batchScript(parser, remote->host->accelProgram());
    if (!script)
        return slurmcli::reportError("submit", script.error());
    QStringList sbatchArguments;
    if (script->given) { // an exported script has them in its header already
        if (auto partition = parser.value("partition"))
            sbatchArguments << QStringLiteral("--partition=") + QString::fromStdString(*partition);
        if (auto time = parser.value("time"))
            sbatchArguments << QStringLiteral("--time=") + QString::fromStdString(*time);
    }
    for (const std::string &argument : parser.values("sbatch_arg"))
        sbatchArguments << QString::fromStdString(argument);

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    const QString fileName = scriptFileName(script->jobName);
    auto output = slurmcli::runScript(
        *remote, slurm::submitScript(QString::fromStdString(parser.valueOr("remote_dir", "accel-slurm")), fileName,
                                     script->text, sbatchArguments));
    if (!output)
        return slurmcli::reportError("submit", output.error());
    auto submission = slurm::parseSubmit(*output);
    if (!submission)
        return slurmcli::reportError("submit", submission.error());
    const QString scriptPath = submission->directory + QLatin1Char('/') + fileName;
    const QString runDirectory =
        script->knowsRunDirectory ? slurm::defaultRunDirectory(submission->directory, submission->jobId) : QString();
    if (parser.isSet("json")) {
        const QJsonObject body{
            {QStringLiteral("host"), remote->name},
            {QStringLiteral("job_id"), submission->jobId},
            {QStringLiteral("cluster"), submission->cluster},
            {QStringLiteral("script"), scriptPath},
            {QStringLiteral("work_dir"), submission->directory},
            {QStringLiteral("run_directory"), runDirectory.isEmpty() ? QJsonValue() : QJsonValue(runDirectory)}};
        std::fputs(schemaJson(QLatin1String(SlurmSubmitSchema), SlurmSubmitVersion, body).constData(), stdout);
    } else {
        std::printf("submitted job %s on %s\n  script: %s\n", qPrintable(submission->jobId), qPrintable(remote->name),
                    qPrintable(scriptPath));
        if (!runDirectory.isEmpty())
            std::printf("  run directory: %s\n  follow it: accel slurm follow --host %s %s\n", qPrintable(runDirectory),
                        qPrintable(remote->name), qPrintable(submission->jobId));
    }
    return ExitOk;
}

void printSlurmUsage(FILE *out)
{
    std::fputs("usage: accel slurm <action> --host HOST [options]\n\n"
               "SLURM on a cluster's login node over SSH (docs/remote.md). 'accel slurm <action> --help' for each.\n\n"
               "actions:\n"
               "  submit CONFIG_OR_SCRIPT [PROGRAM...]  copy the batch script there and sbatch it; prints the job id\n"
               "  queue [JOBID,...]                     squeue, and sacct for ended jobs\n"
               "  cancel JOBID                          scancel, then the state the job ends in\n"
               "  follow JOBID                          wait for the job's run directory and accel tail --follow it\n",
               out);
}

} // namespace

static int runSlurm(int argc, char **argv)
{
    if (argc < 2) {
        printSlurmUsage(stderr);
        return ExitBadInput;
    }
    const char *action = argv[1];
    if (!std::strcmp(action, "--help") || !std::strcmp(action, "-h")) {
        printSlurmUsage(stdout);
        return ExitOk;
    }
    if (!std::strcmp(action, "submit"))
        return runSlurmSubmit(argc - 1, argv + 1);
    if (!std::strcmp(action, "queue"))
        return runSlurmQueue(argc - 1, argv + 1);
    if (!std::strcmp(action, "cancel"))
        return runSlurmCancel(argc - 1, argv + 1);
    if (!std::strcmp(action, "follow"))
        return runSlurmFollow(argc - 1, argv + 1);
    std::fprintf(stderr, "accel slurm: unknown action '%s': expected submit, queue, cancel or follow\n\n", action);
    printSlurmUsage(stderr);
    return ExitBadInput;
}

static Registrar registrar({"slurm", "SLURM over SSH: submit the exported batch script, queue, cancel, follow",
                            &runSlurm});

} // namespace accel::cli
