#include "launcher/slurm.h"

#include <QRegularExpression>

#include <optional>

namespace accel::launcher::slurm {

namespace {

// Between two fields of a squeue or sacct row: the ASCII unit separator, which no job name, path
// or state holds (Accel Studio's batch scripts refuse control characters in their header fields).
const QString kSeparator = QStringLiteral("\x1f");

// The same fields, in the same order, from both tools.
QString squeueFormat()
{
    return QStringList{QStringLiteral("%i"), QStringLiteral("%j"), QStringLiteral("%T"),
                       QStringLiteral("%M"), QStringLiteral("%D"), QStringLiteral("%r"),
                       QStringLiteral("%Z"), QStringLiteral("%P"), QStringLiteral("%N")}
        .join(kSeparator);
}
const QString kSacctFields = QStringLiteral("JobID,JobName,State,Elapsed,NNodes,Reason,WorkDir,Partition,NodeList");
constexpr int kFieldCount = 9;

// Each script checks its tool first: exit 3 and "accel-slurm: missing TOOL" on stderr.
QString requireTool(const char *tool)
{
    return QStringLiteral("command -v %1 >/dev/null 2>&1 || { echo 'accel-slurm: missing %1' >&2; exit 3; }\n")
        .arg(QLatin1String(tool));
}

RemoteScript script(const QString &body, const QStringList &arguments)
{
    RemoteScript remote;
    remote.arguments = QStringList{QStringLiteral("-c"), body, QStringLiteral("accel-slurm")} + arguments;
    return remote;
}

std::optional<SlurmJob> parseRow(const QString &line, const QString &source)
{
    const QStringList f = line.split(kSeparator);
    if (f.size() != kFieldCount)
        return std::nullopt;
    SlurmJob job;
    job.id = f[0].trimmed();
    if (job.id.isEmpty() || job.id.contains(QLatin1Char('.'))) // sacct's job steps: 12.batch, 12.0
        return std::nullopt;
    job.name = f[1];
    job.state = f[2].trimmed().section(QLatin1Char(' '), 0, 0); // sacct: "CANCELLED by 0"
    job.elapsed = f[3].trimmed();
    job.elapsedSeconds = durationSeconds(job.elapsed);
    job.nodes = f[4].trimmed().toInt();
    job.reason = f[5].trimmed();
    job.workDir = f[6];
    job.partition = f[7].trimmed();
    job.nodeList = f[8].trimmed();
    job.source = source;
    return job;
}

} // namespace

bool isJobId(const QString &text)
{
    static const QRegularExpression pattern(QStringLiteral("^[0-9]{1,18}(_[0-9]{1,9})?$"));
    return pattern.match(text).hasMatch();
}

Error badJobId(const QString &text)
{
    return Error{ErrorCode::InvalidInput,
                 "expected a SLURM job id (a number such as 1234, or 1234_5 for an array task), got '" +
                     text.toStdString() + "'",
                 "JOBID"};
}

qint64 durationSeconds(const QString &text)
{
    static const QRegularExpression pattern(QStringLiteral("^(?:(\\d+)-)?(?:(\\d+):)?(\\d+):(\\d{2})(?:\\.\\d+)?$"));
    const auto match = pattern.match(text.trimmed());
    if (!match.hasMatch())
        return -1;
    const qint64 days = match.captured(1).toLongLong();
    const qint64 hours = match.captured(2).toLongLong();
    const qint64 minutes = match.captured(3).toLongLong();
    const qint64 seconds = match.captured(4).toLongLong();
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds;
}

RemoteScript submitScript(const QString &directory, const QString &fileName, const QByteArray &scriptText,
                          const QStringList &sbatchArguments)
{
    const QString body =
        requireTool("sbatch") + QStringLiteral("mkdir -p -- \"$1\" && cd -- \"$1\" || exit 1\n"
                                               "[ ! -e \"$2\" ] || { echo \"accel-slurm: $PWD/$2 exists already\" >&2; "
                                               "exit 1; }\n"
                                               "printf '%s' \"$3\" > \"$2\" || exit 1\n"
                                               "file=$2\n"
                                               "shift 3\n"
                                               "id=$(sbatch --parsable \"$@\" \"$file\") || exit 1\n"
                                               "printf '@job %s\\n@dir %s\\n' \"$id\" \"$PWD\"\n");
    QString folder = directory;
    if (folder.startsWith(QLatin1String("~/"))) // the login directory is where the script starts
        folder = folder.mid(2);
    return script(
        body, QStringList{folder.isEmpty() ? QStringLiteral(".") : folder, fileName, QString::fromUtf8(scriptText)} +
                  sbatchArguments);
}

Result<Submission> parseSubmit(const QByteArray &standardOutput)
{
    Submission submission;
    for (const QString &line : QString::fromUtf8(standardOutput).split(QLatin1Char('\n'))) {
        if (line.startsWith(QLatin1String("@job ")))
            submission.jobId = line.mid(5).trimmed();
        else if (line.startsWith(QLatin1String("@dir ")))
            submission.directory = line.mid(5);
    }
    if (const int semicolon = submission.jobId.indexOf(QLatin1Char(';')); semicolon >= 0) {
        submission.cluster = submission.jobId.mid(semicolon + 1);
        submission.jobId = submission.jobId.left(semicolon);
    }
    if (!isJobId(submission.jobId) || submission.directory.isEmpty())
        return makeError(ErrorCode::Failed,
                         "sbatch --parsable printed no job id: '" +
                             QString::fromUtf8(standardOutput).trimmed().left(300).toStdString() + "'",
                         "sbatch");
    return submission;
}

RemoteScript queueScript(const QStringList &jobIds)
{
    const QString body =
        requireTool("squeue") +
        QStringLiteral(
            "sep=$1 jobs=$2\n"
            "echo @squeue\n"
            "if [ -n \"$jobs\" ]; then squeue --noheader --states=all --jobs=\"$jobs\" --format=\"$3\" 2>&1\n"
            "else squeue --noheader --states=all --user=\"$(id -un)\" --format=\"$3\" 2>&1; fi\n"
            "echo \"@status $?\"\n"
            "command -v sacct >/dev/null 2>&1 || { echo '@accounting missing 0'; exit 0; }\n"
            "acct() { if [ -n \"$jobs\" ]; then sacct \"$@\" --jobs=\"$jobs\"; else sacct \"$@\"; fi; }\n"
            "source=accounting\n"
            "out=$(acct --noheader --parsable2 --delimiter=\"$sep\" --allocations --format=\"$4\" 2>&1)\n"
            "status=$?\n"
            "case $out in *'accounting storage is disabled'*)\n"
            "  source=completion\n"
            "  out=$(acct --completion --noheader --parsable2 --delimiter=\"$sep\" --format=\"$4\" 2>&1)\n"
            "  status=$? ;;\n"
            "esac\n"
            "echo \"@accounting $source $status\"\n"
            "[ -z \"$out\" ] || printf '%s\\n' \"$out\"\n");
    return script(body, {kSeparator, jobIds.join(QLatin1Char(',')), squeueFormat(), kSacctFields});
}

Result<QueueReport> parseQueue(const QByteArray &standardOutput)
{
    QueueReport report;
    enum class Section { None, Squeue, Accounting } section = Section::None;
    QStringList squeueMessages;
    QStringList accountingMessages;
    QList<SlurmJob> accounted;
    bool sawSqueue = false;
    int accountingStatus = 0;
    for (const QString &line : QString::fromUtf8(standardOutput).split(QLatin1Char('\n'))) {
        if (line == QLatin1String("@squeue")) {
            section = Section::Squeue;
            sawSqueue = true;
            continue;
        }
        if (line.startsWith(QLatin1String("@status ")) && section == Section::Squeue) {
            // With --jobs, an id the controller no longer holds makes squeue fail; sacct may know it.
            const int status = line.mid(8).toInt();
            const bool unknownJob = squeueMessages.join(QLatin1Char(' ')).contains(QLatin1String("Invalid job id"));
            if (status != 0 && !unknownJob)
                return makeError(ErrorCode::Failed,
                                 "squeue failed: " + squeueMessages.join(QLatin1Char(' ')).toStdString(), "squeue");
            section = Section::None;
            continue;
        }
        if (line.startsWith(QLatin1String("@accounting "))) {
            const QStringList words = line.split(QLatin1Char(' '));
            report.accounting = words.value(1);
            accountingStatus = words.value(2).toInt();
            section = Section::Accounting;
            continue;
        }
        if (line.isEmpty())
            continue;
        if (section == Section::Squeue) {
            if (auto job = parseRow(line, QStringLiteral("squeue")))
                report.jobs << *job;
            else if (!line.contains(kSeparator))
                squeueMessages << line.trimmed();
        } else if (section == Section::Accounting) {
            if (auto job = parseRow(line, QStringLiteral("sacct")))
                accounted << *job;
            else if (!line.contains(kSeparator))
                accountingMessages << line.trimmed();
        }
    }
    if (!sawSqueue)
        return makeError(ErrorCode::Failed, "the queue script printed no squeue section", "squeue");
    if (report.accounting == QLatin1String("missing")) {
        report.accountingMessage = QStringLiteral("sacct is not installed on the host: ended jobs are shown only "
                                                  "while the controller still holds them (MinJobAge)");
    } else if (accountingStatus != 0) {
        report.accounting = QStringLiteral("unavailable");
        report.accountingMessage = QStringLiteral("sacct failed: ") + accountingMessages.join(QLatin1Char(' '));
        accounted.clear();
    } else if (report.accounting == QLatin1String("completion")) {
        report.accountingMessage = QStringLiteral("accounting storage is disabled; ended jobs come from the job "
                                                  "completion log (sacct --completion)");
    }
    for (const SlurmJob &job : accounted) {
        bool known = false;
        for (const SlurmJob &live : report.jobs)
            known = known || live.id == job.id;
        if (!known)
            report.jobs << job;
    }
    return report;
}

RemoteScript cancelScript(const QString &jobId)
{
    return script(requireTool("scancel") + QStringLiteral("scancel \"$1\"\n"), {jobId});
}

RemoteScript filesExistScript(const QStringList &paths)
{
    return script(QStringLiteral("for f in \"$@\"; do if [ -f \"$f\" ]; then echo yes; else echo no; fi; done\n"),
                  paths);
}

QList<bool> parseFilesExist(const QByteArray &standardOutput, qsizetype paths)
{
    QList<bool> flags;
    for (const QByteArray &line : standardOutput.split('\n')) {
        const QByteArray word = line.trimmed();
        if (word == "yes" || word == "no")
            flags << (word == "yes");
        else if (!word.isEmpty())
            return {};
    }
    return flags.size() == paths ? flags : QList<bool>();
}

ScriptFailure scriptFailure(int exitCode, const QByteArray &standardError)
{
    ScriptFailure failure;
    const QString text = QString::fromUtf8(standardError);
    static const QRegularExpression missing(QStringLiteral("accel-slurm: missing ([a-z]+)"));
    if (const auto match = missing.match(text); exitCode == 3 && match.hasMatch()) {
        failure.missingTool = match.captured(1);
        return failure;
    }
    QStringList lines = text.trimmed().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    while (lines.size() > 4)
        lines.removeFirst();
    failure.message = lines.join(QLatin1String("; "));
    return failure;
}

QString missingToolMessage(const QString &tool, const QString &host)
{
    return QStringLiteral("%1 is not found on %2 (on the PATH of non-interactive SSH sessions): install SLURM's "
                          "client commands there (Debian: slurm-client), or put their folder on that PATH "
                          "(--remote_env PATH=...)")
        .arg(tool, host);
}

QString defaultRunDirectory(const QString &workDir, const QString &jobId)
{
    QString folder = workDir;
    while (folder.size() > 1 && folder.endsWith(QLatin1Char('/')))
        folder.chop(1);
    return folder + QStringLiteral("/accel-run-") + jobId;
}

QStringList runManifests(const QString &runDirectory, int nodes)
{
    if (nodes <= 1)
        return {runDirectory + QStringLiteral("/run.json")};
    QStringList paths;
    for (int node = 0; node < nodes; ++node)
        paths << QStringLiteral("%1/node%2/run.json").arg(runDirectory).arg(node);
    return paths;
}

bool isFinalState(const QString &state)
{
    static const QStringList live = {
        QStringLiteral("PENDING"),      QStringLiteral("RUNNING"),      QStringLiteral("CONFIGURING"),
        QStringLiteral("COMPLETING"),   QStringLiteral("SUSPENDED"),    QStringLiteral("REQUEUED"),
        QStringLiteral("RESIZING"),     QStringLiteral("SIGNALING"),    QStringLiteral("STAGE_OUT"),
        QStringLiteral("STOPPED"),      QStringLiteral("REQUEUE_HOLD"), QStringLiteral("REQUEUE_FED"),
        QStringLiteral("RESV_DEL_HOLD")};
    return !state.isEmpty() && !live.contains(state);
}

} // namespace accel::launcher::slurm
