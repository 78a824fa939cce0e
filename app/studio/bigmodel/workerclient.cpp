#include "app/studio/bigmodel/workerclient.h"

#include "core/common/programs.h"

#include <QCoreApplication>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>

namespace accel::app {

GenerationStats generationStats(const QJsonObject &s)
{
    GenerationStats stats;
    stats.promptTokens = s.value(QStringLiteral("prompt_tokens")).toInt();
    stats.newTokens = s.value(QStringLiteral("new_tokens")).toInt();
    stats.timeToFirstTokenMs = s.value(QStringLiteral("time_to_first_token_ms")).toDouble();
    stats.decodeTokensPerSecond = s.value(QStringLiteral("decode_tokens_per_second")).toDouble();
    stats.totalMs = s.value(QStringLiteral("total_ms")).toDouble();
    return stats;
}

WorkerClient::WorkerClient(QObject *parent) : QObject(parent), m_program(defaultProgram()) {}

WorkerClient::~WorkerClient()
{
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_stopping = true;
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(2000);
    }
}

QString WorkerClient::defaultProgram()
{
    return QString::fromStdString(workerProgramPath());
}

bool WorkerClient::isRunning() const
{
    return m_process && m_process->state() != QProcess::NotRunning;
}

qint64 WorkerClient::processId() const
{
    return m_process ? m_process->processId() : 0;
}

void WorkerClient::ensureStarted()
{
    if (isRunning())
        return;
    if (m_process)
        m_process->deleteLater();
    m_process = new QProcess(this);
    m_buffer.clear();
    m_stderrTail.clear();
    m_ready = false;
    m_stopping = false;
    connect(m_process, &QProcess::readyReadStandardOutput, this, &WorkerClient::readEvents);
    connect(m_process, &QProcess::readyReadStandardError, this, [this] {
        m_stderrTail += m_process->readAllStandardError();
        if (m_stderrTail.size() > 4000)
            m_stderrTail = m_stderrTail.right(4000);
    });
    connect(m_process, &QProcess::finished, this, &WorkerClient::processFinished);
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart)
            processFinished(-1, QProcess::CrashExit);
    });
    m_process->start(m_program, {QStringLiteral("serve")});
}

void WorkerClient::send(const QJsonObject &request)
{
    ensureStarted();
    const QByteArray line = QJsonDocument(request).toJson(QJsonDocument::Compact) + '\n';
    if (m_ready)
        m_process->write(line);
    else
        m_pending << line;
}

void WorkerClient::load(const QString &modelDir, const QJsonObject &options)
{
    QJsonObject request = options;
    request.insert(QStringLiteral("op"), QStringLiteral("load"));
    m_inFlight = QStringLiteral("load-%1").arg(m_nextId++);
    request.insert(QStringLiteral("id"), m_inFlight);
    request.insert(QStringLiteral("model"), modelDir);
    send(request);
}

QString WorkerClient::generate(const QJsonObject &fields)
{
    QJsonObject request = fields;
    request.insert(QStringLiteral("op"), QStringLiteral("generate"));
    m_inFlight = QStringLiteral("gen-%1").arg(m_nextId++);
    request.insert(QStringLiteral("id"), m_inFlight);
    send(request);
    return m_inFlight;
}

void WorkerClient::cancel()
{
    if (isRunning() && m_ready)
        m_process->write("{\"op\":\"cancel\"}\n");
}

void WorkerClient::unload()
{
    if (!isRunning())
        return;
    m_inFlight = QStringLiteral("unload-%1").arg(m_nextId++);
    send(QJsonObject{{QStringLiteral("op"), QStringLiteral("unload")}, {QStringLiteral("id"), m_inFlight}});
}

void WorkerClient::shutdown()
{
    if (!isRunning())
        return;
    m_stopping = true;
    m_process->write("{\"op\":\"shutdown\"}\n");
    m_process->closeWriteChannel();
}

void WorkerClient::readEvents()
{
    m_buffer += m_process->readAllStandardOutput();
    qsizetype newline;
    while ((newline = m_buffer.indexOf('\n')) >= 0) {
        const QByteArray line = m_buffer.left(newline).trimmed();
        m_buffer.remove(0, newline + 1);
        if (line.isEmpty())
            continue;
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(line, &error);
        if (error.error != QJsonParseError::NoError || !doc.isObject())
            continue; // not an event (a library may print to stdout); the protocol lines are objects
        handleEvent(doc.object());
    }
}

void WorkerClient::handleEvent(const QJsonObject &event)
{
    const QString kind = event.value(QStringLiteral("event")).toString();
    const QJsonValue idValue = event.value(QStringLiteral("id"));
    const QString id = idValue.isString() ? idValue.toString() : QString::number(idValue.toInteger());
    if (kind == QLatin1String("ready")) {
        m_ready = true;
        for (const QByteArray &line : std::as_const(m_pending))
            m_process->write(line);
        m_pending.clear();
        Q_EMIT ready();
    } else if (kind == QLatin1String("loaded")) {
        m_inFlight.clear();
        Q_EMIT loaded(event);
    } else if (kind == QLatin1String("token")) {
        Q_EMIT token(id, event.value(QStringLiteral("text")).toString());
    } else if (kind == QLatin1String("done")) {
        m_inFlight.clear();
        Q_EMIT generationDone(id, event.value(QStringLiteral("text")).toString(),
                              event.value(QStringLiteral("stop_reason")).toString(),
                              generationStats(event.value(QStringLiteral("stats")).toObject()));
    } else if (kind == QLatin1String("unloaded")) {
        m_inFlight.clear();
        Q_EMIT unloaded();
    } else if (kind == QLatin1String("error")) {
        m_inFlight.clear();
        Q_EMIT requestFailed(id, event.value(QStringLiteral("message")).toString());
    }
}

void WorkerClient::processFinished(int exitCode, QProcess::ExitStatus status)
{
    const bool expected = m_stopping && status == QProcess::NormalExit && exitCode == 0;
    m_ready = false;
    m_pending.clear();
    const QString inFlight = m_inFlight;
    m_inFlight.clear();
    if (expected)
        return;
    QString message;
    if (m_process && m_process->error() == QProcess::FailedToStart)
        message = tr("cannot start %1: %2").arg(m_program, m_process->errorString());
    else if (status == QProcess::CrashExit)
        message = tr("the worker died (killed or crashed, e.g. out of memory)");
    else
        message = tr("the worker exited with code %1").arg(exitCode);
    const QString tail = QString::fromUtf8(m_stderrTail).trimmed();
    if (!tail.isEmpty())
        message += QStringLiteral(": ") + tail.section(QLatin1Char('\n'), -3);
    if (!inFlight.isEmpty())
        Q_EMIT requestFailed(inFlight, message);
    Q_EMIT workerCrashed(message);
}

} // namespace accel::app
