// Follows growing text files (rank logs, metrics, events) by offset and hands out complete new
// lines; `accel tail` and the demo's progress bar poll it. Files are opened without following
// symlinks (a symlinked file or folder in a run directory yields nothing), memory stays bounded:
// each poll reads at most a budget per file, and a line longer than kMaximumLineBytes is skipped
// whole (never handed out in pieces) with one warning.
#pragma once

#include <QMap>
#include <QString>
#include <QStringList>

#include <utility>

namespace accel::launcher {

class FileFollower {
public:
    struct Line {
        QString file;
        QString text;
    };
    static constexpr qint64 kMaximumLineBytes = 1 << 20;

    void addFile(const QString &path) { m_files.insert(path, State{}); }
    QStringList files() const { return m_files.keys(); }
    // Starts each file at its last `lines` lines (0: at the end; -1: at the beginning). When the
    // window looked at starts inside a line, that line is skipped, never handed out as a fragment.
    void seekToTail(int lines);
    // New complete lines since the last call, file by file, reading at most `maximumBytes` of each
    // file. A partial last line waits.
    QList<Line> poll(qint64 maximumBytes = 4 << 20);
    // The last poll stopped at its budget in some file: poll again for the rest.
    bool hasMore() const { return m_more; }
    // "logs/rank0.log: skipped a line longer than 1048576 bytes", once per skipped line.
    QStringList takeWarnings() { return std::exchange(m_warnings, {}); }

private:
    struct State {
        qint64 offset = 0;
        bool skipping = false; // inside a line that is not handed out: drop bytes up to its newline
    };
    void warnLongLine(const QString &path);

    QMap<QString, State> m_files;
    QStringList m_warnings;
    bool m_more = false;
};

} // namespace accel::launcher
