// The `accel tail --follow --json` stream (schema "accel.tail", version 1): a run directory's
// growth as JSON lines, so a remote run can be followed through SSH with the same pipeline as a
// local one. Lines:
//   {"schema":"accel.tail","version":1,"run":"/path/to/run"}            first line
//   {"file":"metrics/rank0.jsonl","text":"<complete lines, newlines included>","offset":1234}
// "offset" is the file's byte offset just past the text's last line: a new stream started with
// `accel tail --from FILE=OFFSET` continues exactly after it.
//   {"file":"logs/rank1.log","restarted":"truncated"}                     ("replaced")
//   {"file":"run.json","manifest":{...}}
// A multi-node run (a folder of node<K> run directories) streams each node's own files under its
// folder ("node1/run.json", "node1/events.jsonl") and the ranks' files under their global names;
// StreamRunSource delivers one manifest made from every node's (monitor/noderuns.h) and each
// node's events with their node.
// TailStreamEncoder writes it (only whole lines go out, so text is always valid UTF-8 lines);
// StreamRunSource reads it back into RunSource signals.
#pragma once

#include "monitor/runsource.h"

#include <QHash>
#include <QJsonObject>
#include <QMap>
#include <QPointer>
#include <QStringList>

#include <utility>

class QIODevice;

namespace accel::monitor {

// The stream's first line's "schema" and "version".
inline constexpr const char *TailSchema = "accel.tail";
inline constexpr int TailSchemaVersion = 1;

class TailStreamEncoder {
public:
    // Longer lines are dropped whole (with a warning), so memory per file stays bounded.
    static constexpr qsizetype kMaximumLineBytes = 1 << 20;

    QByteArray header(const QString &runDirectory) const;
    // The stream of this file starts at `offset` (a resumed stream), not at 0.
    void setStartOffset(const QString &relativePath, qint64 offset) { m_pending[relativePath].offset = offset; }
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
        qint64 offset = 0;     // the file's bytes seen so far (the start offset included)
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
    // Per file, the "offset" of the last text received (what `accel tail --from FILE=OFFSET`
    // resumes from); a restarted file drops out (it starts at 0 again). positionsKnown() is false
    // once a text came without one (an accel older than the offsets): such a stream cannot resume.
    QHash<QString, qint64> positions() const { return m_positions; }
    bool positionsKnown() const { return m_positionsKnown; }
    // The connection carrying the stream broke: forget the half-received line, if any, so the
    // stream of a new connection can follow.
    void discardPartialLine() { m_pending.clear(); }
    QString runDirectory() const { return m_runDirectory; }

private:
    void handleLine(QByteArrayView line);

    QPointer<QIODevice> m_device;
    QByteArray m_pending;
    QString m_runDirectory;
    qint64 m_junkLines = 0;
    QHash<QString, qint64> m_positions;
    QMap<int, QJsonObject> m_nodeManifests; // a multi-node run's, by node number
    bool m_positionsKnown = true;
    bool m_finished = false;
};

} // namespace accel::monitor
