// The hang autopsy's report (docs/hang-autopsy.md): every rank's stack as py-spy
// (Python ranks) or accel-worker (native ranks, core/worker/stackdump.h) gave it, grouped by
// identical stacks and summarised as "ranks 0-2 in all_gather at train.py:88".
#pragma once

#include "core/common/result.h"

#include <QJsonObject>
#include <QList>
#include <QString>

namespace accel::cli {

// The accel stack --json document's name and version (stackReportJson writes them).
inline constexpr const char *StackSchema = "accel.stack";
inline constexpr int StackVersion = 1;

struct StackFrame {
    QString function;
    QString file;         // Python: the source file; native: from the object's line table, if any
    int line = 0;         // the line in `file`
    QString object;       // native: the library or program ("libtorch_cpu.so"); Python: empty
    QString offset;       // native: from the symbol (or the object when unnamed)
    QString path;         // native: the object as the process loaded it
    QString objectOffset; // native: the call's offset in the object (for addr2line)
};

struct RankStack {
    int rank = -1;
    qint64 pid = 0;
    QString kind;             // "python", "native" or "unknown"
    QString error;            // why there is no stack (empty when there is one)
    QString collective;       // the collective the rank waits in ("all_reduce"), empty when none
    qint64 sequence = 0;      // native ranks: that collective's number (collectiverecord.h)
    bool waiting = false;     // native ranks: the rank waits in it now
    QList<StackFrame> frames; // innermost first (main thread)
    // Native ranks of CUDA runs: NCCL's flight recorder as torch dumps it (entries with
    // profiling_name, collective_seq_id, state); empty elsewhere.
    QJsonObject ncclFlightRecorder;
};

// py-spy dump --json of one process: its main thread (the one whose id is the pid, else the
// first). Errors name what is missing.
Result<RankStack> parsePySpyDump(const QByteArray &json, qint64 pid);
// A native rank's accel.native-stack file.
Result<RankStack> parseNativeStack(const QByteArray &json);

// "all_reduce at train.py:91" (Python: the collective called from the innermost frame of the
// user's code; native: the collective and its number, then the innermost runtime frame), or the
// error.
QString stackSummary(const RankStack &stack);

struct StackGroup {
    QList<int> ranks;
    RankStack stack; // the first rank's (all ranks of a group have the same frames)
};
// Ranks with identical stacks together (same kind, collective and frames; native sequence numbers
// must match too), ordered by their lowest rank.
QList<StackGroup> groupStacks(const QList<RankStack> &stacks);
// "0-2, 5" / "rank 3" phrasing helpers: "ranks 0-2, 5" or "rank 3".
QString rankList(const QList<int> &ranks);

// The report as printed: one line per group, then each group's frames.
QString stackReportText(const QList<StackGroup> &groups, const QString &runId, const QString &reason);
// The accel.stack document (schema, version, run, reason, time, groups with ranks, summary,
// frames; ranks with each rank's pid, kind and error).
QJsonObject stackReportJson(const QList<StackGroup> &groups, const QList<RankStack> &stacks, const QString &runId,
                            const QString &reason);

} // namespace accel::cli
