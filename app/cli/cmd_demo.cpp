// accel demo: the built-in demo, headless. `accel launch` of the runtime's GPT recipe job on 2 CPU
// ranks, with a terminal progress bar (step / total, loss, tokens/s) read from the run's metrics
// files, and the run directory printed at the end.
#include "app/cli/argparser.h"
#include "app/cli/cmd_launch_support.h"
#include "app/cli/command.h"

#include "core/rundir/runlayout.h"
#include "launcher/filefollower.h"
#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QTimer>

#include <cstdio>
#include <map>
#include <unistd.h>

#ifndef ACCEL_DEMO_SOURCE_ROOT
#define ACCEL_DEMO_SOURCE_ROOT ""
#endif

namespace accel::cli {

using namespace accel::launcher;

namespace {

QString findDemoJob()
{
    const QString exeDir = QFileInfo(QStringLiteral("/proc/self/exe")).canonicalPath();
    QStringList candidates = {exeDir + QStringLiteral("/../share/accel-studio/jobs/demo-gpt.yaml"),
                              exeDir + QStringLiteral("/../resources/jobs/demo-gpt.yaml")};
    if (const QString source = qEnvironmentVariable("ACCEL_SOURCE_DIR"); !source.isEmpty())
        candidates << source + QStringLiteral("/resources/jobs/demo-gpt.yaml");
    candidates << QStringLiteral(ACCEL_DEMO_SOURCE_ROOT "/resources/jobs/demo-gpt.yaml");
    for (const QString &candidate : candidates) {
        if (QFileInfo::exists(candidate))
            return QFileInfo(candidate).canonicalFilePath();
    }
    return {};
}

int totalSteps(const QString &job)
{
    QFile file(job);
    if (!file.open(QIODevice::ReadOnly))
        return 0;
    const auto match =
        QRegularExpression(QStringLiteral("(?m)^\\s*max_steps:\\s*(\\d+)")).match(QString::fromUtf8(file.readAll()));
    return match.hasMatch() ? match.captured(1).toInt() : 0;
}

struct Progress {
    qint64 step = 0;
    double loss = qQNaN();
    std::map<int, double> tokensPerSecond; // latest per rank
    double tokens() const
    {
        double sum = 0;
        for (const auto &entry : tokensPerSecond)
            sum += entry.second;
        return sum;
    }
};

QString bar(const Progress &progress, int total)
{
    const int width = 30;
    const double fraction = total > 0 ? std::min(1.0, static_cast<double>(progress.step) / total) : 0.0;
    const int filled = static_cast<int>(fraction * width);
    QString text = QStringLiteral("[") + QString(filled, QLatin1Char('#')) + QString(width - filled, QLatin1Char('.')) +
                   QStringLiteral("] ");
    text += total > 0 ? QStringLiteral("%1/%2").arg(progress.step).arg(total) : QString::number(progress.step);
    if (!qIsNaN(progress.loss))
        text += QStringLiteral("  loss %1").arg(progress.loss, 0, 'f', 4);
    if (!progress.tokensPerSecond.empty())
        text += QStringLiteral("  tokens/s %1").arg(progress.tokens(), 0, 'f', 0);
    return text;
}

} // namespace

static int runDemo(int argc, char **argv)
{
    ArgParser parser("accel demo",
                     "Train the built-in demo GPT on 2 CPU ranks through accel launch, with a progress bar.");
    parser.addValue("job", "JOB.yaml", "job to run instead of resources/jobs/demo-gpt.yaml");
    parser.addValue("num_processes", "N", "ranks", "2");
    parser.addValue("run_dir", "DIR", "run directory (default: a new one under the runs root)");
    parser.addFlag("json", "print a summary object (accel.demo) at the end instead of the bar");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return ExitOk;
        }
        std::fprintf(stderr, "accel demo: %s\n", parser.error().c_str());
        return ExitBadInput;
    }
    const QString job = parser.isSet("job") ? QFileInfo(QString::fromStdString(*parser.value("job"))).absoluteFilePath()
                                            : findDemoJob();
    if (job.isEmpty() || !QFileInfo::exists(job)) {
        std::fprintf(stderr, "accel demo: demo job not found (resources/jobs/demo-gpt.yaml); pass --job\n");
        return ExitBadInput;
    }
    const std::string worker = workerProgramPath();
    if (auto found = checkWorkerProgram(worker); !found) {
        std::fprintf(stderr, "accel demo: %s\n", found.error().toString().c_str());
        return exitCodeFor(found.error());
    }
    QString runDir = QString::fromStdString(parser.valueOr("run_dir", ""));
    if (runDir.isEmpty())
        runDir =
            RunDirectory::defaultRunsRoot() + QLatin1Char('/') + RunDirectory::makeRunId(QStringLiteral("demo-gpt"));
    runDir = QFileInfo(runDir).absoluteFilePath();
    const bool json = parser.isSet("json");
    const bool terminal = ::isatty(2) && !json;
    const int total = totalSteps(job);
    // accel launch refuses a bad --num_processes; the ranks' metrics files are followed by name.
    const int ranks = QString::fromStdString(parser.valueOr("num_processes", "2")).toInt();

    int fakeArgc = 1;
    char name[] = "accel";
    char *fakeArgv[] = {name, nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    QProcess launch;
    launch.setProgram(QFileInfo(QStringLiteral("/proc/self/exe")).canonicalFilePath());
    launch.setArguments({QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"),
                         QString::fromStdString(parser.valueOr("num_processes", "2")),
                         QStringLiteral("--num_cpu_threads_per_process"), QStringLiteral("1"),
                         QStringLiteral("--main_process_port"), QStringLiteral("0"), QStringLiteral("--no_mirror"),
                         QStringLiteral("--run_dir"), runDir, QStringLiteral("--name"), QStringLiteral("demo-gpt"),
                         QStringLiteral("--job"), job});
    launch.setProcessChannelMode(QProcess::MergedChannels);

    Progress progress;
    FileFollower follower;
    int lastDecile = -1;
    auto poll = [&] {
        for (int rank = 0; rank < ranks; ++rank) {
            const QString path = QDir(runDir).filePath(QString::fromStdString(accel::rundir::metricsFile(rank)));
            if (!follower.files().contains(path) && QFileInfo::exists(path))
                follower.addFile(path);
        }
        for (const FileFollower::Line &line : follower.poll()) {
            const QJsonObject sample = QJsonDocument::fromJson(line.text.toUtf8()).object();
            const int rank = sample.value(QStringLiteral("rank")).toInt(-1);
            if (sample.contains(QStringLiteral("tokens_per_s")) && rank >= 0)
                progress.tokensPerSecond[rank] = sample.value(QStringLiteral("tokens_per_s")).toDouble();
            if (rank == 0 && sample.contains(QStringLiteral("step"))) {
                progress.step = std::max<qint64>(progress.step, sample.value(QStringLiteral("step")).toInteger());
                if (sample.value(QStringLiteral("loss")).isDouble())
                    progress.loss = sample.value(QStringLiteral("loss")).toDouble();
            }
        }
        if (terminal) {
            std::fprintf(stderr, "\r%s", bar(progress, total).toLocal8Bit().constData());
            std::fflush(stderr);
        } else if (!json && total > 0) {
            const int decile = static_cast<int>(10 * progress.step / total);
            if (decile != lastDecile && progress.step > 0) {
                lastDecile = decile;
                std::fprintf(stderr, "%s\n", bar(progress, total).toLocal8Bit().constData());
            }
        }
    };
    QTimer timer;
    QObject::connect(&timer, &QTimer::timeout, &app, poll);
    int exitCode = 1;
    QObject::connect(&launch, &QProcess::finished, &app, [&](int code, QProcess::ExitStatus status) {
        timer.stop();
        poll();
        exitCode = status == QProcess::NormalExit ? code : 1;
        app.quit();
    });
    QObject::connect(&launch, &QProcess::errorOccurred, &app, [&](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart)
            app.quit();
    });
    timer.start(250);
    launch.start();
    app.exec();
    if (terminal)
        std::fprintf(stderr, "\n");
    const QByteArray launchOutput = launch.readAll();
    if (exitCode != 0)
        std::fprintf(stderr, "%s", launchOutput.constData());
    if (json) {
        const QJsonObject summary{
            {QStringLiteral("run_dir"), runDir},
            {QStringLiteral("job"), job},
            {QStringLiteral("exit_code"), exitCode},
            {QStringLiteral("steps"), progress.step},
            {QStringLiteral("total_steps"), total},
            {QStringLiteral("final_loss"), qIsNaN(progress.loss) ? QJsonValue() : QJsonValue(progress.loss)},
            {QStringLiteral("tokens_per_s"), progress.tokens()}};
        std::printf("%s", schemaJson(QStringLiteral("accel.demo"), 1, summary).constData());
    } else {
        std::printf("run directory: %s\n", runDir.toLocal8Bit().constData());
    }
    return exitCode;
}

static Registrar registrar({"demo", "train the built-in demo GPT on 2 CPU ranks with a progress bar", &runDemo});

} // namespace accel::cli
