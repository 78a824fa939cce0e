#include "app/cli/cmd_launch_support.h"

#include "core/common/fileutil.h"
#include "core/common/huggingfacehome.h"
#include "core/common/loopbacksocket.h"
#include "launcher/configadapter.h"
#include "launcher/envbuilder.h"
#include "launcher/jobfile.h"
#include "launcher/jsonoutput.h"
#include "launcher/launchflags.h"
#include "launcher/launchmerge.h"
#include "launcher/launchplan.h"
#include "launcher/ports.h"

#include "core/rundir/privatefiles.h"
#include "core/rundir/redaction.h"

#include "buildinfo.h"

#include "core/worker/jobspec.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSysInfo>
#include <QThread>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace accel::cli {

using namespace accel::launcher;

namespace {

std::string defaultAccelerateConfigPath()
{
    return accel::accelerateDefaultConfigPath();
}

std::string baseName(const std::string &path)
{
    std::string name = std::filesystem::path(path).filename().string();
    const size_t dot = name.find('.');
    return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// MASTER_PORT for ranks that meet in a store hosted on this machine: a free port for 0, the
// default's replacement when it is busy (an explicit port or a multi-machine job's is an error).
// A native job or a Python program on one machine gets the port held on loopback until its rank 0
// takes it over (a Python rank 0 through the rendezvous hook, launcher/storehook.h).
Result<void> resolvePort(LaunchSettings &settings, std::shared_ptr<PortReservation> &held)
{
    const bool hostsStore = settings.numMachines == 1 || settings.machineRank == 0;
    // With c10d on several machines the rendezvous host chooses the store's port (machinerendezvous.h).
    if (!usesRankVariables(settings) || !hostsStore || settings.machineRankAtRendezvous())
        return {};
    const bool hold = settings.numMachines == 1 && takesHeldPort(settings.program.kind) &&
                      isLoopbackAddress(settings.masterAddress()) && settings.masterAddress() != "::1";
    const int asked = settings.mainProcessPort;
    std::string busy;
    if (asked != 0) {
        if (hold) {
            auto reserved = reserveLoopbackPort(asked);
            if (reserved) {
                held = std::make_shared<PortReservation>(std::move(*reserved));
                return {};
            }
            busy = reserved.error().message;
        } else if (!isPortInUse(asked)) {
            return {};
        } else {
            busy = describeBusyPort(asked);
        }
        if (settings.mainProcessPortExplicit || settings.numMachines > 1)
            return makeError(ErrorCode::InvalidInput,
                             "main_process_port: " + busy + "; choose another port, or 0 for a free one");
    }
    int port = 0;
    if (hold) {
        auto reserved = reserveLoopbackPort(0);
        if (!reserved)
            return tl::unexpected(reserved.error());
        port = reserved->port();
        held = std::make_shared<PortReservation>(std::move(*reserved));
    } else {
        auto picked = pickFreePort();
        if (!picked)
            return tl::unexpected(picked.error());
        port = *picked;
    }
    settings.mainProcessPort = port;
    if (asked == 0)
        settings.notes.push_back("main_process_port 0: rank 0 hosts the TCPStore on free port " + std::to_string(port));
    else
        settings.notes.push_back(busy + "; using free port " + std::to_string(port) +
                                 " (accelerate launch would switch to torchrun --standalone)");
    return {};
}

QJsonArray stringArray(const std::vector<std::string> &values)
{
    QJsonArray array;
    for (const std::string &value : values)
        array.append(QString::fromStdString(value));
    return array;
}

std::vector<std::string> stringVector(const QJsonArray &array)
{
    std::vector<std::string> values;
    for (const QJsonValue &value : array)
        values.push_back(value.toString().toStdString());
    return values;
}

// run.json never records secrets: values of secret-named flags and variables, and secrets known by
// their form, are redacted in the command line and in every rank's command and environment
// (core/rundir/redaction.h).
QJsonArray redactedPlan(QJsonArray ranks)
{
    for (QJsonValueRef entry : ranks) {
        QJsonObject rank = entry.toObject();
        rank[QStringLiteral("command")] =
            stringArray(rundir::redactArguments(stringVector(rank.value(QStringLiteral("command")).toArray())));
        QJsonObject env = rank.value(QStringLiteral("env")).toObject();
        for (auto it = env.begin(); it != env.end(); ++it)
            it.value() = QString::fromStdString(
                rundir::redactEnvironmentValue(it.key().toStdString(), it.value().toString().toStdString()));
        rank[QStringLiteral("env")] = env;
        entry = rank;
    }
    return ranks;
}

// The job file as accel-worker will read it: the recipe and the settings every recipe shares, and
// every field of the recipes the studio edits (gpt, mlp, causal_lm). Errors name the file and the key
// (exit 2).
Result<void> checkJobFile(const std::string &path)
{
    auto spec = worker::JobSpec::load(path);
    if (!spec)
        return tl::unexpected(spec.error());
    const auto &formRecipes = JobFile::formRecipes();
    if (std::find(formRecipes.begin(), formRecipes.end(), spec->recipe) == formRecipes.end())
        return {}; // torchscript, plugin, selftest: their own settings are read by the worker
    auto job = JobFile::load(path);
    if (!job)
        return tl::unexpected(job.error());
    return job->check(path);
}

} // namespace

EnvMap currentEnvironment()
{
    EnvMap env;
    for (char **entry = environ; entry && *entry; ++entry) {
        const char *eq = std::strchr(*entry, '=');
        if (eq)
            env[std::string(*entry, static_cast<size_t>(eq - *entry))] = std::string(eq + 1);
    }
    return env;
}

Result<void> checkWorkerProgram(const std::string &path)
{
    if (QFileInfo(QString::fromStdString(path)).isExecutable())
        return {};
    return makeError(ErrorCode::Unsupported, "not found: this build has no libtorch runtime (accel-worker)", path);
}

Result<PreparedLaunch> prepareLaunch(const ArgParser &parser)
{
    PreparedLaunch prepared;
    LaunchRequest request;
    for (const LaunchFlag &flag : launchFlags()) {
        if (parser.isSet(flag.name))
            request.flags[flag.name] = flag.kind == LaunchFlag::Kind::Switch ? "true" : parser.valueOr(flag.name, "");
    }
    request.environment = currentEnvironment();
    std::error_code error;
    request.workingDirectory = std::filesystem::current_path(error).string();

    const std::vector<std::string> script = parser.positional("script");
    ProgramSpec &program = request.program;
    if (auto job = parser.value("job")) {
        if (!std::filesystem::exists(*job, error))
            return makeError(ErrorCode::NotFound, "job file not found", *job);
        program.kind = ProgramSpec::Kind::Job;
        program.target = std::filesystem::absolute(*job, error).string();
        if (auto ok = checkJobFile(program.target); !ok)
            return tl::unexpected(ok.error());
        program.workerProgram = workerProgramPath();
        // A job runs only on accel-worker: without it no rank could start (checked after the job,
        // so that a wrong job file is named even where this build has no runtime).
        if (auto worker = checkWorkerProgram(program.workerProgram); !worker)
            return tl::unexpected(worker.error());
        program.args = script;
        prepared.runName = baseName(*job);
    } else {
        if (script.empty())
            return makeError(ErrorCode::InvalidInput, "missing SCRIPT (or --job JOB.yaml); see 'accel launch --help'");
        program.target = script.front();
        program.args.assign(script.begin() + 1, script.end());
        if (parser.isSet("module"))
            program.kind = ProgramSpec::Kind::PythonModule;
        else if (parser.isSet("no_python"))
            program.kind = ProgramSpec::Kind::Executable;
        // A script named "-x.py" would reach Python as an option: name it as a path.
        if (program.kind == ProgramSpec::Kind::PythonScript && program.target.rfind('-', 0) == 0)
            program.target = "./" + program.target;
        prepared.runName = baseName(script.front());
    }
    if (auto name = parser.value("name"))
        prepared.runName = *name;

    const std::string defaultPath = defaultAccelerateConfigPath();
    const bool defaultExists = std::filesystem::exists(defaultPath, error);
    prepared.configPath = configFileToLoad(request, defaultPath, defaultExists);
    std::optional<ConfigView> view;
    if (!prepared.configPath.empty()) {
        auto loaded = loadLaunchConfig(prepared.configPath);
        if (!loaded)
            return tl::unexpected(loaded.error());
        view = loaded->view;
        prepared.configYaml = loaded->yamlText;
    }
    // Errors about merged values name the config file they may come from.
    auto withConfigFile = [&prepared](Error error) {
        if (!prepared.configPath.empty() && error.context.empty()) {
            error.context = prepared.configPath;
            error.message += " (this config file's values merged with the command-line flags)";
        }
        return tl::unexpected(std::move(error));
    };
    auto settings = mergeLaunchSettings(request, view, detectHostFacts());
    if (!settings)
        return withConfigFile(settings.error());
    if (defaultExists && prepared.configPath.empty() && parser.isSet("cpu"))
        settings->notes.push_back(
            "default config " + defaultPath +
            " is not read because of --cpu (as accelerate launch does); pass --config_file to use it");
    if (auto ok = resolvePort(*settings, prepared.storePort); !ok)
        return withConfigFile(ok.error());

    QString runDir = QString::fromStdString(parser.valueOr("run_dir", ""));
    if (runDir.isEmpty())
        runDir = RunDirectory::defaultRunsRoot() + QLatin1Char('/') +
                 RunDirectory::makeRunId(QString::fromStdString(prepared.runName));
    settings->runDirectory = QFileInfo(runDir).absoluteFilePath().toStdString();
    prepared.settings = std::move(*settings);
    prepared.baseEnvironment = std::move(request.environment);
    return prepared;
}

Result<RunDirectory> createRunDirectory(const PreparedLaunch &prepared, int argc, char **argv)
{
    const LaunchSettings &settings = prepared.settings;
    auto run = RunDirectory::create(QString::fromStdString(settings.runDirectory));
    if (!run)
        return run;
    std::vector<std::string> arguments{"accel"};
    for (int i = 0; i < argc; ++i)
        arguments.emplace_back(argv[i]);
    const QJsonArray commandLine = stringArray(rundir::redactArguments(arguments));
    const QJsonObject plan = launchPlanJson(settings, prepared.baseEnvironment);
    QJsonObject manifest{
        {QStringLiteral("schema"), QStringLiteral("accel.run")},
        {QStringLiteral("version"), 1},
        {QStringLiteral("id"), QFileInfo(run->path()).fileName()},
        {QStringLiteral("name"), QString::fromStdString(prepared.runName)},
        {QStringLiteral("created"), unixTimeNow()},
        {QStringLiteral("host"), QString::fromStdString(rundir::localHostName())},
        {QStringLiteral("user"), qEnvironmentVariable("USER")},
        {QStringLiteral("cwd"), QString::fromStdString(settings.workingDirectory)},
        {QStringLiteral("versions"),
         QJsonObject{{QStringLiteral("accel"), QStringLiteral(ACCEL_VERSION)},
                     {QStringLiteral("qt"), QString::fromLatin1(qVersion())},
                     {QStringLiteral("libtorch_build"), QStringLiteral(ACCEL_TORCH_VERSION)},
                     {QStringLiteral("os"), QSysInfo::prettyProductName()}}},
        {QStringLiteral("argv"), commandLine},
        {QStringLiteral("config_file"),
         prepared.configPath.empty() ? QJsonValue() : QJsonValue(QString::fromStdString(prepared.configPath))},
        {QStringLiteral("job_file"), settings.program.kind == ProgramSpec::Kind::Job
                                         ? QJsonValue(QString::fromStdString(settings.program.target))
                                         : QJsonValue()},
        {QStringLiteral("settings"), plan.value(QStringLiteral("settings"))},
        {QStringLiteral("notes"), plan.value(QStringLiteral("notes"))},
        {QStringLiteral("plan"), redactedPlan(plan.value(QStringLiteral("ranks")).toArray())},
        {QStringLiteral("restarts"), 0},
        // This process supervises the run (also with --detach, where it is the background child).
        {QStringLiteral("supervisor"), RunDirectory::supervisorJson(rundir::currentSupervisorRecord())},
        {QStringLiteral("state"), QString::fromLatin1(runstate::Starting)},
        {QStringLiteral("states"),
         QJsonArray{QJsonObject{{QStringLiteral("state"), QString::fromLatin1(runstate::Starting)},
                                {QStringLiteral("time"), unixTimeNow()}}}},
    };
    if (auto ok = run->writeManifest(manifest); !ok)
        return tl::unexpected(ok.error());
    if (!prepared.configYaml.empty()) {
        if (auto ok = run->writeFile(QLatin1String(rundir::file::ClusterConfig),
                                     QByteArray::fromStdString(prepared.configYaml));
            !ok)
            return tl::unexpected(ok.error());
    }
    if (settings.program.kind == ProgramSpec::Kind::Job) {
        auto job = fileutil::readFile(settings.program.target);
        if (!job)
            return tl::unexpected(job.error());
        if (auto ok = run->writeFile(QLatin1String(rundir::file::Job), QByteArray::fromStdString(*job)); !ok)
            return tl::unexpected(ok.error());
    }
    return run;
}

int detachSupervisor(int argc, char **argv, const LaunchSettings &settings, bool json)
{
    const QString runPath = QString::fromStdString(settings.runDirectory);
    // Not even the supervisor's log under a folder someone else could swap (RunDirectory::create).
    if (auto safe = rundir::checkNoOtherUserCanSwap(settings.runDirectory); !safe) {
        std::fprintf(stderr, "accel launch: %s\n", safe.error().toString().c_str());
        return exitCodeFor(safe.error());
    }
    if (auto made = rundir::makePrivateDirectory(settings.runDirectory); !made) {
        std::fprintf(stderr, "accel launch: %s\n", made.error().toString().c_str());
        return exitCodeFor(made.error());
    }
    // The supervisor's own output, created here (never through a symlink) before it starts.
    auto log = rundir::openRunFile(settings.runDirectory, rundir::file::SupervisorLog, rundir::OpenFor::CreateOnly);
    if (!log) {
        std::fprintf(stderr, "accel launch: %s\n", log.error().toString().c_str());
        return exitCodeFor(log.error());
    }
    std::vector<std::string> args = {"accel", "launch", "--detached_supervisor", "--run_dir", settings.runDirectory};
    bool removed = false;
    for (int i = 1; i < argc; ++i) {
        if (!removed && std::strcmp(argv[i], "--detach") == 0) {
            removed = true;
            continue;
        }
        args.emplace_back(argv[i]);
    }
    std::vector<char *> raw;
    for (std::string &arg : args)
        raw.push_back(arg.data());
    raw.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        std::fprintf(stderr, "accel launch: fork failed: %s\n", std::strerror(errno));
        ::close(*log);
        return 1;
    }
    if (pid == 0) {
        ::setsid();
        const int out = *log;
        const int in = ::open("/dev/null", O_RDONLY);
        ::dup2(out, 1);
        ::dup2(out, 2);
        if (in >= 0)
            ::dup2(in, 0);
        ::execv("/proc/self/exe", raw.data());
        ::_exit(127);
    }
    ::close(*log);
    // Wait until the supervisor has written run.json (or died).
    const QString manifest = runPath + QStringLiteral("/run.json");
    for (int i = 0; i < 200 && !QFileInfo::exists(manifest); ++i) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            std::fprintf(stderr, "accel launch: the detached supervisor exited at once:\n");
            if (auto text = rundir::readRunFile(settings.runDirectory, rundir::file::SupervisorLog))
                std::fprintf(stderr, "%s", text->c_str());
            return 1;
        }
        QThread::msleep(25);
    }
    const QString id = QFileInfo(runPath).fileName();
    if (json) {
        const QJsonObject object{{QStringLiteral("schema"), QLatin1String(LaunchDetachedSchema)},
                                 {QStringLiteral("version"), LaunchDetachedVersion},
                                 {QStringLiteral("id"), id},
                                 {QStringLiteral("run_dir"), runPath},
                                 {QStringLiteral("supervisor_pid"), static_cast<qint64>(pid)}};
        std::printf("%s", schemaJson(object).constData());
    } else {
        std::printf("%s\n", id.toLocal8Bit().constData());
        std::fprintf(stderr, "accel launch: detached supervisor pid %d; run directory %s\n", static_cast<int>(pid),
                     runPath.toLocal8Bit().constData());
    }
    return 0;
}

} // namespace accel::cli
