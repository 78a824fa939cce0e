// Launcher and monitor events of a run (events.jsonl: one JSON object per line, e.g.
// {"v":1,"time":1763771234.5,"event":"rank_exited","rank":1,"exit_code":0}), and log lines.
#pragma once

#include "core/rundir/runevents.h"

#include <QJsonObject>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>

namespace accel::monitor {

struct RunEvent {
    double time = 0;    // Unix seconds
    QString event;      // "started", "rank_exited", "hang_suspected", ...
    int rank = -1;      // -1 when the event is not about one rank
    QJsonObject fields; // the whole object, for details
    QString node;       // a multi-node run's: the node whose events.jsonl holds it ("node1"); else empty

    // The event's kind by the one table of core/rundir/runevents.h (Other for a name it lacks).
    rundir::EventKind kind() const { return rundir::eventKindFromString(event.toStdString()); }
};

// An event kind's name in events.jsonl.
inline QString eventName(rundir::EventKind kind)
{
    return QString::fromLatin1(rundir::toString(kind));
}

// Decodes one events.jsonl line; false for junk.
bool parseEventLine(const QByteArray &line, RunEvent &event);
// Encodes an event as one line in the format of core/rundir/runevents.h (with "v":1, the time,
// event and rank first), newline included.
QByteArray encodeEventLine(const RunEvent &event);
// Appends one event line to `eventsFile` (a run directory's events.jsonl) through the writer of
// core/rundir: a single write (O_APPEND), so lines written by the launcher and the monitor never
// interleave, and never through a symlink. Returns false when the file cannot be written.
bool appendEventLine(const QString &eventsFile, const RunEvent &event);

struct LogLines {
    QString source;    // e.g. "logs/rank0.log"
    int rank = -1;     // from rank<N>.log, -1 otherwise
    QStringList lines; // without newlines
};

// Rank from a file name like "rank12.jsonl" / "rank3.log"; -1 otherwise.
int rankFromFileName(const QString &fileName);

} // namespace accel::monitor

Q_DECLARE_METATYPE(accel::monitor::RunEvent)
Q_DECLARE_METATYPE(accel::monitor::LogLines)
