// accel test: `accelerate test` for Accel Studio. Runs the runtime's distributed self-test job
// (recipe selftest: rendezvous, all-reduce, broadcast, gather, one DDP step) through the real
// launcher and accel-worker, with the given config file (or 2 CPU ranks when there is none).
#include "app/cli/argparser.h"
#include "app/cli/cmd_launch_support.h"
#include "app/cli/command.h"

#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QProcess>
#include <QTemporaryDir>

#include <cstdio>
#include <filesystem>

namespace accel::cli {

using namespace accel::launcher;

static int runTest(int argc, char **argv)
{
    ArgParser parser("accel test", "Run a short distributed self-test through accel launch and accel-worker.");
    parser.addValue("config_file", "FILE",
                    "cluster config to test (default: Accelerate's default config, else 2 CPU ranks)");
    parser.addValue("num_processes", "N", "ranks (overrides the config)");
    parser.addValue("run_dir", "DIR", "run directory (default: a new one under the runs root)");
    parser.addFlag("json", "print a summary object (accel.test) instead of the ranks' output");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel test: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const std::string worker = workerProgramPath();
    if (!QFileInfo(QString::fromStdString(worker)).isExecutable()) {
        std::fprintf(stderr, "accel test: %s not found: this build has no libtorch runtime (accel-worker)\n",
                     worker.c_str());
        return ExitFailure;
    }
    QTemporaryDir scratch;
    const QString job = scratch.filePath(QStringLiteral("selftest.yaml"));
    {
        QFile file(job);
        if (!file.open(QIODevice::WriteOnly)) {
            std::fprintf(stderr, "accel test: cannot write %s\n", job.toLocal8Bit().constData());
            return ExitFailure;
        }
        file.write("# accel test: the runtime's distributed self-test (docs/jobs.md)\nrecipe: selftest\nname: "
                   "selftest\nseed: 42\n");
    }
    QString runDir = QString::fromStdString(parser.valueOr("run_dir", ""));
    if (runDir.isEmpty())
        runDir =
            RunDirectory::defaultRunsRoot() + QLatin1Char('/') + RunDirectory::makeRunId(QStringLiteral("selftest"));

    QStringList arguments = {QStringLiteral("launch")};
    // Accelerate's default config file location (facts 1.1), as accel launch reads it.
    const bool haveConfig = parser.isSet("config_file") || [] {
        const char *hfHome = std::getenv("HF_HOME");
        const char *cache = std::getenv("XDG_CACHE_HOME");
        const char *home = std::getenv("HOME");
        std::string dir = hfHome && *hfHome
                              ? std::string(hfHome) + "/accelerate"
                              : (cache && *cache ? std::string(cache) : std::string(home ? home : "") + "/.cache") +
                                    "/huggingface/accelerate";
        std::error_code ignored;
        return std::filesystem::exists(dir + "/default_config.yaml", ignored);
    }();
    if (auto config = parser.value("config_file"))
        arguments << QStringLiteral("--config_file") << QString::fromStdString(*config);
    if (!haveConfig)
        arguments << QStringLiteral("--cpu") << QStringLiteral("--num_processes")
                  << QString::fromStdString(parser.valueOr("num_processes", "2"));
    else if (auto processes = parser.value("num_processes"))
        arguments << QStringLiteral("--num_processes") << QString::fromStdString(*processes);
    arguments << QStringLiteral("--main_process_port") << QStringLiteral("0") << QStringLiteral("--run_dir") << runDir
              << QStringLiteral("--name") << QStringLiteral("selftest") << QStringLiteral("--job") << job;
    const bool json = parser.isSet("json");
    if (!json)
        std::printf("Running: accel %s\n", arguments.join(QLatin1Char(' ')).toLocal8Bit().constData());
    std::fflush(stdout);

    QProcess launch;
    launch.setProgram(QFileInfo(QStringLiteral("/proc/self/exe")).canonicalFilePath());
    launch.setArguments(arguments);
    launch.setProcessChannelMode(json ? QProcess::MergedChannels : QProcess::ForwardedChannels);
    launch.start();
    if (!launch.waitForStarted(10000) || !launch.waitForFinished(-1)) {
        std::fprintf(stderr, "accel test: could not run accel launch: %s\n",
                     launch.errorString().toLocal8Bit().constData());
        return ExitFailure;
    }
    const int exitCode = launch.exitStatus() == QProcess::NormalExit ? launch.exitCode() : 1;
    if (json) {
        const QByteArray output = launch.readAll();
        QJsonArray command{QStringLiteral("accel")};
        for (const QString &argument : arguments)
            command.append(argument);
        const QJsonObject summary{{QStringLiteral("success"), exitCode == 0 && output.contains("Test is a success")},
                                  {QStringLiteral("exit_code"), exitCode},
                                  {QStringLiteral("run_dir"), QFileInfo(runDir).absoluteFilePath()},
                                  {QStringLiteral("command"), command},
                                  {QStringLiteral("output"), QString::fromUtf8(output)}};
        std::printf("%s", schemaJson(QStringLiteral("accel.test"), 1, summary).constData());
    } else if (exitCode != 0) {
        std::fprintf(stderr, "accel test: the self-test failed (exit code %d); run directory %s\n", exitCode,
                     runDir.toLocal8Bit().constData());
    }
    return exitCode == 0 ? ExitOk : ExitFailure;
}

static Registrar registrar({"test", "run a short distributed self-test (accelerate test)", &runTest});

} // namespace accel::cli
