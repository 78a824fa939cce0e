#include "monitor/runsource.h"

#include "core/rundir/runlayout.h"

#include "monitor/noderuns.h"
#include "monitor/stdoutmetricsparser.h"

#include <QDateTime>
#include <QFileInfo>
#include <QMetaMethod>

#include <cstring>

namespace accel::monitor {

// Outside the anonymous namespace: RunSource::FileDecoder, a member of a class with linkage, holds one.
enum class FileKind { Metrics, Events, Log, Other };

namespace {

constexpr qsizetype kMaximumTextLine = 1 << 20;

FileKind kindOf(const QString &relativePath)
{
    if (rundir::inMetrics(relativePath.toStdString()) && relativePath.endsWith(QLatin1String(".jsonl")))
        return FileKind::Metrics;
    // A multi-node run's nodes each have their events: node<K>/events.jsonl.
    QString rest;
    if (relativePath == QLatin1String(rundir::file::Events) ||
        (nodeOfStreamPath(relativePath, &rest) >= 0 && rest == QLatin1String(rundir::file::Events)))
        return FileKind::Events;
    if (rundir::inLogs(relativePath.toStdString()))
        return FileKind::Log;
    return FileKind::Other;
}

QString displayText(QByteArrayView line)
{
    // Progress bars redraw with carriage returns: show the newest state of the line.
    while (!line.isEmpty() && line.back() == '\r')
        line.chop(1);
    const qsizetype lastReturn = line.lastIndexOf('\r');
    if (lastReturn >= 0)
        line = line.sliced(lastReturn + 1);
    return QString::fromUtf8(line);
}

} // namespace

struct RunSource::FileDecoder {
    QString path;
    FileKind kind = FileKind::Other;
    int rank = -1;
    QString node; // "node1" for node1/events.jsonl
    MetricsParser metrics;
    QByteArray pending;
    bool skipping = false; // inside an over-long line: dropped up to its newline
    std::unique_ptr<StdoutMetricsParser> stdoutParser;
};

RunSource::RunSource(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<accel::monitor::MetricBatch>();
    qRegisterMetaType<accel::monitor::RunEvent>();
    qRegisterMetaType<accel::monitor::LogLines>();
}

RunSource::~RunSource() = default;

ParserStats RunSource::metricsStats() const
{
    ParserStats total;
    for (const auto &entry : m_decoders) {
        const ParserStats &stats = entry.second->metrics.stats();
        total.lines += stats.lines;
        total.samples += stats.samples;
        total.junk += stats.junk;
        total.futureVersion += stats.futureVersion;
        total.slowPath += stats.slowPath;
    }
    return total;
}

RunSource::FileDecoder &RunSource::decoderFor(const QString &relativePath)
{
    auto &slot = m_decoders[relativePath];
    if (!slot) {
        slot = std::make_unique<FileDecoder>();
        slot->path = relativePath;
        slot->kind = kindOf(relativePath);
        slot->rank = rankFromFileName(QFileInfo(relativePath).fileName());
        slot->metrics.setDefaultRank(slot->rank);
        if (const int node = nodeOfStreamPath(relativePath); node >= 0)
            slot->node = QStringLiteral("node%1").arg(node);
    }
    return *slot;
}

void RunSource::deliverBytes(const QString &relativePath, QByteArrayView bytes)
{
    if (bytes.isEmpty())
        return;
    static const QMetaMethod rawSignal = QMetaMethod::fromSignal(&RunSource::bytesRead);
    if (isSignalConnected(rawSignal)) // a copy only for whoever re-streams the run
        Q_EMIT bytesRead(relativePath, bytes.toByteArray());
    FileDecoder &decoder = decoderFor(relativePath);
    switch (decoder.kind) {
    case FileKind::Metrics: {
        MetricBatch batch;
        batch.source = relativePath;
        decoder.metrics.feed(bytes, batch);
        if (!batch.isEmpty())
            Q_EMIT metricsReceived(batch);
        break;
    }
    case FileKind::Events:
    case FileKind::Log:
        decodeTextLines(decoder, bytes, false);
        break;
    case FileKind::Other:
        break;
    }
}

void RunSource::decodeTextLines(FileDecoder &decoder, QByteArrayView bytes, bool flush)
{
    QList<RunEvent> events;
    LogLines logs;
    logs.source = decoder.path;
    logs.rank = decoder.rank;
    MetricBatch stdoutBatch;
    stdoutBatch.source = decoder.path;
    const double now = QDateTime::currentMSecsSinceEpoch() / 1000.0;

    // A line longer than the cap is never handed on in pieces: a log shows one marker instead.
    auto skipLine = [&] {
        if (decoder.kind == FileKind::Log)
            logs.lines.append(QStringLiteral("[accel: skipped a line longer than %1 bytes]").arg(kMaximumTextLine));
    };
    auto handleLine = [&](QByteArrayView line) {
        if (line.size() > kMaximumTextLine) {
            skipLine();
            return;
        }
        if (decoder.kind == FileKind::Events) {
            RunEvent event;
            if (parseEventLine(line.toByteArray(), event)) {
                event.node = decoder.node;
                events.append(event);
            }
            return;
        }
        logs.lines.append(displayText(line));
        if (m_stdoutMetrics) {
            if (!decoder.stdoutParser) {
                decoder.stdoutParser = std::make_unique<StdoutMetricsParser>();
                decoder.stdoutParser->setRank(decoder.rank);
            }
            decoder.stdoutParser->parseLine(QString::fromUtf8(line), now, stdoutBatch);
        }
    };

    const char *p = bytes.data();
    const char *end = p + bytes.size();
    if (decoder.skipping) {
        const char *newline =
            p < end ? static_cast<const char *>(std::memchr(p, '\n', static_cast<size_t>(end - p))) : nullptr;
        decoder.skipping = newline == nullptr;
        p = newline ? newline + 1 : end;
    }
    if (!decoder.pending.isEmpty()) {
        const char *newline =
            p < end ? static_cast<const char *>(std::memchr(p, '\n', static_cast<size_t>(end - p))) : nullptr;
        if (newline) {
            decoder.pending.append(p, static_cast<qsizetype>(newline - p));
            handleLine(decoder.pending);
            decoder.pending.clear();
            p = newline + 1;
        } else {
            decoder.pending.append(p, static_cast<qsizetype>(end - p));
            p = end;
        }
    }
    while (p < end) {
        const char *newline = static_cast<const char *>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
        if (!newline) {
            decoder.pending.append(p, static_cast<qsizetype>(end - p));
            break;
        }
        handleLine(QByteArrayView(p, newline - p));
        p = newline + 1;
    }
    if (!decoder.pending.isEmpty() && decoder.pending.size() > kMaximumTextLine) {
        skipLine();
        decoder.pending.clear();
        decoder.skipping = !flush;
    } else if (!decoder.pending.isEmpty() && flush) {
        handleLine(decoder.pending);
        decoder.pending.clear();
    }
    if (!events.isEmpty())
        Q_EMIT eventsReceived(events);
    if (!logs.lines.isEmpty())
        Q_EMIT logLinesReceived(logs);
    if (!stdoutBatch.isEmpty())
        Q_EMIT metricsReceived(stdoutBatch);
}

void RunSource::deliverRestart(const QString &relativePath, const QString &reason)
{
    FileDecoder &decoder = decoderFor(relativePath);
    decoder.metrics.resetStream();
    decoder.pending.clear();
    decoder.skipping = false;
    Q_EMIT streamRestarted(relativePath, reason);
}

void RunSource::deliverManifest(const QJsonObject &manifest)
{
    Q_EMIT runInfoChanged(manifest);
}

void RunSource::flushPending()
{
    for (auto &entry : m_decoders) {
        FileDecoder &decoder = *entry.second;
        if (decoder.kind == FileKind::Metrics) {
            MetricBatch batch;
            batch.source = decoder.path;
            decoder.metrics.finish(batch);
            if (!batch.isEmpty())
                Q_EMIT metricsReceived(batch);
        } else if (!decoder.pending.isEmpty()) {
            decodeTextLines(decoder, {}, true);
        }
    }
}

} // namespace accel::monitor
