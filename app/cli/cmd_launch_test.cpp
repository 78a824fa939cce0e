// accel test: `accelerate test` for Accel Studio. Runs, through the real launcher and with the
// given config file (or 2 CPU ranks when there is none), each check it can:
//   1. the runtime's distributed self-test job in accel-worker (rendezvous, all-reduce, broadcast,
//      gather, one DDP step);
//   2. Accelerate's own test script (accelerate/test_utils/scripts/test_script.py) under
//      `accel launch`, when a Python with accelerate is found (PYTHON_EXEC, else python3).
// It prints which checks ran, what each one tested, and its own verdict per check.
#include "app/cli/argparser.h"
#include "app/cli/cmd_launch_support.h"
#include "app/cli/command.h"
#include "core/common/huggingfacehome.h"

#include "core/common/programs.h"
#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace accel::cli {

using namespace accel::launcher;

namespace {

// The sentence `accelerate test` prints after Accelerate's script passed. The runtime self-test
// ends with it too; accel test gives its own verdict per check instead of repeating it.
const QByteArray kAccelerateSuccessLine = "Test is a success! You are ready for your distributed training!";

struct Check {
    QString name;
    QString status = QStringLiteral("skipped"); // passed | failed | skipped
    QString reason;                             // why it was skipped or failed
    QStringList arguments;                      // accel launch ...
    QString runDir;
    int exitCode = -1;
    QStringList sections; // what the check reported testing
    QByteArray output;
};

struct AcceleratePackage {
    QString python;
    QString version;
    QString testScript;
    QString problem; // empty when found
};

// Where the ranks' Python finds accelerate (without importing it: that would load torch).
AcceleratePackage findAccelerate()
{
    AcceleratePackage found;
    found.python = QString::fromStdString(scriptPython({}, std::getenv(pythonProgramVariable)));
    QProcess probe;
    probe.start(found.python,
                {QStringLiteral("-c"), QStringLiteral("import importlib.util, importlib.metadata as m\n"
                                                      "spec = importlib.util.find_spec('accelerate')\n"
                                                      "print(m.version('accelerate') if spec else '')\n"
                                                      "print(spec.submodule_search_locations[0] if spec else '')\n")});
    if (!probe.waitForFinished(20000) || probe.exitStatus() != QProcess::NormalExit || probe.exitCode() != 0) {
        probe.kill();
        found.problem =
            QStringLiteral("%1 did not run (set PYTHON_EXEC to a Python with accelerate)").arg(found.python);
        return found;
    }
    const QStringList lines = QString::fromUtf8(probe.readAllStandardOutput()).split(QLatin1Char('\n'));
    if (lines.size() < 2 || lines[0].trimmed().isEmpty()) {
        found.problem = QStringLiteral("%1 has no accelerate package (set PYTHON_EXEC to a Python with accelerate)")
                            .arg(found.python);
        return found;
    }
    found.version = lines[0].trimmed();
    found.testScript = lines[1].trimmed() + QStringLiteral("/test_utils/scripts/test_script.py");
    if (!QFileInfo(found.testScript).isFile())
        found.problem = QStringLiteral("accelerate %1 has no %2").arg(found.version, found.testScript);
    return found;
}

// Runs `accel <arguments>`, streaming its output unless `quiet`; returns the exit code.
int runLaunch(Check &check, const QStringList &extraEnv, bool quiet)
{
    QProcess launch;
    launch.setProgram(QFileInfo(QStringLiteral("/proc/self/exe")).canonicalFilePath());
    launch.setArguments(check.arguments);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString &entry : extraEnv)
        env.insert(entry.section(QLatin1Char('='), 0, 0), entry.section(QLatin1Char('='), 1));
    launch.setProcessEnvironment(env);
    launch.setProcessChannelMode(QProcess::MergedChannels);
    launch.start();
    if (!launch.waitForStarted(10000)) {
        check.reason = QStringLiteral("could not run accel launch: ") + launch.errorString();
        return 1;
    }
    static const QRegularExpression section(
        QStringLiteral("^(?:\\[rank \\d+\\] )?(?:\\*\\*(.+)\\*\\*|  (?:ok|FAIL)  +(.+))$"));
    QByteArray pending;
    auto consume = [&](bool flush) {
        pending += launch.readAll();
        qsizetype end;
        while ((end = pending.indexOf('\n')) >= 0 || (flush && !pending.isEmpty())) {
            const QByteArray line = end >= 0 ? pending.left(end) : pending;
            pending = end >= 0 ? pending.mid(end + 1) : QByteArray();
            if (line.trimmed() == kAccelerateSuccessLine)
                continue;
            check.output += line + '\n';
            if (auto match = section.match(QString::fromUtf8(line)); match.hasMatch())
                check.sections << (match.captured(1).isEmpty() ? match.captured(2) : match.captured(1)).trimmed();
            if (!quiet) {
                std::fwrite(line.constData(), 1, static_cast<size_t>(line.size()), stdout);
                std::fputc('\n', stdout);
                std::fflush(stdout);
            }
        }
    };
    while (!launch.waitForFinished(200))
        consume(false);
    consume(true);
    check.sections.removeDuplicates();
    return launch.exitStatus() == QProcess::NormalExit ? launch.exitCode() : 1;
}

QJsonObject checkJson(const Check &check)
{
    QJsonArray arguments{QStringLiteral("accel")};
    for (const QString &argument : check.arguments)
        arguments.append(argument);
    return QJsonObject{{QStringLiteral("name"), check.name},
                       {QStringLiteral("status"), check.status},
                       {QStringLiteral("reason"), check.reason},
                       {QStringLiteral("exit_code"), check.exitCode},
                       {QStringLiteral("run_dir"), check.runDir},
                       {QStringLiteral("command"), check.status == QLatin1String("skipped") ? QJsonArray() : arguments},
                       {QStringLiteral("tested"), QJsonArray::fromStringList(check.sections)},
                       {QStringLiteral("output"), QString::fromUtf8(check.output)}};
}

bool defaultConfigExists()
{
    // Accelerate's default config file, as accel launch reads it.
    std::error_code ignored;
    return std::filesystem::exists(accel::accelerateDefaultConfigPath(), ignored);
}

} // namespace

static int runTest(int argc, char **argv)
{
    ArgParser parser("accel test",
                     "Run short distributed checks through accel launch: the runtime's self-test (accel-worker) and, "
                     "when a Python with accelerate is found (PYTHON_EXEC, else python3), Accelerate's own test "
                     "script. Prints which checks ran and each one's verdict; exit 0 when every check that ran "
                     "passed.");
    parser.addValue("config_file", "FILE",
                    "cluster config to test (default: Accelerate's default config, else 2 CPU ranks)");
    parser.addValue("num_processes", "N", "ranks (overrides the config)");
    parser.addValue("run_dir", "DIR",
                    "run directory of the self-test (default: a new one under the runs root); Accelerate's script "
                    "runs in DIR-accelerate");
    parser.addFlag("json", "print a summary object (accel.test) instead of the ranks' output");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel test: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const bool json = parser.isSet("json");

    // The launch flags both checks share. Without a config: 2 CPU ranks on a free port. A config
    // keeps its own port (port 0 is refused for multi-node configs, whose machines must agree).
    QStringList shared;
    const bool haveConfig = parser.isSet("config_file") || defaultConfigExists();
    if (auto config = parser.value("config_file"))
        shared << QStringLiteral("--config_file") << QString::fromStdString(*config);
    if (!haveConfig)
        shared << QStringLiteral("--cpu") << QStringLiteral("--num_processes")
               << QString::fromStdString(parser.valueOr("num_processes", "2")) << QStringLiteral("--main_process_port")
               << QStringLiteral("0");
    else if (auto processes = parser.value("num_processes"))
        shared << QStringLiteral("--num_processes") << QString::fromStdString(*processes);
    QString runDir = QString::fromStdString(parser.valueOr("run_dir", ""));
    if (runDir.isEmpty())
        runDir =
            RunDirectory::defaultRunsRoot() + QLatin1Char('/') + RunDirectory::makeRunId(QStringLiteral("selftest"));
    runDir = QFileInfo(runDir).absoluteFilePath();

    std::vector<Check> checks(2);
    Check &runtime = checks[0];
    runtime.name = QStringLiteral("runtime self-test (accel-worker)");
    QTemporaryDir scratch;
    const std::string worker = workerProgramPath();
    if (auto found = checkWorkerProgram(worker); !found) {
        runtime.status = QStringLiteral("failed");
        runtime.reason = QString::fromStdString(found.error().toString());
    } else {
        const QString job = scratch.filePath(QStringLiteral("selftest.yaml"));
        QFile file(job);
        if (!file.open(QIODevice::WriteOnly)) {
            std::fprintf(stderr, "accel test: cannot write %s\n", job.toLocal8Bit().constData());
            return ExitFailure;
        }
        file.write("# accel test: the runtime's distributed self-test (docs/jobs.md)\nrecipe: selftest\nname: "
                   "selftest\nseed: 42\n");
        file.close();
        runtime.runDir = runDir;
        runtime.arguments =
            QStringList{QStringLiteral("launch")} + shared +
            QStringList{QStringLiteral("--run_dir"), runDir, QStringLiteral("--name"), QStringLiteral("selftest"),
                        QStringLiteral("--job"),     job};
    }

    Check &accelerate = checks[1];
    const AcceleratePackage package = findAccelerate();
    accelerate.name =
        package.version.isEmpty()
            ? QStringLiteral("Accelerate's test script")
            : QStringLiteral("Accelerate's test script (accelerate %1, %2)").arg(package.version, package.python);
    if (!package.problem.isEmpty()) {
        accelerate.reason = package.problem;
    } else {
        accelerate.runDir = runDir + QStringLiteral("-accelerate");
        accelerate.arguments = QStringList{QStringLiteral("launch")} + shared +
                               QStringList{QStringLiteral("--run_dir"), accelerate.runDir, QStringLiteral("--name"),
                                           QStringLiteral("accelerate-test"), package.testScript};
    }

    bool allPassed = true;
    for (Check &check : checks) {
        if (check.arguments.isEmpty()) {
            allPassed = allPassed && check.status != QLatin1String("failed");
            if (!json)
                std::printf("accel test: %s: %s (%s)\n", check.name.toLocal8Bit().constData(),
                            check.status.toLocal8Bit().constData(), check.reason.toLocal8Bit().constData());
            continue;
        }
        if (!json)
            std::printf("accel test: %s: accel %s\n", check.name.toLocal8Bit().constData(),
                        check.arguments.join(QLatin1Char(' ')).toLocal8Bit().constData());
        std::fflush(stdout);
        const QStringList env = check.name.startsWith(QLatin1String("Accelerate"))
                                    ? QStringList{QStringLiteral("PYTHON_EXEC=") + package.python}
                                    : QStringList{};
        check.exitCode = runLaunch(check, env, json);
        check.status = check.exitCode == 0 ? QStringLiteral("passed") : QStringLiteral("failed");
        if (check.exitCode != 0 && check.reason.isEmpty())
            check.reason = QStringLiteral("exit code %1; run directory %2").arg(check.exitCode).arg(check.runDir);
        allPassed = allPassed && check.exitCode == 0;
    }

    if (json) {
        QJsonArray list;
        for (const Check &check : checks)
            list.append(checkJson(check));
        // success/exit_code/run_dir/command/output describe the runtime self-test, as before.
        const QJsonObject first = checkJson(runtime);
        const QJsonObject summary{{QStringLiteral("success"), allPassed},
                                  {QStringLiteral("exit_code"), runtime.exitCode},
                                  {QStringLiteral("run_dir"), runtime.runDir},
                                  {QStringLiteral("command"), first.value(QStringLiteral("command"))},
                                  {QStringLiteral("output"), first.value(QStringLiteral("output"))},
                                  {QStringLiteral("checks"), list}};
        std::printf("%s", schemaJson(QStringLiteral("accel.test"), 1, summary).constData());
    } else {
        std::printf("\naccel test: checks run:\n");
        for (const Check &check : checks) {
            std::printf("  %-7s %s%s\n", check.status.toLocal8Bit().constData(), check.name.toLocal8Bit().constData(),
                        check.reason.isEmpty() ? "" : (" - " + check.reason).toLocal8Bit().constData());
            if (!check.sections.isEmpty())
                std::printf("          tested: %s\n",
                            check.sections.join(QStringLiteral("; ")).toLocal8Bit().constData());
        }
    }
    for (const Check &check : checks) {
        if (check.status == QLatin1String("failed") && !json)
            std::fprintf(stderr, "accel test: %s failed: %s\n", check.name.toLocal8Bit().constData(),
                         check.reason.toLocal8Bit().constData());
    }
    return allPassed ? ExitOk : ExitFailure;
}

static Registrar registrar({"test",
                            "run short distributed checks: runtime self-test and Accelerate's test script "
                            "(accelerate test)",
                            &runTest});

} // namespace accel::cli
