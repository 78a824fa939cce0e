#include "launcher/launchplan.h"

#include "core/rundir/redaction.h"

#include "launcher/envbuilder.h"
#include "launcher/export/shellquote.h"
#include "launcher/rundirectory.h"

#include "core/rundir/privatefiles.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>

#include <unistd.h>

namespace accel::launcher {

namespace {
QJsonArray stringArray(const std::vector<std::string> &items)
{
    QJsonArray array;
    for (const std::string &item : items)
        array.append(QString::fromStdString(item));
    return array;
}

QJsonObject envJson(const EnvMap &env)
{
    QJsonObject object;
    for (const auto &[name, value] : env)
        object.insert(QString::fromStdString(name), QString::fromStdString(value));
    return object;
}
} // namespace

QJsonObject settingsJson(const LaunchSettings &s)
{
    QJsonObject args;
    for (const auto &[name, value] : s.args)
        args.insert(QString::fromStdString(name), QString::fromStdString(value.text));
    return QJsonObject{
        {QStringLiteral("launcher"), QString::fromLatin1(launcherKindName(s.launcher))},
        {QStringLiteral("distributed_type"), QString::fromStdString(s.distributedType)},
        {QStringLiteral("num_processes"), s.numProcesses},
        {QStringLiteral("num_machines"), s.numMachines},
        {QStringLiteral("machine_rank"), s.machineRank},
        {QStringLiteral("local_processes"), s.processesPerNode()},
        {QStringLiteral("main_process_ip"), QString::fromStdString(s.masterAddress())},
        {QStringLiteral("main_process_port"), s.mainProcessPort},
        {QStringLiteral("mixed_precision"), QString::fromStdString(s.mixedPrecision)},
        {QStringLiteral("cpu"), s.cpu},
        {QStringLiteral("gpu_ids"), QString::fromStdString(s.gpuIds)},
        {QStringLiteral("threads_per_process"), s.threadsPerProcess},
        {QStringLiteral("max_restarts"), s.maxRestarts},
        {QStringLiteral("dynamo_backend"), QString::fromStdString(s.dynamoBackend)},
        {QStringLiteral("use_fsdp"), s.useFsdp},
        {QStringLiteral("use_deepspeed"), s.useDeepSpeed},
        {QStringLiteral("use_megatron_lm"), s.useMegatron},
        {QStringLiteral("use_parallelism_config"), s.useParallelismConfig},
        {QStringLiteral("args"), args},
    };
}

QJsonObject launchPlanJson(const LaunchSettings &settings, const EnvMap &base)
{
    QJsonArray ranks;
    const std::vector<std::string> command = buildRankCommand(settings, base);
    for (int local = 0; local < settings.processesPerNode(); ++local) {
        const EnvMap env = buildRankEnvironment(settings, base, {local, 0});
        ranks.append(QJsonObject{{QStringLiteral("rank"), globalRank(settings, local)},
                                 {QStringLiteral("local_rank"), local},
                                 {QStringLiteral("command"), stringArray(command)},
                                 {QStringLiteral("env"), envJson(environmentDifference(base, env))}});
    }
    return QJsonObject{{QStringLiteral("schema"), QStringLiteral("accel.launch-plan")},
                       {QStringLiteral("version"), 1},
                       {QStringLiteral("run_dir"), QString::fromStdString(settings.runDirectory)},
                       {QStringLiteral("settings"), settingsJson(settings)},
                       {QStringLiteral("notes"), stringArray(settings.notes)},
                       {QStringLiteral("ranks"), ranks}};
}

QString processCountText(const LaunchSettings &settings)
{
    const QString here = settings.processesPerNode() == 1
                             ? QStringLiteral("1 process on this machine")
                             : QStringLiteral("%1 processes on this machine").arg(settings.processesPerNode());
    if (settings.numMachines <= 1)
        return here;
    return QStringLiteral("%1, %2 in total on %3 machines")
        .arg(here)
        .arg(settings.numProcesses)
        .arg(settings.numMachines);
}

QJsonObject manifestAfterRendezvous(QJsonObject manifest, const LaunchSettings &settings, const EnvMap &base)
{
    const QJsonObject fresh = launchPlanJson(settings, base);
    manifest[QStringLiteral("settings")] = fresh.value(QStringLiteral("settings"));
    const QJsonArray freshRanks = fresh.value(QStringLiteral("ranks")).toArray();
    QJsonArray plan = manifest.value(QStringLiteral("plan")).toArray();
    for (int i = 0; i < plan.size() && i < freshRanks.size(); ++i) {
        QJsonObject entry = plan.at(i).toObject();
        const QJsonObject now = freshRanks.at(i).toObject();
        entry[QStringLiteral("rank")] = now.value(QStringLiteral("rank"));
        QJsonObject env = entry.value(QStringLiteral("env")).toObject();
        const QJsonObject nowEnv = now.value(QStringLiteral("env")).toObject();
        for (auto it = env.begin(); it != env.end(); ++it) {
            if (!it.value().toString().contains(QLatin1String(rundir::kRedacted)) && nowEnv.contains(it.key()))
                it.value() = nowEnv.value(it.key());
        }
        entry[QStringLiteral("env")] = env;
        plan[i] = entry;
    }
    manifest[QStringLiteral("plan")] = plan;
    return manifest;
}

QString launchPlanText(const LaunchSettings &settings, const EnvMap &base)
{
    QString text;
    text += QStringLiteral("launcher: %1 (%2), %3\n")
                .arg(QString::fromLatin1(launcherKindName(settings.launcher)),
                     QString::fromStdString(settings.distributedType), processCountText(settings));
    text += QStringLiteral("run directory: %1\n").arg(QString::fromStdString(settings.runDirectory));
    for (const std::string &note : settings.notes)
        text += QStringLiteral("note: %1\n").arg(QString::fromStdString(note));
    // Shell-quoted, so a command can be pasted into a shell as it is.
    const QString commandText = QString::fromStdString(exporting::shellJoin(buildRankCommand(settings, base)));
    for (int local = 0; local < settings.processesPerNode(); ++local) {
        text += QStringLiteral("\nrank %1: %2\n").arg(globalRank(settings, local)).arg(commandText);
        for (const auto &[name, value] : environmentDifference(base, buildRankEnvironment(settings, base, {local, 0})))
            text += QStringLiteral("  %1=%2\n")
                        .arg(QString::fromStdString(name), QString::fromStdString(exporting::shellQuote(value)));
    }
    return text;
}

QStringList lastLines(const QString &path, int count)
{
    // Never through a symlink in place of the log or its folder (core/rundir).
    const QFileInfo info(path);
    auto fd = rundir::openRunFile(QFile::encodeName(info.path()).toStdString(),
                                  QFile::encodeName(info.fileName()).toStdString(), rundir::OpenFor::Read);
    if (!fd)
        return {};
    QFile file;
    if (!file.open(*fd, QIODevice::ReadOnly, QFileDevice::AutoCloseHandle)) {
        ::close(*fd);
        return {};
    }
    const qint64 size = file.size();
    file.seek(std::max<qint64>(0, size - 8192));
    QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'));
    while (!lines.isEmpty() && lines.last().trimmed().isEmpty())
        lines.removeLast();
    return lines.mid(std::max<qsizetype>(0, lines.size() - count));
}

QString formatRunSummary(const RunOutcome &outcome, const RunDirectory *run, int logLines)
{
    QString text = QStringLiteral("%1  %2  %3\n")
                       .arg(QStringLiteral("rank"), -5)
                       .arg(QStringLiteral("result"), -26)
                       .arg(QStringLiteral("runtime"), 9);
    for (const RankExit &exit : outcome.ranks) {
        text += QStringLiteral("%1  %2  %3\n")
                    .arg(exit.rank, -5)
                    .arg(exit.describe().left(26), -26)
                    .arg(QStringLiteral("%1 s").arg(exit.runtimeSeconds, 0, 'f', 2), 9);
        if (run) {
            for (const QString &line : lastLines(run->logPath(exit.rank), logLines))
                text += QStringLiteral("       | %1\n").arg(line.left(160));
        }
    }
    text += QStringLiteral("run %1: %2, exit code %3")
                .arg(run ? run->id() : QStringLiteral("-"), outcome.state)
                .arg(outcome.exitCode);
    if (outcome.failedRank >= 0)
        text += QStringLiteral(" (first failure: rank %1)").arg(outcome.failedRank);
    if (outcome.restarts > 0)
        text += QStringLiteral(", %1 restart(s)").arg(outcome.restarts);
    text += QLatin1Char('\n');
    return text;
}

} // namespace accel::launcher
