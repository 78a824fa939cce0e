// SLURM over SSH, the parts that need no connection: the POSIX shell scripts `accel slurm` runs on
// a login node (submit a batch script with sbatch, read the queue with squeue and sacct, cancel
// with scancel) and the parsers of what they print. squeue and sacct are always asked for
// explicit fields (--format, sacct --parsable2) split by a separator that no field contains;
// nothing is read by column position. A SLURM tool missing on the host is reported by name.
#pragma once

#include "core/common/result.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace accel::launcher::slurm {

// One job as squeue or sacct reports it.
struct SlurmJob {
    QString id; // "123" (an array task: "123_4")
    QString name;
    QString state;   // PENDING, RUNNING, COMPLETED, CANCELLED, FAILED, TIMEOUT, ... (sacct's "by UID" dropped)
    QString elapsed; // as reported: "1:02", "00:01:02", "1-02:03:04"
    qint64 elapsedSeconds = -1; // -1 when the text is not a duration
    int nodes = 0;
    QString reason;   // why it waits ("Resources", "Priority"), "None" when it does not
    QString nodeList; // where it runs or ran
    QString workDir;  // the job's working directory
    QString partition;
    QString source; // "squeue" or "sacct"
};

// What the queue script found.
struct QueueReport {
    QList<SlurmJob> jobs; // squeue's jobs first, then sacct's that squeue no longer holds
    // Where ended jobs came from: "accounting" (sacct: slurmdbd), "completion" (sacct --completion:
    // the controller's job completion log, when accounting storage is disabled), "unavailable"
    // (sacct failed, accountingMessage says why) or "missing" (no sacct on the host).
    QString accounting;
    QString accountingMessage;
};

// What a script reports when it cannot do its work.
struct ScriptFailure {
    QString missingTool; // "sbatch", "squeue", "scancel" ... when the host lacks it
    QString message;     // the tool's own error lines otherwise
};

// A job id as scancel and squeue take it: digits, optionally "_<task>" of an array.
bool isJobId(const QString &text);
// "[D-]H:MM:SS", "MM:SS" or "M:SS" -> seconds; -1 otherwise ("INVALID", "UNLIMITED", "").
qint64 durationSeconds(const QString &text);
// The error that names a job id that is not one (exit code 2).
Error badJobId(const QString &text);

// The programs each script runs on the host: `sh -c SCRIPT accel-slurm ARGUMENTS...`.
struct RemoteScript {
    QString program = QStringLiteral("sh");
    QStringList arguments;
};

// Writes `scriptText` to DIRECTORY/FILENAME on the host (the folder is made; a relative one is
// under the login directory), then runs `sbatch --parsable SBATCH_ARGUMENTS... FILENAME` there,
// so the job's working directory is that folder.
RemoteScript submitScript(const QString &directory, const QString &fileName, const QByteArray &scriptText,
                          const QStringList &sbatchArguments);
struct Submission {
    QString jobId;
    QString cluster;   // from "id;cluster" (federations), else empty
    QString directory; // absolute folder holding the script (the job's working directory)
};
Result<Submission> parseSubmit(const QByteArray &standardOutput);

// squeue (every state the controller still holds) and sacct, for `jobIds` only when not empty,
// else for the user's own jobs (squeue --me; sacct's default window).
RemoteScript queueScript(const QStringList &jobIds = {});
Result<QueueReport> parseQueue(const QByteArray &standardOutput);

// scancel JOBID.
RemoteScript cancelScript(const QString &jobId);

// Whether each of `paths` is a file on the host: prints "yes" or "no", one line per path.
RemoteScript filesExistScript(const QStringList &paths);
// The answer of filesExistScript: one flag per path (empty when the output has another length).
QList<bool> parseFilesExist(const QByteArray &standardOutput, qsizetype paths);

// A script's failure (exit 3 + "accel-slurm: missing TOOL" on stderr, or the tool's own error).
ScriptFailure scriptFailure(int exitCode, const QByteArray &standardError);
// What to do about a SLURM tool missing on `host`.
QString missingToolMessage(const QString &tool, const QString &host);

// Where the run directory of a job submitted from an Accel Studio batch script is: the script
// exports ACCEL_RUN_DIR, by default accel-run-<job id> in the job's working directory (node N of
// a multi-node job: its node<N> folder in there; `accel tail` follows that folder as one run).
QString defaultRunDirectory(const QString &workDir, const QString &jobId);
// The manifests a job's run writes: RUN/run.json, or RUN/node<K>/run.json for each of `nodes` > 1.
QStringList runManifests(const QString &runDirectory, int nodes);

// States after which a job does not run again.
bool isFinalState(const QString &state);

} // namespace accel::launcher::slurm
