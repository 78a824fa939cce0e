// RunSource: where the data of one run comes from (a local run directory, or the byte stream of
// `accel tail --follow --json` read over SSH). Subclasses only hand over raw bytes per run file
// (relative path, e.g. "metrics/rank0.jsonl"); the base class splits lines, decodes metrics,
// events and logs, and delivers them in batches through the signals below.
#pragma once

#include "monitor/metricbatch.h"
#include "monitor/metricsparser.h"
#include "monitor/runevent.h"

#include <QJsonObject>
#include <QObject>

#include <map>
#include <memory>

namespace accel::monitor {

class StdoutMetricsParser;

class RunSource : public QObject {
    Q_OBJECT
public:
    explicit RunSource(QObject *parent = nullptr);
    ~RunSource() override;

    virtual void start() = 0;
    virtual void stop() = 0;

    // Opt-in: also read metrics from log lines of scripts that only print (Trainer dicts,
    // "loss=..." pairs, tqdm rates); see StdoutMetricsParser.
    void setStdoutMetricsEnabled(bool enabled) { m_stdoutMetrics = enabled; }
    bool stdoutMetricsEnabled() const { return m_stdoutMetrics; }

    // Parser counters summed over every metrics file seen so far.
    ParserStats metricsStats() const;

Q_SIGNALS:
    // Raw bytes as read, before decoding (for re-streaming a run, e.g. `accel tail --json`).
    void bytesRead(const QString &relativePath, const QByteArray &bytes);
    void metricsReceived(const accel::monitor::MetricBatch &batch);
    void eventsReceived(const QList<accel::monitor::RunEvent> &events);
    void logLinesReceived(const accel::monitor::LogLines &lines);
    void runInfoChanged(const QJsonObject &manifest);
    // A file shrank or was replaced: it is read again from its start.
    void streamRestarted(const QString &relativePath, const QString &reason);
    // The source will deliver nothing more (stream closed); a directory follower never ends.
    void ended(const QString &reason);

protected:
    void deliverBytes(const QString &relativePath, QByteArrayView bytes);
    void deliverRestart(const QString &relativePath, const QString &reason);
    void deliverManifest(const QJsonObject &manifest);
    // End of input: pending partial lines are decoded as complete ones.
    void flushPending();

private:
    struct FileDecoder;
    FileDecoder &decoderFor(const QString &relativePath);
    void decodeTextLines(FileDecoder &decoder, QByteArrayView bytes, bool flush);

    std::map<QString, std::unique_ptr<FileDecoder>> m_decoders;
    bool m_stdoutMetrics = false;
};

} // namespace accel::monitor
