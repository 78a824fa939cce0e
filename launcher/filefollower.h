// Follows growing text files (rank logs, metrics, events) by offset and hands out complete new
// lines; `accel tail --follow` and the demo's progress bar poll it.
#pragma once

#include <QMap>
#include <QString>
#include <QStringList>

#include <functional>

namespace accel::launcher {

class FileFollower {
public:
    struct Line {
        QString file;
        QString text;
    };

    void addFile(const QString &path) { m_offsets.insert(path, 0); }
    QStringList files() const { return m_offsets.keys(); }
    // Starts each file at its last `lines` lines (0: at the end; -1: at the beginning).
    void seekToTail(int lines);
    // New complete lines since the last call, file by file. A partial last line waits.
    QList<Line> poll();

private:
    QMap<QString, qint64> m_offsets;
};

} // namespace accel::launcher
