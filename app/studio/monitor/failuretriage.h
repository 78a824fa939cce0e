// Failure triage for the Monitor: from a failed run's logs and its end reason, the first error
// line and the likely cause with its fix for the common signatures (busy port, rendezvous
// timeout, out of memory, missing Python module, a rank killed by a signal). The rank that failed
// first (run.json's failed_rank) is read first: its error is the card's, and an error another rank
// printed afterwards (its collective lost that rank: "Connection closed by peer") is shown as a
// consequence. Pure functions.
#pragma once

#include <QList>
#include <QString>

#include <optional>

namespace accel::app {

struct TriageLogLine {
    int rank = -1; // -1: the supervisor's own lines
    QString text;
};

struct Triage {
    QString title;     // "Missing Python module 'foo'"
    QString errorLine; // the first error line, prefixed with its rank ("[rank 1] ...")
    QString cause;
    QString fix;
    int rank = -1;       // the rank whose line errorLine is (-1: the supervisor's, or none)
    QString consequence; // another rank's first error, after the failed rank's ("[rank 0] ..."); also in cause
};

// `reason`: the run's end reason as the launcher records it ("rank 1 exit 1", "rank 0 signal 9
// (SIGKILL)"). `failedRank`: run.json's failed_rank (-1: unknown; then the rank the reason names,
// if any). Lines are in arrival order. Always returns a card; its errorLine is empty when no line
// looks like an error. A Python exception line ("ValueError: ...") is preferred to other lines that
// name an error (the traceback's source lines).
Triage triageFailure(const QList<TriageLogLine> &lines, const QString &reason, int failedRank = -1);

} // namespace accel::app
