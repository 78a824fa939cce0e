#include "app/studio/bigmodel/playgroundcluster.h"

#include "app/studio/cluster/hostlist.h"
#include "core/rundir/runlayout.h"
#include "launcher/accelcommand.h"
#include "launcher/hostfactory.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace accel::app {

namespace {

// The number of a JSON value as accel's options read it ("0.8", "20").
QString numberText(const QJsonValue &value)
{
    const double number = value.toDouble();
    return number == double(qint64(number)) ? QString::number(qint64(number)) : QString::number(number, 'g', 17);
}

// The accel.generate object a rank printed with --json: from its first line "{" to the end.
QJsonObject resultOf(const QByteArray &log)
{
    const qsizetype start = log.startsWith("{\n") ? 0 : log.indexOf("\n{\n");
    if (start < 0)
        return {};
    const QJsonObject object = QJsonDocument::fromJson(log.mid(start)).object();
    return object.value(QStringLiteral("schema")).toString() == QLatin1String("accel.generate") ? object
                                                                                                : QJsonObject();
}

// A command may end inside its own done(): it is deleted once the signal has returned.
void retire(std::unique_ptr<launcher::HostCommand> &command)
{
    if (command)
        command.release()->deleteLater();
}

QString failureText(const launcher::AccelOutcome &outcome, const QString &what)
{
    const QString err = QString::fromUtf8(outcome.standardError).trimmed();
    if (outcome.failedToStart)
        return QObject::tr("%1: cannot start accel: %2").arg(what, outcome.error);
    return QObject::tr("%1 failed (%2)%3")
        .arg(what, outcome.describe(), err.isEmpty() ? QString() : QStringLiteral(": ") + err);
}

} // namespace

PlaygroundCluster::PlaygroundCluster(QObject *parent)
    : QObject(parent), m_accel(launcher::AccelCommand::defaultProgram())
{}

PlaygroundCluster::~PlaygroundCluster() = default;

QStringList PlaygroundCluster::launchArguments(const QStringList &hosts, const QString &remoteAccel,
                                               const QString &modelDir, const QJsonObject &request,
                                               const QJsonObject &load)
{
    QStringList args{QStringLiteral("launch"),          QStringLiteral("--hosts"),
                     hostListArgument(hosts),           QStringLiteral("--json"),
                     QStringLiteral("--num_processes"), QString::number(hosts.size()),
                     QStringLiteral("--no_python"),     remoteAccel,
                     QStringLiteral("generate"),        modelDir,
                     QStringLiteral("--device_map"),    QStringLiteral("pipeline")};
    if (request.contains(QStringLiteral("prompt"))) {
        args << QStringLiteral("--prompt") << request.value(QStringLiteral("prompt")).toString();
    } else {
        QStringList ids;
        for (const QJsonValue &id : request.value(QStringLiteral("input_ids")).toArray())
            ids << numberText(id);
        args << QStringLiteral("--input_ids") << ids.join(QLatin1Char(','));
    }
    for (const char *key : {"max_new_tokens", "temperature", "top_k", "top_p", "repetition_penalty", "seed"})
        if (request.contains(QLatin1String(key)))
            args << QStringLiteral("--") + QLatin1String(key) << numberText(request.value(QLatin1String(key)));
    if (request.value(QStringLiteral("greedy")).toBool())
        args << QStringLiteral("--greedy");
    for (const QJsonValue &stop : request.value(QStringLiteral("stop")).toArray())
        args << QStringLiteral("--stop") << stop.toString();
    if (load.value(QStringLiteral("threads")).toInt() > 0)
        args << QStringLiteral("--threads") << numberText(load.value(QStringLiteral("threads")));
    for (const char *key : {"dtype", "quantization", "adapter"})
        if (const QString value = load.value(QLatin1String(key)).toString(); !value.isEmpty())
            args << QStringLiteral("--") + QLatin1String(key) << value;
    if (load.value(QStringLiteral("pin_threads")).toBool())
        args << QStringLiteral("--pin_threads");
    args << QStringLiteral("--json");
    return args;
}

void PlaygroundCluster::start(const QStringList &hosts, const QString &modelDir, const QJsonObject &request,
                              const QJsonObject &load)
{
    if (m_running)
        return;
    m_running = true;
    m_stopping = false;
    m_launch = {};
    m_stream.clear();
    m_log.clear();
    m_state.clear();
    m_lastHostName = hosts.last();
    // The last host's accel is the one the ranks run there (every host runs the same path).
    launcher::SshHostOptions options;
    options.destination = m_lastHostName;
    m_lastHost = launcher::makeHost(options);
    m_local = std::make_unique<launcher::LocalHost>(m_accel);
    m_lastRank = int(hosts.size()) - 1;
    m_logFile = QString::fromStdString(rundir::logFile(m_lastRank));
    retire(m_command);
    QStringList arguments = launchArguments(hosts, m_lastHost->accelProgram(), modelDir, request, load);
    if (m_port > 0) { // beside --hosts and --json, before the program
        arguments.insert(4, QStringLiteral("--main_process_port"));
        arguments.insert(5, QString::number(m_port));
    }
    m_command = m_local->start(arguments);
    connect(m_command.get(), &launcher::HostCommand::done, this, &PlaygroundCluster::onLaunched);
}

void PlaygroundCluster::onLaunched(const launcher::AccelOutcome &outcome)
{
    m_launch = QJsonDocument::fromJson(outcome.standardOutput).object();
    if (!outcome.succeeded() || m_stopping) {
        const QString messages = [&] {
            QStringList lines;
            for (const QJsonValue &node : m_launch.value(QStringLiteral("nodes")).toArray())
                if (const QString message = node.toObject().value(QStringLiteral("message")).toString();
                    !message.isEmpty())
                    lines << node.toObject().value(QStringLiteral("host")).toString() + QStringLiteral(": ") + message;
            return lines.join(QLatin1Char('\n'));
        }();
        return fail(m_stopping           ? tr("Stopped.")
                    : messages.isEmpty() ? failureText(outcome, tr("accel launch --hosts"))
                                         : tr("accel launch --hosts failed:\n%1").arg(messages));
    }
    Q_EMIT launched(m_launch);
    QString runDir;
    int lastRank = -1;
    for (const QJsonValue &value : m_launch.value(QStringLiteral("nodes")).toArray()) {
        const QJsonObject node = value.toObject();
        if (node.value(QStringLiteral("machine_rank")).toInt() > lastRank) {
            lastRank = node.value(QStringLiteral("machine_rank")).toInt();
            runDir = node.value(QStringLiteral("run_dir")).toString();
        }
    }
    if (runDir.isEmpty())
        return fail(
            tr("accel launch --hosts named no run directory:\n%1").arg(QString::fromUtf8(outcome.standardOutput)));
    retire(m_command);
    m_command = m_lastHost->start({QStringLiteral("tail"), runDir, QStringLiteral("--follow"), QStringLiteral("--json"),
                                   QStringLiteral("--logs"), QStringLiteral("--rank"), QString::number(m_lastRank),
                                   QStringLiteral("--lines"), QStringLiteral("-1")},
                                  {QString(), {}, 0, false});
    connect(m_command.get(), &launcher::HostCommand::outputReceived, this,
            [this](const QByteArray &out, const QByteArray &) { onTailOutput(out); });
    connect(m_command.get(), &launcher::HostCommand::done, this, &PlaygroundCluster::onTailDone);
}

void PlaygroundCluster::onTailOutput(const QByteArray &out)
{
    m_stream += out;
    qsizetype newline;
    while ((newline = m_stream.indexOf('\n')) >= 0) {
        const QJsonObject line = QJsonDocument::fromJson(m_stream.left(newline)).object();
        m_stream.remove(0, newline + 1);
        if (line.value(QStringLiteral("file")).toString() == m_logFile)
            m_log += line.value(QStringLiteral("text")).toString().toUtf8();
        const QJsonObject manifest = line.value(QStringLiteral("manifest")).toObject();
        if (!manifest.isEmpty())
            m_state = manifest.value(QStringLiteral("state")).toString();
    }
}

void PlaygroundCluster::onTailDone(const launcher::AccelOutcome &outcome)
{
    const QJsonObject result = resultOf(m_log);
    if (!result.isEmpty() && !m_stopping) {
        m_running = false;
        retire(m_command);
        Q_EMIT finished(result);
        return;
    }
    if (m_stopping)
        return fail(tr("Stopped."));
    const QString tail = QString::fromUtf8(m_log).trimmed().right(1500);
    if (!outcome.succeeded())
        return fail(failureText(outcome, tr("accel tail on %1").arg(m_lastHostName)) +
                    (tail.isEmpty() ? QString() : QStringLiteral("\n") + tail));
    fail(tr("The split generation ended (%1 on %2) without a result:\n%3")
             .arg(m_state.isEmpty() ? tr("no state") : m_state, m_lastHostName, tail));
}

void PlaygroundCluster::stop()
{
    if (!m_running || m_stopping)
        return;
    m_stopping = true;
    const QString record = m_launch.value(QStringLiteral("record")).toString();
    if (record.isEmpty()) {
        if (m_command)
            m_command->cancel(); // the launch itself stops the nodes it started
        return;
    }
    // The nodes' runs end; the followed tail ends with them.
    retire(m_stopCommand);
    m_stopCommand = m_local->start({QStringLiteral("hosts"), QStringLiteral("stop"), record, QStringLiteral("--json")});
}

void PlaygroundCluster::fail(const QString &message)
{
    m_running = false;
    retire(m_command);
    Q_EMIT failed(message);
}

} // namespace accel::app
