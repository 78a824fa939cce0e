#include "app/studio/launch/runcontrol.h"

#include "launcher/jsonoutput.h"
#include "launcher/rundirectory.h"

#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>

namespace accel::app {

RunControl::RunControl(QObject *parent) : QObject(parent)
{
    m_accel = launcher::AccelCommand::defaultProgram();
    m_runWatch.setInterval(1000);
    connect(&m_runWatch, &QTimer::timeout, this, &RunControl::watchRunState);
}

// Commands still running are children and killed with their process groups by AccelCommand's
// destructor; the runs they started are detached and keep going.
RunControl::~RunControl() = default;

launcher::AccelCommand *RunControl::startAccel(const QStringList &arguments, const QProcessEnvironment &environment)
{
    auto *command = new launcher::AccelCommand(this);
    command->setEnvironment(environment);
    command->setProgram(m_accel);
    command->start(arguments);
    return command;
}

QString RunControl::failureText(const launcher::AccelOutcome &outcome, const QString &what) const
{
    if (outcome.failedToStart)
        return tr("cannot start %1: %2").arg(m_accel, outcome.error);
    const QString err = QString::fromUtf8(outcome.standardError).trimmed();
    return err.isEmpty() ? tr("%1 failed: %2").arg(what, outcome.describe()) : err;
}

bool RunControl::canStop() const
{
    return m_live && !isStopping() && !isStarting();
}

bool RunControl::startLocal(const QStringList &arguments, const QProcessEnvironment &environment)
{
    if (isStarting())
        return false;
    // Launch's own flags go before the program: everything after the script is the script's own
    // arguments, so `--detach --json` at the end would reach the script (argparse: "unrecognized
    // arguments"). `arguments` start with the command word, "launch".
    QStringList detached = arguments;
    detached.insert(std::min<qsizetype>(1, detached.size()), QStringLiteral("--json"));
    detached.insert(std::min<qsizetype>(1, detached.size()), QStringLiteral("--detach"));
    m_launch = startAccel(detached, environment);
    connect(m_launch, &launcher::AccelCommand::done, this, &RunControl::onLocalDone);
    Q_EMIT changed();
    return true;
}

bool RunControl::startOnHosts(const QStringList &arguments)
{
    if (isStarting())
        return false;
    m_launch = startAccel(arguments, QProcessEnvironment::systemEnvironment());
    connect(m_launch, &launcher::AccelCommand::done, this, &RunControl::onClusterDone);
    Q_EMIT changed();
    return true;
}

void RunControl::onLocalDone(const launcher::AccelOutcome &outcome)
{
    if (m_launch)
        m_launch->deleteLater();
    m_launch = nullptr;
    const QJsonObject object = QJsonDocument::fromJson(outcome.standardOutput).object();
    if (!outcome.succeeded() ||
        object.value(QStringLiteral("schema")).toString() != QLatin1String(launcher::LaunchDetachedSchema)) {
        Q_EMIT changed();
        Q_EMIT launchFailed(failureText(outcome, tr("accel launch")));
        return;
    }
    m_cluster = false;
    m_report = {};
    m_runId = object.value(QStringLiteral("id")).toString();
    m_runDir = object.value(QStringLiteral("run_dir")).toString();
    m_live = true;
    m_runWatch.start();
    Q_EMIT changed();
    Q_EMIT launched(m_runId, m_runDir);
}

void RunControl::onClusterDone(const launcher::AccelOutcome &outcome)
{
    if (m_launch)
        m_launch->deleteLater();
    m_launch = nullptr;
    auto report = parseHostsLaunch(outcome.standardOutput);
    if (!report) {
        Q_EMIT changed();
        Q_EMIT launchFailed(failureText(outcome, tr("accel launch --hosts")));
        return;
    }
    // Shown per node also when nothing started: each node's line says what failed.
    m_runWatch.stop();
    m_cluster = true;
    m_report = *report;
    m_live = report->ok;
    m_runId = report->nodes.empty() ? QString() : report->nodes.front().runId;
    m_runDir = report->nodes.empty() ? QString() : report->nodes.front().runDir;
    Q_EMIT changed();
    if (report->ok) {
        Q_EMIT clusterLaunched(report->record);
        return;
    }
    QStringList lines;
    for (const ClusterNode &node : report->nodes)
        lines << QStringLiteral("%1: %2").arg(node.host, node.message);
    Q_EMIT launchFailed(tr("Nothing was started on the hosts:\n%1").arg(lines.join(QLatin1Char('\n'))));
}

bool RunControl::stop()
{
    if (m_runDir.isEmpty() || isStopping() || (m_cluster && m_report.record.isEmpty()))
        return false;
    const QStringList arguments = m_cluster ? QStringList{QStringLiteral("hosts"), QStringLiteral("stop"),
                                                          m_report.record, QStringLiteral("--json")}
                                            : QStringList{QStringLiteral("stop"), m_runDir};
    // done() comes exactly once, also when `accel` cannot start: Stop never stays stuck.
    m_stop = startAccel(arguments, QProcessEnvironment::systemEnvironment());
    connect(m_stop, &launcher::AccelCommand::done, this, &RunControl::onStopDone);
    Q_EMIT changed();
    return true;
}

void RunControl::onStopDone(const launcher::AccelOutcome &outcome)
{
    if (m_stop)
        m_stop->deleteLater();
    m_stop = nullptr;
    QString output = QString::fromUtf8(outcome.standardOutput + outcome.standardError).trimmed();
    if (outcome.failedToStart)
        output = failureText(outcome, tr("accel stop"));
    if (m_cluster) {
        if (auto report = parseHostsStop(outcome.standardOutput)) {
            QStringList lines;
            for (const ClusterNode &stopped : report->nodes) {
                for (ClusterNode &node : m_report.nodes) {
                    if (node.host == stopped.host && node.runDir == stopped.runDir) {
                        node.stopped = stopped.stopped;
                        node.state = stopped.state;
                        node.message = stopped.message;
                    }
                }
                lines << QStringLiteral("%1: %2").arg(stopped.host, stopped.stopped ? stopped.state : stopped.message);
            }
            output = lines.join(QLatin1Char('\n'));
            m_live = !report->ok; // a node that was not reached can be stopped again
        }
    }
    watchRunState();
    Q_EMIT changed();
    Q_EMIT stopFinished(outcome.shellCode(), output);
}

void RunControl::watchRunState()
{
    if (m_cluster || m_runDir.isEmpty()) {
        m_runWatch.stop();
        return;
    }
    auto run = launcher::RunDirectory::open(m_runDir, QFileInfo(m_runDir).path());
    const QString state = run ? run->effectiveState() : QString();
    const bool live = run && !launcher::runstate::isFinal(state);
    if (live != m_live) {
        m_live = live;
        Q_EMIT changed();
    }
    if (!live)
        m_runWatch.stop();
}

} // namespace accel::app
