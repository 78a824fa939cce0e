// accel launch: Accelerate's `accelerate launch`, run by Accel Studio's own supervisor. Every
// rank of this machine is started, watched and logged into a run directory.
#include "app/cli/argparser.h"
#include "app/cli/cmd_launch_support.h"
#include "app/cli/command.h"

#include "core/common/fileutil.h"
#include "core/rundir/shmsegments.h"
#include "launcher/jsonoutput.h"
#include "launcher/launchflags.h"
#include "launcher/launchplan.h"
#include "launcher/machinerendezvous.h"
#include "launcher/rundirectory.h"
#include "launcher/runsupervisor.h"
#include "launcher/signalwatcher.h"
#include "monitor/supervisormonitor.h"
#include "monitor/trackers/trackerhook.h"
#include "monitor/trackers/trackerimport.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>

namespace accel::cli {

void captureStacksOnHang(accel::monitor::SupervisorMonitor &monitor, const QString &runDirectory); // cmd_stack.cpp

namespace {

using namespace accel::launcher;

void addLaunchOptions(ArgParser &parser)
{
    for (const LaunchFlag &flag : launchFlags()) {
        OptionSpec spec;
        spec.name = flag.name;
        spec.help = flag.help;
        spec.shortName = flag.shortName;
        spec.repeatable = flag.repeatable;
        spec.choices = flag.choices;
        if (flag.kind != LaunchFlag::Kind::Switch) {
            spec.valueName = flag.valueName;
            spec.defaultValue = flag.defaultValue ? flag.defaultValue : "";
        }
        parser.addOption(std::move(spec));
    }
    parser.addValue("system_sample_hz", "HZ",
                    "system samples (CPU, memory, GPU per rank) per second into metrics/system.jsonl: 0 (off) to 10",
                    "2");
    // Internal: set by --detach for the background supervisor.
    parser.addFlag("detached_supervisor", "(internal) this process is the detached supervisor");
    parser.addPositional(
        {"script", "training script (or module with -m, program with --no_python) and its arguments", true, true});
    parser.setEpilog("Flags accept --a_b and --a-b spellings. Everything after SCRIPT is passed to it untouched.\n"
                     "Runs are kept under ${XDG_DATA_HOME:-~/.local/share}/accel-studio/runs; see 'accel runs'.");
}

// --grace_period in milliseconds, or -1 when it is not a number of seconds >= 0.
int gracePeriodMs(const ArgParser &parser)
{
    const std::string text = parser.valueOr("grace_period", "5");
    char *end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(seconds >= 0) || seconds > 86400)
        return -1;
    return static_cast<int>(seconds * 1000.0);
}

// --system_sample_hz as a number in 0..10, or -1 when it is not one.
double systemSampleHz(const ArgParser &parser)
{
    const std::string text = parser.valueOr("system_sample_hz", "2");
    char *end = nullptr;
    const double hz = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(hz >= 0) || hz > 10)
        return -1;
    return hz;
}

int runSupervisor(const LaunchSettings &settings, const EnvMap &base, RunDirectory &run, const ArgParser &parser,
                  const accel::monitor::SupervisorMonitorSettings &monitorSettings, bool attachedToTerminal,
                  int storeListenFd)
{
    int argc = 1;
    char name[] = "accel";
    char *argv[] = {name, nullptr};
    QCoreApplication app(argc, argv);
    // `accel launch ... | head` must not kill the run when the reader goes away.
    std::signal(SIGPIPE, SIG_IGN);
    // A file-size limit makes writes fail (reported, the run fails) instead of killing the supervisor.
    std::signal(SIGXFSZ, SIG_IGN);
    // Everything the supervisor and its monitor write is private; the ranks get the user's umask.
    const mode_t userUmask = ::umask(077);
    SupervisorOptions options;
    options.graceMs = gracePeriodMs(parser);
    options.mirror = attachedToTerminal && !parser.isSet("no_mirror");
    options.rankUmask = static_cast<int>(userUmask);
    options.storeListenFd = storeListenFd;
    // c10d on several machines: the machines agree on machine ranks before every attempt.
    std::unique_ptr<MachineRendezvous> rendezvous;
    if (settings.machineRankAtRendezvous()) {
        rendezvous =
            std::make_unique<MachineRendezvous>(settings.rendezvous, settings.numMachines, settings.processesPerNode(),
                                                QString::fromStdString(settings.rendezvousId));
        options.rendezvous = rendezvous.get();
        QObject::connect(rendezvous.get(), &MachineRendezvous::finished, &app, [](const RendezvousOutcome &outcome) {
            if (outcome.ok)
                std::fprintf(stderr,
                             "accel launch: rendezvous (attempt %d): this machine is machine %d; machines: %s\n",
                             outcome.round, outcome.machineRank,
                             outcome.machines.join(QStringLiteral(", ")).toLocal8Bit().constData());
        });
    }
    RunSupervisor supervisor(settings, base, &run, options);
    // System sampling and hang/straggler detection beside the ranks (launcher/ knows nothing of
    // monitor/: the wiring is here). run.json records it so a studio does not detect twice.
    accel::monitor::SupervisorMonitor monitor(run.path(), monitorSettings);
    captureStacksOnHang(monitor, run.path()); // the hang autopsy (cmd_stack.cpp)
    QJsonObject manifest = run.manifest();
    manifest[QStringLiteral("monitor")] = monitor.manifestEntry();
    (void)run.writeManifest(manifest);
    QObject::connect(&supervisor, &RunSupervisor::rankStarted, &monitor,
                     &accel::monitor::SupervisorMonitor::rankStarted);
    QObject::connect(&supervisor, &RunSupervisor::rankExited, &monitor,
                     [&monitor](const RankExit &exit) { monitor.rankExited(exit.rank); });
    QObject::connect(&supervisor, &RunSupervisor::finished, &monitor, [&monitor] { monitor.stop(); });
    // The script's own trackers (TensorBoard, MLflow, trackio) read into the run's metrics
    // (docs/trackers.md). A rank's exit reads what it wrote last before the run's end is recorded.
    accel::trackers::TrackerImportSettings trackerSettings;
    trackerSettings.discover = settings.trackerStartupHook;
    for (const std::string &folder : parser.values("tracker_dir"))
        trackerSettings.folders << QFileInfo(QString::fromStdString(folder)).absoluteFilePath();
    trackerSettings.since = double(QDateTime::currentMSecsSinceEpoch()) / 1000.0 - 1.0;
    if (settings.trackerStartupHook) {
        if (auto written = accel::trackers::writeTrackerHook(run.path()); !written)
            std::fprintf(stderr, "accel launch: warning: trackers are not discovered: %s\n",
                         written.error().toString().c_str());
    }
    accel::trackers::TrackerImport trackers(run.path(), trackerSettings);
    QObject::connect(&supervisor, &RunSupervisor::rankStarted, &trackers, &accel::trackers::TrackerImport::rankStarted);
    QObject::connect(&supervisor, &RunSupervisor::rankExited, &trackers,
                     [&trackers](const RankExit &exit) { trackers.rankExited(exit.rank); });
    QObject::connect(&supervisor, &RunSupervisor::finished, &trackers, [&trackers] { trackers.stop(); });
    SignalWatcher signals;
    QObject::connect(&signals, &SignalWatcher::signalReceived, &supervisor, [&supervisor](int signal) {
        const char *abbrev = sigabbrev_np(signal);
        std::fprintf(stderr, "accel launch: SIG%s received, stopping all ranks\n", abbrev ? abbrev : "?");
        supervisor.stop(QStringLiteral("supervisor received SIG%1").arg(QString::fromLatin1(abbrev ? abbrev : "?")));
    });
    QObject::connect(&supervisor, &RunSupervisor::restarting, &app, [](int count, const QString &reason) {
        std::fprintf(stderr, "accel launch: %s; restarting all ranks (restart %d)\n", reason.toLocal8Bit().constData(),
                     count);
    });
    int exitCode = 0;
    const bool quiet = parser.isSet("quiet");
    QObject::connect(&supervisor, &RunSupervisor::finished, &app, [&](const RunOutcome &outcome) {
        exitCode = outcome.exitCode;
        if (outcome.state == QLatin1String(runstate::Succeeded)) {
            std::fprintf(stderr, "accel launch: run %s succeeded; run directory %s\n",
                         run.id().toLocal8Bit().constData(), run.path().toLocal8Bit().constData());
        } else if (quiet) {
            exitCode = 1;
        } else {
            std::fprintf(stderr, "\naccel launch: %s\n%s", outcome.reason.toLocal8Bit().constData(),
                         formatRunSummary(outcome, &run).toLocal8Bit().constData());
            std::fprintf(stderr, "run directory: %s\n", run.path().toLocal8Bit().constData());
        }
        app.exit(exitCode);
    });
    monitor.start();
    trackers.start();
    QMetaObject::invokeMethod(&supervisor, &RunSupervisor::start, Qt::QueuedConnection);
    app.exec();
    return exitCode;
}

} // namespace

#ifdef ACCEL_CLI_HAVE_HOSTS
bool launchesOnHosts(int argc, char **argv); // cmd_hosts_launch.cpp: --hosts is `accel hosts launch`
int runLaunchOnHosts(int argc, char **argv);
#endif

// Blocks SIGINT/SIGTERM/SIGHUP/SIGQUIT from the first moment: a Ctrl-C before the supervisor's
// handler exists waits as pending and stops the run cleanly once SignalWatcher unblocks it. Paths
// that end without a supervisor unblock on the way out (the default action then applies).
struct StopSignalsBlocked {
    StopSignalsBlocked() { SignalWatcher::blockStopSignals(); }
    ~StopSignalsBlocked() { SignalWatcher::unblockStopSignals(); }
};

static int runLaunch(int argc, char **argv)
{
#ifdef ACCEL_CLI_HAVE_HOSTS
    if (launchesOnHosts(argc, argv))
        return runLaunchOnHosts(argc, argv);
#endif
    const StopSignalsBlocked blocked;
    ArgParser parser("accel launch", "Launch a training script (or an accel-worker job) on this machine's ranks, "
                                     "the way `accelerate launch` does.");
    addLaunchOptions(parser);
#ifdef ACCEL_CLI_HAVE_HOSTS
    parser.addValue("hosts", "H1,H2,...",
                    "launch on these hosts over SSH, one node each, machine 0 first, after the network pre-flight: "
                    "`accel hosts launch H1,H2 -- FLAGS SCRIPT` (also takes its --config_dir, --record, "
                    "--remote_env, --remote_accel, --timeout, --accept_new_host_key; docs/remote.md)");
#endif
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel launch: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    if (gracePeriodMs(parser) < 0) {
        std::fprintf(stderr, "accel launch: --grace_period: expected seconds (0-86400), got '%s'\n",
                     parser.valueOr("grace_period", "").c_str());
        return ExitBadInput;
    }
    const double sampleHz = systemSampleHz(parser);
    if (sampleHz < 0) {
        std::fprintf(stderr,
                     "accel launch: --system_sample_hz: expected samples per second from 0 (off) to 10, got '%s'\n",
                     parser.valueOr("system_sample_hz", "").c_str());
        return ExitBadInput;
    }
    const auto monitorSettings = accel::monitor::supervisorMonitorSettings(sampleHz);
    if (!monitorSettings) {
        std::fprintf(stderr, "accel launch: %s\n", monitorSettings.error().toString().c_str());
        return exitCodeFor(monitorSettings.error());
    }
    auto prepared = prepareLaunch(parser);
    if (!prepared) {
        std::fprintf(stderr, "accel launch: %s\n", prepared.error().toString().c_str());
        return exitCodeFor(prepared.error());
    }
    LaunchSettings &settings = prepared->settings;
    // The trackers' start-up hook on the ranks' PYTHONPATH (docs/trackers.md).
    settings.trackerStartupHook = !parser.isSet("no_tracker_discovery");
    const bool quiet = parser.isSet("quiet");

    if (parser.isSet("dry_run")) {
        if (parser.isSet("json"))
            std::printf("%s", schemaJson(launchPlanJson(settings, prepared->baseEnvironment)).constData());
        else
            std::printf("%s", launchPlanText(settings, prepared->baseEnvironment).toLocal8Bit().constData());
        return ExitOk;
    }
    if (!quiet) {
        for (const std::string &note : settings.notes)
            std::fprintf(stderr, "accel launch: note: %s\n", note.c_str());
    }
    if (parser.isSet("detach")) {
        prepared->storePort.reset(); // the detached supervisor chooses and holds the port itself
        return detachSupervisor(argc, argv, settings, parser.isSet("json"));
    }

    auto run = createRunDirectory(*prepared, argc, argv);
    if (!run) {
        std::fprintf(stderr, "accel launch: %s\n", run.error().toString().c_str());
        return exitCodeFor(run.error());
    }
    // Segments of runs whose every process was killed at once (reaper included) go now.
    if (const int removed = accel::rundir::removeSegmentsOfDeadProcesses(); removed > 0 && !quiet)
        std::fprintf(stderr,
                     "accel launch: note: removed %d shared-memory segment(s) of processes that no longer exist\n",
                     removed);
    if (!quiet && !parser.isSet("detached_supervisor"))
        std::fprintf(stderr, "accel launch: run %s (%d rank(s), %s launcher); logs in %s/logs\n",
                     run->id().toLocal8Bit().constData(), settings.processesPerNode(),
                     launcherKindName(settings.launcher), run->path().toLocal8Bit().constData());
    return runSupervisor(settings, prepared->baseEnvironment, *run, parser, *monitorSettings,
                         !parser.isSet("detached_supervisor"), prepared->storePort ? prepared->storePort->fd() : -1);
}

static Registrar registrar({"launch", "launch a script or job on this machine's ranks (accelerate launch)",
                            &runLaunch});

} // namespace accel::cli
