#include "launcher/sshhost.h"

#include "launcher/sshworker.h"

#include <QAbstractEventDispatcher>
#include <QSocketNotifier>

#include <sys/eventfd.h>
#include <unistd.h>

namespace accel::launcher {

// One command on an SshHost: keeps its output for the outcome and forwards the batches.
class SshCommand : public HostCommand {
public:
    SshCommand(SshHost *host, quint64 id, QString program, bool keepOutput)
        : m_host(host), m_id(id), m_program(std::move(program)), m_keepOutput(keepOutput)
    {}
    ~SshCommand() override
    {
        if (m_host) {
            if (m_running)
                m_host->cancelCommand(m_id);
            m_host->forget(m_id);
        }
    }
    bool isRunning() const override { return m_running; }
    void cancel() override
    {
        if (m_running && m_host)
            m_host->cancelCommand(m_id);
    }

    void receive(const QByteArray &out, const QByteArray &err)
    {
        if (m_keepOutput) {
            m_outcome.standardOutput += out;
            m_outcome.standardError += err;
        }
        m_errorTail = (m_errorTail + err).right(4096);
        Q_EMIT outputReceived(out, err);
    }

    void end(AccelOutcome outcome, const QString &hostName)
    {
        if (!m_running)
            return;
        m_running = false;
        outcome.standardOutput = std::move(m_outcome.standardOutput);
        outcome.standardError = std::move(m_outcome.standardError);
        // The remote shell's "command not found": say what to do about it.
        if (outcome.exitCode == 127 && outcome.signal == 0 &&
            (m_errorTail.contains("not found") || m_errorTail.contains("No such file")))
            outcome.error = QStringLiteral("%1 not found on %2: install accel there and put it on the PATH of "
                                           "non-interactive SSH sessions, or give its path (ACCEL_REMOTE_BIN or "
                                           "--remote-accel)")
                                .arg(m_program, hostName);
        if (!outcome.error.isEmpty() && outcome.exitCode == 127)
            outcome.reason = QStringLiteral("accel_not_found");
        Q_EMIT done(outcome);
    }

private:
    QPointer<SshHost> m_host;
    quint64 m_id;
    QString m_program;
    bool m_keepOutput;
    bool m_running = true;
    AccelOutcome m_outcome;
    QByteArray m_errorTail;
};

SshHost::SshHost(SshHostOptions options, QObject *parent) : QObject(parent), m_options(std::move(options))
{
    qRegisterMetaType<AccelOutcome>();
    m_accelProgram = m_options.accelProgram;
    if (m_accelProgram.isEmpty())
        m_accelProgram = qEnvironmentVariable("ACCEL_REMOTE_BIN", QStringLiteral("accel"));

    ssh::SessionSettings settings;
    settings.destination = m_options.destination.toStdString();
    settings.sshDirectory = m_options.sshDirectory.toStdString();
    settings.timeoutMs = m_options.timeoutMs;
    settings.acceptNewHostKey = m_options.acceptNewHostKey;
    ssh::SshWorker::Timing timing;
    timing.keepaliveMs = m_options.keepaliveMs;
    timing.stopGraceMs = m_options.stopGraceMs;
    // The worker's callbacks run on its thread: hand everything over to this object's thread.
    // This object outlives the worker (the destructor joins it), so the pointer stays valid.
    ssh::SshWorker::Callbacks callbacks;
    callbacks.output = [this](quint64 id, const QByteArray &out, const QByteArray &err) {
        post([this, id, out, err] { deliverOutput(id, out, err); });
    };
    callbacks.done = [this](quint64 id, const AccelOutcome &outcome) {
        post([this, id, outcome] { deliverDone(id, outcome); });
    };
    m_inboxWake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    m_worker = std::make_unique<ssh::SshWorker>(settings, timing, std::move(callbacks));
    m_worker->start();
}

// The calls cross threads through a mutex of ours, and the wake-up through an eventfd this
// object's thread watches, rather than through Qt's event queue: the order is the same (one queue,
// drained in order), and a ThreadSanitizer build sees the whole hand-off (a queued call's slot
// object is allocated on one thread and freed on the other under Qt's own locks, which are in the
// uninstrumented Qt library, so every hand-off was reported as a race).
void SshHost::post(std::function<void()> call)
{
    bool scheduled = false, watched = false;
    {
        std::lock_guard<std::mutex> lock(m_inboxMutex);
        scheduled = !m_inbox.empty(); // a wake-up is on its way already and the drain takes this too
        watched = m_inboxWatched;
        m_inbox.push_back(std::move(call));
    }
    if (scheduled)
        return;
    if (watched)
        (void)!::eventfd_write(m_inboxWake, 1);
    else // see watchInbox: Qt's queue still delivers, unseen by the sanitizer
        QMetaObject::invokeMethod(this, &SshHost::drainInbox, Qt::QueuedConnection);
}

// The notifier needs this thread's event dispatcher, which exists once the application object
// does; a host may be made before it (accel slurm connects, then starts its QCoreApplication), so
// the notifier is made when the first command starts. Without a dispatcher or an eventfd (descriptors
// exhausted) the wake-up goes through Qt's queue, as before.
void SshHost::watchInbox()
{
    if (m_inboxNotifier || m_inboxWake < 0 || !QAbstractEventDispatcher::instance())
        return;
    m_inboxNotifier = std::make_unique<QSocketNotifier>(m_inboxWake, QSocketNotifier::Read);
    connect(m_inboxNotifier.get(), &QSocketNotifier::activated, this, &SshHost::drainInbox);
    std::lock_guard<std::mutex> lock(m_inboxMutex);
    m_inboxWatched = true;
}

void SshHost::drainInbox()
{
    if (m_inboxWake >= 0) { // cleared before the swap: a post after the swap writes again
        eventfd_t count = 0;
        (void)!::eventfd_read(m_inboxWake, &count);
    }
    std::deque<std::function<void()>> calls;
    {
        std::lock_guard<std::mutex> lock(m_inboxMutex);
        calls.swap(m_inbox);
    }
    const QPointer<SshHost> self(this); // a call may end in this host's deletion: the rest are dropped
    for (auto &call : calls) {
        if (!self)
            return;
        call();
    }
}

SshHost::~SshHost()
{
    m_worker.reset(); // stops and joins the thread: no callback runs after this
    m_inboxNotifier.reset();
    if (m_inboxWake >= 0)
        ::close(m_inboxWake);
    const auto commands = m_commands;
    m_commands.clear();
    for (const QPointer<SshCommand> &command : commands) {
        if (command) {
            AccelOutcome outcome;
            outcome.cancelled = true;
            outcome.error = QStringLiteral("the connection to %1 was closed").arg(m_options.destination);
            command->end(outcome, m_options.destination);
        }
    }
}

std::unique_ptr<HostCommand> SshHost::start(const QStringList &arguments, const HostCommandOptions &options)
{
    const quint64 id = m_nextId++;
    const QString program = options.program.isEmpty() ? m_accelProgram : options.program;
    watchInbox();
    auto command = std::make_unique<SshCommand>(this, id, program, options.keepOutput);
    m_commands.insert(id, command.get());
    std::vector<std::string> environment;
    for (const QString &entry : options.environment)
        environment.push_back(entry.toStdString());
    std::vector<std::string> argv = {program.toStdString()};
    for (const QString &argument : arguments)
        argv.push_back(argument.toStdString());
    m_worker->submit(id, ssh::remoteCommandLine(environment, argv), options.timeoutMs);
    return command;
}

void SshHost::cancelCommand(quint64 id)
{
    m_worker->cancel(id);
}

void SshHost::forget(quint64 id)
{
    m_commands.remove(id);
}

void SshHost::deliverOutput(quint64 id, const QByteArray &out, const QByteArray &err)
{
    if (SshCommand *command = m_commands.value(id))
        command->receive(out, err);
}

void SshHost::deliverDone(quint64 id, AccelOutcome outcome)
{
    SshCommand *command = m_commands.take(id);
    if (command)
        command->end(std::move(outcome), m_options.destination);
}

} // namespace accel::launcher
