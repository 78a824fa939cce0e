#include "monitor/tailstream.h"

#include "core/rundir/runlayout.h"

#include "monitor/noderuns.h"

#include <QIODevice>
#include <QJsonDocument>

namespace accel::monitor {

namespace {

QByteArray envelope(const QJsonObject &object)
{
    return QJsonDocument(object).toJson(QJsonDocument::Compact) + '\n';
}

// {"file":...,"text":...,"offset":N}: the offset last, so the lines start as before it was added.
QByteArray textEnvelope(const QString &relativePath, const QByteArray &text, qint64 offset)
{
    QByteArray line = QJsonDocument(QJsonObject{{QStringLiteral("file"), relativePath},
                                                {QStringLiteral("text"), QString::fromUtf8(text)}})
                          .toJson(QJsonDocument::Compact);
    line.chop(1);
    return line + ",\"offset\":" + QByteArray::number(offset) + "}\n";
}

} // namespace

QByteArray TailStreamEncoder::header(const QString &runDirectory) const
{
    // Built by hand so "schema" and "version" come first, as every --json output of accel does.
    const QByteArray run =
        QJsonDocument(QJsonObject{{QStringLiteral("run"), runDirectory}}).toJson(QJsonDocument::Compact);
    return "{\"schema\":\"" + QByteArray(TailSchema) + "\",\"version\":" + QByteArray::number(TailSchemaVersion) + ',' +
           run.mid(1) + '\n';
}

QByteArray TailStreamEncoder::encodeBytes(const QString &relativePath, QByteArrayView bytes)
{
    Pending &pending = m_pending[relativePath];
    auto warn = [&] {
        m_warnings
            << QStringLiteral("%1: skipped a line longer than %2 bytes").arg(relativePath).arg(kMaximumLineBytes);
    };
    QByteArray text;
    qsizetype position = 0;
    const qint64 base = pending.offset;
    pending.offset += bytes.size();
    for (qsizetype newline = bytes.indexOf('\n'); newline >= 0; newline = bytes.indexOf('\n', position)) {
        const QByteArrayView line = bytes.sliced(position, newline - position);
        if (pending.skipping) {
            pending.skipping = false; // the end of the over-long line
        } else if (pending.partial.size() + line.size() > kMaximumLineBytes) {
            warn();
        } else {
            text += pending.partial;
            text += line;
            text += '\n';
        }
        pending.partial.clear();
        position = newline + 1;
    }
    const QByteArrayView rest = bytes.sliced(position);
    if (!pending.skipping) {
        if (pending.partial.size() + rest.size() > kMaximumLineBytes) {
            warn();
            pending.partial.clear();
            pending.skipping = true;
        } else {
            pending.partial += rest;
        }
    }
    if (text.isEmpty())
        return {};
    // Just past the last newline of these bytes (a skipped over-long line after the text included).
    return textEnvelope(relativePath, text, base + position);
}

QByteArray TailStreamEncoder::encodeRestart(const QString &relativePath, const QString &reason)
{
    m_pending.remove(relativePath);
    return envelope({{QStringLiteral("file"), relativePath}, {QStringLiteral("restarted"), reason}});
}

QByteArray TailStreamEncoder::encodeManifest(const QJsonObject &manifest) const
{
    return envelope(
        {{QStringLiteral("file"), QLatin1String(rundir::file::Manifest)}, {QStringLiteral("manifest"), manifest}});
}

QByteArray TailStreamEncoder::flush()
{
    QByteArray out;
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it) {
        if (!it.value().partial.isEmpty())
            out += textEnvelope(it.key(), it.value().partial + '\n', it.value().offset);
    }
    m_pending.clear();
    return out;
}

StreamRunSource::StreamRunSource(QObject *parent) : RunSource(parent) {}

void StreamRunSource::attach(QIODevice *device)
{
    m_device = device;
    connect(device, &QIODevice::readyRead, this, [this] {
        if (m_device)
            feed(m_device->readAll());
    });
    connect(device, &QIODevice::readChannelFinished, this, [this] {
        if (m_device)
            feed(m_device->readAll());
        finish();
    });
    if (device->bytesAvailable() > 0)
        feed(device->readAll());
}

void StreamRunSource::stop()
{
    if (m_device)
        disconnect(m_device, nullptr, this, nullptr);
    m_device = nullptr;
}

void StreamRunSource::feed(QByteArrayView bytes)
{
    if (m_finished)
        return;
    qsizetype start = 0;
    for (;;) {
        const qsizetype newline = bytes.indexOf('\n', start);
        if (newline < 0)
            break;
        if (!m_pending.isEmpty()) {
            m_pending.append(bytes.sliced(start, newline - start));
            const QByteArray line = std::exchange(m_pending, {});
            handleLine(line);
        } else {
            handleLine(bytes.sliced(start, newline - start));
        }
        if (m_finished)
            return;
        start = newline + 1;
    }
    m_pending.append(bytes.sliced(start));
}

void StreamRunSource::finish(const QString &reason)
{
    if (m_finished)
        return;
    if (!m_pending.isEmpty())
        handleLine(std::exchange(m_pending, {}));
    flushPending();
    m_finished = true;
    Q_EMIT ended(reason);
}

void StreamRunSource::handleLine(QByteArrayView line)
{
    if (line.trimmed().isEmpty())
        return;
    const QJsonDocument document = QJsonDocument::fromJson(line.toByteArray());
    if (!document.isObject()) {
        ++m_junkLines;
        return;
    }
    const QJsonObject object = document.object();
    if (object.contains(QLatin1String("schema"))) {
        if (object.value(QLatin1String("schema")).toString() != QLatin1String(TailSchema)) {
            ++m_junkLines;
            return;
        }
        if (object.value(QLatin1String("version")).toInt() > TailSchemaVersion) {
            m_finished = true;
            Q_EMIT ended(QStringLiteral("unsupported %1 version %2")
                             .arg(QLatin1String(TailSchema))
                             .arg(object.value(QLatin1String("version")).toInt()));
            return;
        }
        m_runDirectory = object.value(QLatin1String("run")).toString();
        return;
    }
    const QString file = object.value(QLatin1String("file")).toString();
    if (file.isEmpty() || file.contains(QLatin1String(".."))) {
        ++m_junkLines;
        return;
    }
    if (object.value(QLatin1String("text")).isString()) {
        const QJsonValue offset = object.value(QLatin1String("offset"));
        if (offset.isDouble())
            m_positions.insert(file, static_cast<qint64>(offset.toDouble()));
        else
            m_positionsKnown = false;
        deliverBytes(file, object.value(QLatin1String("text")).toString().toUtf8());
    } else if (object.value(QLatin1String("restarted")).isString()) {
        m_positions.remove(file);
        deliverRestart(file, object.value(QLatin1String("restarted")).toString());
    } else if (object.value(QLatin1String("manifest")).isObject()) {
        const QJsonObject manifest = object.value(QLatin1String("manifest")).toObject();
        QString rest;
        const int node = nodeOfStreamPath(file, &rest);
        if (node < 0) {
            deliverManifest(manifest);
        } else if (rest == QLatin1String(rundir::file::Manifest)) {
            // A multi-node run: the run's manifest is made from every node's.
            m_nodeManifests.insert(node, manifest);
            deliverManifest(combineNodeManifests(m_nodeManifests));
        } else {
            ++m_junkLines;
        }
    } else {
        ++m_junkLines;
    }
}

} // namespace accel::monitor
