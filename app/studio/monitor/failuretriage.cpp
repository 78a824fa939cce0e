#include "app/studio/monitor/failuretriage.h"

#include <QCoreApplication>
#include <QRegularExpression>

namespace accel::app {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("accel::app::FailureTriage", text);
}

enum class Signature { MissingModule, BusyPort, RendezvousTimeout, OutOfMemory, Generic };

struct Pattern {
    Signature signature;
    QRegularExpression expression;
};

const QList<Pattern> &patterns()
{
    static const QList<Pattern> list = {
        {Signature::MissingModule,
         QRegularExpression(QStringLiteral("ModuleNotFoundError: No module named '([^']+)'"))},
        {Signature::BusyPort, QRegularExpression(QStringLiteral("address already in use|EADDRINUSE|errno:? 98\\b"),
                                                 QRegularExpression::CaseInsensitiveOption)},
        {Signature::RendezvousTimeout,
         QRegularExpression(QStringLiteral("DistStoreError|(rendezvous|TCPStore|store|init_process_group|barrier|"
                                           "connect)[^\\n]*(timed out|timeout)|(timed out|timeout)[^\\n]*"
                                           "(rendezvous|TCPStore|store|init_process_group|barrier|connect)"),
                            QRegularExpression::CaseInsensitiveOption)},
        {Signature::OutOfMemory,
         QRegularExpression(QStringLiteral("out of memory|OutOfMemoryError|\\bMemoryError\\b|std::bad_alloc|"
                                           "Cannot allocate memory"),
                            QRegularExpression::CaseInsensitiveOption)},
    };
    return list;
}

const QRegularExpression &genericError()
{
    static const QRegularExpression expression(
        QStringLiteral("\\b\\w*(Error|Exception)\\b|\\berror:|\\bfatal\\b|terminate called|Segmentation fault"),
        QRegularExpression::CaseInsensitiveOption);
    return expression;
}

// A rank's line without the "[rank2]: " prefix torch's distributed logging puts before it.
QString withoutRankPrefix(const QString &text)
{
    static const QRegularExpression prefix(QStringLiteral("^\\[(rank|default)\\d+\\]:\\s?"));
    return QString(text).remove(prefix);
}

// "[rank 2] ValueError: ..." (the rank said once).
QString withRank(const TriageLogLine &line)
{
    const QString text = withoutRankPrefix(line.text.trimmed()).trimmed();
    return line.rank >= 0 ? QStringLiteral("[rank %1] %2").arg(line.rank).arg(text) : text;
}

Triage card(const QString &title, const QString &cause, const QString &fix)
{
    Triage triage;
    triage.title = title;
    triage.cause = cause;
    triage.fix = fix;
    return triage;
}

Triage describe(Signature signature, const QRegularExpressionMatch &match)
{
    switch (signature) {
    case Signature::MissingModule: {
        const QString module = match.captured(1);
        const QString package = module.section(QLatin1Char('.'), 0, 0);
        return card(tr("Missing Python module '%1'").arg(module),
                    tr("The Python interpreter that ran the script cannot import %1.").arg(module),
                    tr("Install it into that interpreter (python -m pip install %1; the package name may differ), or "
                       "launch with the Python environment that has it.")
                        .arg(package));
    }
    case Signature::BusyPort:
        return card(tr("Port already in use"),
                    tr("Another process, often an earlier run that is still alive, holds the rendezvous port."),
                    tr("Stop the other run (Runs → Stop) or choose another main_process_port in the config."));
    case Signature::RendezvousTimeout:
        return card(tr("Rendezvous timed out"),
                    tr("Not every rank reached the rendezvous in time: a rank failed to start, a machine cannot reach "
                       "main_process_ip:main_process_port, or num_machines / machine_rank disagree."),
                    tr("Look for the first error on the other ranks, check that every machine reaches the main "
                       "process's address and port (firewall), and that each node has its own machine_rank."));
    case Signature::OutOfMemory:
        return card(tr("Out of memory"), tr("A rank asked for more memory than the device or host had free."),
                    tr("Lower the batch size (with gradient accumulation to keep the effective batch), use bf16, or "
                       "shard the model (FSDP or DeepSpeed ZeRO)."));
    case Signature::Generic:
        break;
    }
    return {};
}

// "rank 0 signal 9 (SIGKILL)" -> 9 and "SIGKILL"; 0 when the reason names no signal.
int signalIn(const QString &reason, QString &name)
{
    static const QRegularExpression expression(QStringLiteral("signal (\\d+) \\((SIG\\w+)\\)"));
    const auto match = expression.match(reason);
    if (!match.hasMatch())
        return 0;
    name = match.captured(2);
    return match.captured(1).toInt();
}

// The line Python prints last in a traceback: "ValueError: ...", "torch.OutOfMemoryError: ...".
bool isPythonExceptionLine(const QString &text)
{
    static const QRegularExpression exception(
        QStringLiteral("^[A-Za-z_][\\w.]*(Error|Exception|Interrupt|Exit|Warning)(:|$)"));
    return exception.match(withoutRankPrefix(text)).hasMatch();
}

bool isErrorLine(const QString &text)
{
    const QString line = withoutRankPrefix(text);
    return !line.startsWith(QLatin1String("Traceback")) && genericError().match(line).hasMatch();
}

// The first line of `lines` that says an error: a Python exception line first, else any line
// that names one.
const TriageLogLine *firstErrorLine(const QList<const TriageLogLine *> &lines)
{
    for (const TriageLogLine *line : lines)
        if (isPythonExceptionLine(line->text))
            return line;
    for (const TriageLogLine *line : lines)
        if (isErrorLine(line->text))
            return line;
    return nullptr;
}

// "rank 2 exit 1" -> 2; -1 when the reason names no rank.
int rankIn(const QString &reason)
{
    static const QRegularExpression expression(QStringLiteral("^rank (\\d+) "));
    const auto match = expression.match(reason);
    return match.hasMatch() ? match.captured(1).toInt() : -1;
}

} // namespace

Triage triageFailure(const QList<TriageLogLine> &lines, const QString &reason, int failedRank)
{
    if (failedRank < 0)
        failedRank = rankIn(reason);
    // The failed rank's lines first (when it is known), then the other ranks', then the
    // supervisor's summary lines, which repeat what the ranks said.
    QList<QList<const TriageLogLine *>> groups(3);
    for (const auto &line : lines) {
        const int group = line.rank < 0 ? 2 : (failedRank >= 0 && line.rank != failedRank ? 1 : 0);
        groups[group].append(&line);
    }
    Triage triage;
    for (const auto &group : std::as_const(groups)) {
        bool found = false;
        for (const TriageLogLine *line : group) {
            for (const auto &pattern : patterns()) {
                const auto match = pattern.expression.match(line->text);
                if (match.hasMatch()) {
                    triage = describe(pattern.signature, match);
                    triage.errorLine = withRank(*line);
                    triage.rank = line->rank;
                    found = true;
                    break;
                }
            }
            if (found)
                break;
        }
        if (!found) {
            if (const TriageLogLine *line = firstErrorLine(group)) {
                triage.errorLine = withRank(*line);
                triage.rank = line->rank;
                found = true;
            }
        }
        if (found)
            break;
    }
    // What the others printed after the failed rank went: a consequence, not the cause.
    if (failedRank >= 0 && triage.rank == failedRank) {
        if (const TriageLogLine *line = firstErrorLine(groups[1]))
            triage.consequence = withRank(*line);
    }
    const QString followOn = triage.consequence.isEmpty()
                                 ? QString()
                                 : tr(" The other ranks failed because rank %1 did (a consequence, not the cause): %2")
                                       .arg(failedRank)
                                       .arg(triage.consequence);
    if (!triage.title.isEmpty()) { // a known signature
        triage.cause += followOn;
        return triage;
    }
    QString signalName;
    const int signal = signalIn(reason, signalName);
    if (signal == 9) {
        triage.title = tr("A rank was killed (%1)").arg(signalName);
        triage.cause = tr("Something sent SIGKILL to the rank; with no error in its log this is usually the "
                          "kernel's out-of-memory killer.");
        triage.fix = tr("Check the kernel log (journalctl -k or dmesg: \"Out of memory: Killed process\") and lower "
                        "host memory use: smaller batches, fewer data loader workers, fewer ranks per machine.");
    } else if (signal != 0) {
        triage.title = tr("A rank was killed by %1").arg(signalName);
        triage.cause =
            signal == 11 || signal == 6 || signal == 7
                ? tr("The rank crashed in native code (%1): a bug or an incompatible library build.").arg(signalName)
                : tr("The rank received %1 from outside the run.").arg(signalName);
        triage.fix = tr("Read the rank's last log lines; for a crash, run that rank alone with the same settings "
                        "to reproduce it.");
    } else if (failedRank >= 0) {
        // "rank 2 exit 1" -> "exit 1": the title names the rank already.
        const QString how = QString(reason).remove(QRegularExpression(QStringLiteral("^rank \\d+ ")));
        triage.title =
            tr("Rank %1 failed first (%2)").arg(failedRank).arg(how.isEmpty() ? tr("it exited with an error") : how);
        triage.cause = triage.rank == failedRank ? tr("Rank %1 raised the error shown above.").arg(failedRank)
                       : triage.errorLine.isEmpty()
                           ? tr("Rank %1's log has no error line.").arg(failedRank)
                           : tr("Rank %1's log has no error line; the first error of the other ranks is shown above.")
                                 .arg(failedRank);
        triage.fix = tr("Read the Logs tab around that line (filter by rank %1).").arg(failedRank);
    } else {
        triage.title = tr("The run failed: %1").arg(reason.isEmpty() ? tr("a rank exited with an error") : reason);
        triage.cause = triage.errorLine.isEmpty() ? tr("The rank's log has no error line.")
                                                  : tr("The first error the ranks printed is shown above.");
        triage.fix = tr("Read the Logs tab around that line (filter by the rank).");
    }
    triage.cause += followOn;
    return triage;
}

} // namespace accel::app
