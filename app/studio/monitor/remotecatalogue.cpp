#include "app/studio/monitor/remotecatalogue.h"

#include "app/studio/monitor/remotehosts.h"
#include "launcher/host.h"
#include "monitor/runcatalogue.h"

#include <algorithm>

namespace accel::app {

struct RemoteCatalogue::Pending {
    std::vector<std::unique_ptr<launcher::HostCommand>> commands;
    int outstanding = 0;
    QList<monitor::RunInfo> runs;
    QString reason;
    QString message;
};

namespace {

// What the person can do about a host that was not listed.
QString advice(const QString &reason)
{
    if (reason == QLatin1String("host_key_unknown"))
        return QObject::tr("check the host on the Hardware page (Cluster tab) to review its key and accept it");
    if (reason == QLatin1String("host_key_changed"))
        return QObject::tr("its host key changed: see the Hardware page (Cluster tab) before connecting again");
    if (reason == QLatin1String("login_refused"))
        return QObject::tr("authorise a key there or load yours into ssh-agent");
    return {};
}

} // namespace

RemoteCatalogue::RemoteCatalogue(RemoteHosts *hosts, QObject *parent) : QObject(parent), m_hosts(hosts)
{
    m_timer.setInterval(10000);
    connect(&m_timer, &QTimer::timeout, this, &RemoteCatalogue::refresh);
}

RemoteCatalogue::~RemoteCatalogue() = default; // the commands still running are cancelled

void RemoteCatalogue::setSources(const QList<CatalogueSource> &sources)
{
    m_sources.clear();
    for (const CatalogueSource &source : sources)
        addSource(source);
}

void RemoteCatalogue::addSource(const CatalogueSource &source)
{
    if (source.destination.isEmpty() || m_sources.contains(source))
        return;
    m_sources.append(source);
    if (m_timer.interval() > 0 && !m_timer.isActive())
        m_timer.start();
}

QStringList RemoteCatalogue::destinations() const
{
    QStringList out;
    for (const CatalogueSource &source : m_sources) {
        if (!out.contains(source.destination))
            out.append(source.destination);
    }
    return out;
}

void RemoteCatalogue::setRefreshInterval(int milliseconds)
{
    m_timer.setInterval(milliseconds);
    if (milliseconds <= 0)
        m_timer.stop();
    else if (!m_sources.isEmpty())
        m_timer.start();
}

void RemoteCatalogue::refresh()
{
    for (const QString &destination : destinations()) {
        if (!isListing(destination))
            list(destination);
    }
}

void RemoteCatalogue::list(const QString &destination)
{
    launcher::Host *host = m_hosts->host(destination);
    auto pending = std::make_unique<Pending>();
    Pending *state = pending.get();
    m_pending[destination] = std::move(pending);
    for (const CatalogueSource &source : std::as_const(m_sources)) {
        if (source.destination != destination)
            continue;
        QStringList arguments{QStringLiteral("runs"), QStringLiteral("--json")};
        if (!source.runsRoot.isEmpty())
            arguments << QStringLiteral("--runs_root") << source.runsRoot;
        launcher::HostCommandOptions options;
        options.timeoutMs = m_commandTimeoutMs;
        std::unique_ptr<launcher::HostCommand> command = host->start(arguments, options);
        launcher::HostCommand *raw = command.get();
        connect(raw, &launcher::HostCommand::done, this,
                [this, destination, raw](const launcher::AccelOutcome &outcome) { onDone(destination, raw, outcome); });
        state->commands.push_back(std::move(command));
        ++state->outstanding;
    }
}

void RemoteCatalogue::onDone(const QString &destination, launcher::HostCommand *command,
                             const launcher::AccelOutcome &outcome)
{
    auto it = m_pending.find(destination);
    if (it == m_pending.end())
        return;
    Pending &state = *it->second;
    for (auto &owned : state.commands) {
        if (owned.get() == command)
            owned.release()->deleteLater(); // it is emitting this signal
    }
    if (outcome.succeeded()) {
        if (auto runs = monitor::parseRunsListing(destination, outcome.standardOutput)) {
            for (const monitor::RunInfo &info : *runs) {
                const bool seen = std::any_of(state.runs.cbegin(), state.runs.cend(),
                                              [&](const monitor::RunInfo &other) { return other.path == info.path; });
                if (!seen)
                    state.runs.append(info);
            }
        } else if (state.reason.isEmpty()) {
            state.reason = QStringLiteral("failed");
            state.message = QString::fromStdString(runs.error().toString());
        }
    } else if (state.reason.isEmpty()) {
        state.reason = outcome.reason.isEmpty() ? QStringLiteral("failed") : outcome.reason;
        QString message = outcome.error;
        if (message.isEmpty()) {
            const QList<QByteArray> lines = outcome.standardError.trimmed().split('\n');
            message =
                QStringLiteral("accel runs failed (%1)%2")
                    .arg(outcome.describe(),
                         lines.last().isEmpty() ? QString() : QStringLiteral(": ") + QString::fromUtf8(lines.last()));
        }
        const QString todo = advice(state.reason);
        state.message = QStringLiteral("%1: %2%3")
                            .arg(destination, message, todo.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(todo));
    }
    if (--state.outstanding > 0)
        return;
    const std::unique_ptr<Pending> finished = std::move(it->second);
    m_pending.erase(it);
    if (!finished->reason.isEmpty()) {
        m_problems.insert(destination, finished->message);
        Q_EMIT failed(destination, finished->reason, finished->message);
        return;
    }
    m_problems.remove(destination);
    Q_EMIT listed(destination, finished->runs);
}

} // namespace accel::app
