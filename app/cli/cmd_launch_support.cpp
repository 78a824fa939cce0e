#include "app/cli/cmd_launch_support.h"

#include "core/common/fileutil.h"
#include "core/hardware/blasprobe.h"
#include "launcher/configadapter.h"
#include "launcher/envbuilder.h"
#include "launcher/jsonoutput.h"
#include "launcher/launchflags.h"
#include "launcher/launchmerge.h"
#include "launcher/launchplan.h"
#include "launcher/ports.h"

#include "buildinfo.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSysInfo>
#include <QThread>

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
    // Accelerate's rule (facts 1.1): $HF_HOME/accelerate, else ${XDG_CACHE_HOME:-~/.cache}/huggingface/accelerate.
    const char *hfHome = std::getenv("HF_HOME");
    std::string dir;
    if (hfHome && *hfHome) {
        dir = fileutil::expandUser(hfHome) + "/accelerate";
    } else {
        const char *cache = std::getenv("XDG_CACHE_HOME");
        dir = (cache && *cache ? fileutil::expandUser(cache) : fileutil::expandUser("~/.cache")) +
              "/huggingface/accelerate";
    }
    return dir + "/default_config.yaml";
}

std::string baseName(const std::string &path)
{
    std::string name = std::filesystem::path(path).filename().string();
    const size_t dot = name.find('.');
    return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

Result<void> resolvePort(LaunchSettings &settings)
{
    const bool hostsStore = settings.numMachines == 1 || settings.machineRank == 0;
    if (!usesRankVariables(settings) || !hostsStore)
        return {};
    if (settings.mainProcessPort == 0) {
        auto port = pickFreePort();
        if (!port)
            return tl::unexpected(port.error());
        settings.mainProcessPort = *port;
        settings.notes.push_back("main_process_port 0: rank 0 hosts the TCPStore on free port " +
                                 std::to_string(*port));
        return {};
    }
    if (!isPortInUse(settings.mainProcessPort))
        return {};
    const std::string busy = describeBusyPort(settings.mainProcessPort);
    if (settings.mainProcessPortExplicit || settings.numMachines > 1)
        return makeError(ErrorCode::InvalidInput,
                         "main_process_port: " + busy + "; choose another port, or 0 for a free one");
    auto port = pickFreePort();
    if (!port)
        return tl::unexpected(port.error());
    settings.notes.push_back(busy + "; using free port " + std::to_string(*port) +
                             " (accelerate launch would switch to torchrun --standalone)");
    settings.mainProcessPort = *port;
    return {};
}

// OpenBLAS picks its kernels from the CPU model; one newer than the OpenBLAS release falls back to
// generic ones (core/hardware/blasprobe.h). Every rank, Python or accel-worker, then gets the
// variable that selects the kernels the CPU runs, unless the user set it (or asked to keep it).
void giveRanksBestBlasKernels(EnvMap &environment, std::vector<std::string> &notes)
{
    const auto keep = environment.find("ACCEL_BLAS_CORETYPE");
    if (environment.count("OPENBLAS_CORETYPE") || (keep != environment.end() && keep->second == "keep"))
        return;
    const hardware::BlasReport blas = hardware::probeBlas(hardware::runningCpuFlags());
    if (blas.recommended.empty())
        return;
    environment["OPENBLAS_CORETYPE"] = blas.recommended;
    notes.push_back(blas.reason + "; ranks get OPENBLAS_CORETYPE=" + blas.recommended +
                    " (accelerate launch does not set it; ACCEL_BLAS_CORETYPE=keep leaves it unset)");
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

std::string workerProgramPath()
{
    if (const char *override = std::getenv("ACCEL_WORKER_PROGRAM"); override && *override)
        return override;
    std::error_code error;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
    return (error ? std::filesystem::path(".") : self.parent_path()).string() + "/accel-worker";
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
        program.workerProgram = workerProgramPath();
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
    auto settings = mergeLaunchSettings(request, view, detectHostFacts());
    if (!settings)
        return tl::unexpected(settings.error());
    if (defaultExists && prepared.configPath.empty() && parser.isSet("cpu"))
        settings->notes.push_back(
            "default config " + defaultPath +
            " is not read because of --cpu (as accelerate launch does); pass --config_file to use it");
    if (auto ok = resolvePort(*settings); !ok)
        return tl::unexpected(ok.error());
    giveRanksBestBlasKernels(request.environment, settings->notes);

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
    QJsonArray commandLine{QStringLiteral("accel")};
    for (int i = 0; i < argc; ++i)
        commandLine.append(QString::fromLocal8Bit(argv[i]));
    const QJsonObject plan = launchPlanJson(settings, prepared.baseEnvironment);
    QJsonObject manifest{
        {QStringLiteral("schema"), QStringLiteral("accel.run")},
        {QStringLiteral("version"), 1},
        {QStringLiteral("id"), QFileInfo(run->path()).fileName()},
        {QStringLiteral("name"), QString::fromStdString(prepared.runName)},
        {QStringLiteral("created"), unixTimeNow()},
        {QStringLiteral("host"), QSysInfo::machineHostName()},
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
        {QStringLiteral("plan"), plan.value(QStringLiteral("ranks"))},
        {QStringLiteral("restarts"), 0},
        // This process supervises the run (also with --detach, where it is the background child).
        {QStringLiteral("supervisor"),
         QJsonObject{{QStringLiteral("pid"), static_cast<qint64>(::getpid())},
                     {QStringLiteral("start_time"), static_cast<qint64>(processStartTime(::getpid()))},
                     {QStringLiteral("host"), QSysInfo::machineHostName()}}},
        {QStringLiteral("state"), QString::fromLatin1(runstate::Starting)},
        {QStringLiteral("states"),
         QJsonArray{QJsonObject{{QStringLiteral("state"), QString::fromLatin1(runstate::Starting)},
                                {QStringLiteral("time"), unixTimeNow()}}}},
    };
    if (auto ok = run->writeManifest(manifest); !ok)
        return tl::unexpected(ok.error());
    if (!prepared.configYaml.empty())
        (void)fileutil::writeFileAtomic(run->filePath(QStringLiteral("cluster.yaml")).toStdString(),
                                        prepared.configYaml);
    if (settings.program.kind == ProgramSpec::Kind::Job)
        QFile::copy(QString::fromStdString(settings.program.target), run->filePath(QStringLiteral("job.yaml")));
    return run;
}

int detachSupervisor(int argc, char **argv, const LaunchSettings &settings, bool json)
{
    const QString runPath = QString::fromStdString(settings.runDirectory);
    if (!QDir().mkpath(runPath)) {
        std::fprintf(stderr, "accel launch: cannot create %s\n", runPath.toLocal8Bit().constData());
        return 1;
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
    const std::string log = settings.runDirectory + "/supervisor.log";
    const pid_t pid = ::fork();
    if (pid < 0) {
        std::fprintf(stderr, "accel launch: fork failed: %s\n", std::strerror(errno));
        return 1;
    }
    if (pid == 0) {
        ::setsid();
        const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        const int in = ::open("/dev/null", O_RDONLY);
        if (out >= 0) {
            ::dup2(out, 1);
            ::dup2(out, 2);
        }
        if (in >= 0)
            ::dup2(in, 0);
        ::execv("/proc/self/exe", raw.data());
        ::_exit(127);
    }
    // Wait until the supervisor has written run.json (or died).
    const QString manifest = runPath + QStringLiteral("/run.json");
    for (int i = 0; i < 200 && !QFileInfo::exists(manifest); ++i) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            std::fprintf(stderr, "accel launch: the detached supervisor exited at once:\n");
            QFile file(QString::fromStdString(log));
            if (file.open(QIODevice::ReadOnly))
                std::fprintf(stderr, "%s", file.readAll().constData());
            return 1;
        }
        QThread::msleep(25);
    }
    const QString id = QFileInfo(runPath).fileName();
    if (json) {
        const QJsonObject object{{QStringLiteral("schema"), QStringLiteral("accel.launch-detached")},
                                 {QStringLiteral("version"), 1},
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
