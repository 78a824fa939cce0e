#include "app/cli/cmd_slurm_common.h"

#include "app/cli/command.h"

#include <QEventLoop>

#include <cstdio>

namespace accel::cli::slurmcli {

using namespace accel::launcher;

void addCommonOptions(ArgParser &parser, const std::string &jsonHelp)
{
    parser.addValue("host", "HOST", "the login node: a ~/.ssh/config alias or [user@]host[:port] (required)");
    parser.addFlag("json", jsonHelp);
    hosts::addRemoteOptions(parser);
}

Result<Remote> connectRemote(const ArgParser &parser)
{
    Remote remote;
    remote.name = QString::fromStdString(parser.valueOr("host", "")).trimmed();
    if (remote.name.isEmpty())
        return makeError(ErrorCode::InvalidInput, "no host given: expected --host HOST (the cluster's login node)",
                         "--host");
    auto settings = hosts::remoteSettings(parser);
    if (!settings)
        return tl::unexpected(settings.error());
    remote.settings = *settings;
    hosts::HostGroup group = hosts::makeHosts({remote.name}, remote.settings);
    remote.host = std::move(group.owned.front());
    return remote;
}

Result<QByteArray> runScript(Remote &remote, const slurm::RemoteScript &script, int timeoutMs)
{
    HostCommandOptions options;
    options.program = script.program;
    options.environment = remote.settings.environment;
    options.timeoutMs = timeoutMs > 0 ? timeoutMs : remote.settings.timeoutMs * 4;
    QEventLoop loop;
    AccelOutcome outcome;
    std::unique_ptr<HostCommand> command = remote.host->start(script.arguments, options);
    QObject::connect(command.get(), &HostCommand::done, &loop, [&outcome, &loop](const AccelOutcome &result) {
        outcome = result;
        loop.quit();
    });
    loop.exec();
    if (outcome.succeeded())
        return outcome.standardOutput;
    if (outcome.failedToStart || outcome.timedOut || outcome.cancelled || !outcome.reason.isEmpty())
        return makeError(outcome.timedOut ? ErrorCode::Timeout : ErrorCode::Failed, outcome.describe().toStdString(),
                         remote.name.toStdString());
    const slurm::ScriptFailure failure = slurm::scriptFailure(outcome.exitCode, outcome.standardError);
    if (!failure.missingTool.isEmpty())
        return makeError(ErrorCode::NotFound,
                         slurm::missingToolMessage(failure.missingTool, remote.name).toStdString());
    return makeError(
        ErrorCode::Failed,
        (outcome.describe() + (failure.message.isEmpty() ? QString() : ": " + failure.message)).toStdString(),
        remote.name.toStdString());
}

Result<slurm::QueueReport> queryQueue(Remote &remote, const QStringList &jobIds)
{
    auto output = runScript(remote, slurm::queueScript(jobIds));
    if (!output)
        return tl::unexpected(output.error());
    auto report = slurm::parseQueue(*output);
    if (!report)
        return tl::unexpected(Error{report.error().code, report.error().message, remote.name.toStdString()});
    return report;
}

Result<std::optional<slurm::SlurmJob>> queryJob(Remote &remote, const QString &jobId)
{
    auto report = queryQueue(remote, {jobId});
    if (!report)
        return tl::unexpected(report.error());
    for (const slurm::SlurmJob &job : report->jobs) {
        if (job.id == jobId)
            return std::optional<slurm::SlurmJob>(job);
    }
    return std::optional<slurm::SlurmJob>();
}

int reportError(const char *action, const Error &error)
{
    std::fprintf(stderr, "accel slurm %s: %s\n", action, error.toString().c_str());
    return error.code == ErrorCode::InvalidInput ? ExitBadInput : ExitFailure;
}

int parseOrExit(ArgParser &parser, int argc, char **argv, const char *action)
{
    if (parser.parse(argc, argv, 1))
        return -1;
    if (parser.helpRequested()) {
        std::fputs(parser.helpText().c_str(), stdout);
        return ExitOk;
    }
    std::fprintf(stderr, "accel slurm %s: %s\n", action, parser.error().c_str());
    return ExitBadInput;
}

} // namespace accel::cli::slurmcli
