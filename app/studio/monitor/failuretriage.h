// Failure triage for the Monitor: from a failed run's logs and its end reason, the first error
// line and the likely cause with its fix for the common signatures (busy port, rendezvous
// timeout, out of memory, missing Python module, a rank killed by a signal). Pure functions.
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
};

// `reason`: the run's end reason as the launcher records it ("rank 1 exit 1", "rank 0 signal 9
// (SIGKILL)"). Lines are in arrival order. Always returns a card; its errorLine is empty when no
// line looks like an error.
Triage triageFailure(const QList<TriageLogLine> &lines, const QString &reason);

} // namespace accel::app
