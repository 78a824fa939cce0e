#include "launcher/filefollower.h"

#include <QFile>

namespace accel::launcher {

void FileFollower::seekToTail(int lines)
{
    for (auto it = m_offsets.begin(); it != m_offsets.end(); ++it) {
        QFile file(it.key());
        if (lines < 0 || !file.open(QIODevice::ReadOnly)) {
            it.value() = 0;
            continue;
        }
        const qint64 size = file.size();
        if (lines == 0) {
            it.value() = size;
            continue;
        }
        // The start of the last `lines` lines (a trailing newline does not start a line).
        const qint64 start = std::max<qint64>(0, size - 262144);
        file.seek(start);
        const QByteArray data = file.readAll();
        qsizetype position = data.size();
        if (position > 0 && data.at(position - 1) == '\n')
            --position;
        int found = 0;
        while (found < lines && position > 0) {
            position = data.lastIndexOf('\n', position - 1);
            if (position < 0)
                break;
            ++found;
        }
        it.value() = found == lines && position >= 0 ? start + position + 1 : start;
    }
}

QList<FileFollower::Line> FileFollower::poll()
{
    QList<Line> lines;
    for (auto it = m_offsets.begin(); it != m_offsets.end(); ++it) {
        QFile file(it.key());
        if (!file.open(QIODevice::ReadOnly))
            continue;
        if (file.size() < it.value())
            it.value() = 0; // truncated or replaced: start over
        if (file.size() == it.value())
            continue;
        file.seek(it.value());
        const QByteArray data = file.readAll();
        const qsizetype lastNewline = data.lastIndexOf('\n');
        if (lastNewline < 0)
            continue;
        for (const QByteArray &line : data.left(lastNewline).split('\n'))
            lines.append({it.key(), QString::fromUtf8(line)});
        it.value() += lastNewline + 1;
    }
    return lines;
}

} // namespace accel::launcher
