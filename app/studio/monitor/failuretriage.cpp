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

QString withRank(const TriageLogLine &line)
{
    const QString text = line.text.trimmed();
    return line.rank >= 0 ? QStringLiteral("[rank %1] %2").arg(line.rank).arg(text) : text;
}

Triage describe(Signature signature, const QRegularExpressionMatch &match)
{
    switch (signature) {
    case Signature::MissingModule: {
        const QString module = match.captured(1);
        const QString package = module.section(QLatin1Char('.'), 0, 0);
        return {tr("Missing Python module '%1'").arg(module),
                {},
                tr("The Python interpreter that ran the script cannot import %1.").arg(module),
                tr("Install it into that interpreter (python -m pip install %1; the package name may differ), or "
                   "launch with the Python environment that has it.")
                    .arg(package)};
    }
    case Signature::BusyPort:
        return {tr("Port already in use"),
                {},
                tr("Another process, often an earlier run that is still alive, holds the rendezvous port."),
                tr("Stop the other run (Runs → Stop) or choose another main_process_port in the config.")};
    case Signature::RendezvousTimeout:
        return {tr("Rendezvous timed out"),
                {},
                tr("Not every rank reached the rendezvous in time: a rank failed to start, a machine cannot reach "
                   "main_process_ip:main_process_port, or num_machines / machine_rank disagree."),
                tr("Look for the first error on the other ranks, check that every machine reaches the main "
                   "process's address and port (firewall), and that each node has its own machine_rank.")};
    case Signature::OutOfMemory:
        return {tr("Out of memory"),
                {},
                tr("A rank asked for more memory than the device or host had free."),
                tr("Lower the batch size (with gradient accumulation to keep the effective batch), use bf16, or "
                   "shard the model (FSDP or DeepSpeed ZeRO).")};
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

} // namespace

Triage triageFailure(const QList<TriageLogLine> &lines, const QString &reason)
{
    // The ranks' own lines first: the supervisor's summary lines repeat what the ranks said.
    for (const bool ranksOnly : {true, false}) {
        for (const auto &line : lines) {
            if (ranksOnly != (line.rank >= 0))
                continue;
            for (const auto &pattern : patterns()) {
                const auto match = pattern.expression.match(line.text);
                if (match.hasMatch()) {
                    Triage triage = describe(pattern.signature, match);
                    triage.errorLine = withRank(line);
                    return triage;
                }
            }
        }
    }
    Triage triage;
    for (const bool ranksOnly : {true, false}) {
        for (const auto &line : lines) {
            if (ranksOnly == (line.rank >= 0) && !line.text.startsWith(QLatin1String("Traceback")) &&
                genericError().match(line.text).hasMatch()) {
                triage.errorLine = withRank(line);
                break;
            }
        }
        if (!triage.errorLine.isEmpty())
            break;
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
    } else {
        triage.title = tr("The run failed: %1").arg(reason.isEmpty() ? tr("a rank exited with an error") : reason);
        triage.cause = triage.errorLine.isEmpty() ? tr("The rank's log has no error line.")
                                                  : tr("The first error the ranks printed is shown above.");
        triage.fix = tr("Read the Logs tab around that line (filter by the rank).");
    }
    return triage;
}

} // namespace accel::app
