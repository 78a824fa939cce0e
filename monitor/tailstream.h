// The `accel tail --follow --json` stream (schema "accel.tail", version 1): a run directory's
// growth as JSON lines, so a remote run can be followed through SSH with the same pipeline as a
// local one. Lines:
//   {"schema":"accel.tail","version":1,"run":"/path/to/run"}            first line
//   {"file":"metrics/rank0.jsonl","text":"<complete lines, newlines included>"}
//   {"file":"logs/rank1.log","restarted":"truncated"}                     ("replaced")
//   {"file":"run.json","manifest":{...}}
// TailStreamEncoder writes it (only whole lines go out, so text is always valid UTF-8 lines);
// StreamRunSource reads it back into RunSource signals.
#pragma once

#include "monitor/runsource.h"

#include <QHash>
#include <QPointer>
#include <QStringList>

#include <utility>

class QIODevice;

namespace accel::monitor {

class TailStreamEncoder {
public:
    // Longer lines are dropped whole (with a warning), so memory per file stays bounded.
    static constexpr qsizetype kMaximumLineBytes = 1 << 20;

    QByteArray header(const QString &runDirectory) const;
    // Envelope lines for the complete lines of `bytes`; a trailing partial line waits.
    QByteArray encodeBytes(const QString &relativePath, QByteArrayView bytes);
    QByteArray encodeRestart(const QString &relativePath, const QString &reason);
    QByteArray encodeManifest(const QJsonObject &manifest) const;
    // Pending partial lines (end of the stream), as if they were complete.
    QByteArray flush();
    // "metrics/rank0.jsonl: skipped a line longer than 1048576 bytes", once per skipped line.
    QStringList takeWarnings() { return std::exchange(m_warnings, {}); }

private:
    struct Pending {
        QByteArray partial;
        bool skipping = false; // inside an over-long line: drop up to its newline
    };
    QHash<QString, Pending> m_pending;
    QStringList m_warnings;
};

class StreamRunSource : public RunSource {
    Q_OBJECT
public:
    explicit StreamRunSource(QObject *parent = nullptr);

    // Reads the stream from a device (e.g. the stdout of `ssh host accel tail --follow --json`):
    // readyRead feeds it, the end of the device finishes it.
    void attach(QIODevice *device);

    void feed(QByteArrayView bytes);
    void finish(const QString &reason = QStringLiteral("end of stream"));

    void start() override {}
    void stop() override;

    qint64 junkLines() const { return m_junkLines; }
    QString runDirectory() const { return m_runDirectory; }

private:
    void handleLine(QByteArrayView line);

    QPointer<QIODevice> m_device;
    QByteArray m_pending;
    QString m_runDirectory;
    qint64 m_junkLines = 0;
    bool m_finished = false;
};

} // namespace accel::monitor
