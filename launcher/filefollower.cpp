#include "launcher/filefollower.h"

#include "core/rundir/privatefiles.h"

#include <QFile>
#include <QFileInfo>

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace accel::launcher {

namespace {

constexpr qint64 kTailWindow = 262144;

// The file without following a symlink in its place or in place of its folder; -1 when it cannot be read.
int openFollowed(const QString &path)
{
    const QFileInfo info(path);
    auto fd = rundir::openRunFile(QFile::encodeName(info.path()).toStdString(),
                                  QFile::encodeName(info.fileName()).toStdString(), rundir::OpenFor::Read);
    return fd ? *fd : -1;
}

qint64 fileSize(int fd)
{
    struct stat info {};
    return ::fstat(fd, &info) == 0 ? static_cast<qint64>(info.st_size) : -1;
}

QByteArray readAt(int fd, qint64 offset, qint64 size)
{
    QByteArray data(static_cast<qsizetype>(size), Qt::Uninitialized);
    qint64 done = 0;
    while (done < size) {
        const ssize_t n = ::pread(fd, data.data() + done, static_cast<size_t>(size - done), offset + done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += n;
    }
    data.truncate(static_cast<qsizetype>(done));
    return data;
}

} // namespace

void FileFollower::warnLongLine(const QString &path)
{
    m_warnings << QStringLiteral("%1: skipped a line longer than %2 bytes").arg(path).arg(kMaximumLineBytes);
}

void FileFollower::seekToTail(int lines)
{
    for (auto it = m_files.begin(); it != m_files.end(); ++it) {
        State &state = it.value();
        state = State{};
        const int fd = lines < 0 ? -1 : openFollowed(it.key());
        if (fd < 0)
            continue;
        const qint64 size = fileSize(fd);
        if (lines == 0 || size <= 0) {
            state.offset = std::max<qint64>(size, 0);
            ::close(fd);
            continue;
        }
        // The start of the last `lines` lines (a trailing newline does not start a line).
        const qint64 start = std::max<qint64>(0, size - kTailWindow);
        const QByteArray data = readAt(fd, start, size - start);
        ::close(fd);
        qsizetype position = data.size();
        if (position > 0 && data.at(position - 1) == '\n')
            --position;
        int found = 0;
        qsizetype firstLineStart = -1; // just after the earliest newline seen
        while (found < lines && position > 0) {
            position = data.lastIndexOf('\n', position - 1);
            if (position < 0)
                break;
            ++found;
            firstLineStart = position + 1;
        }
        if (found == lines && position >= 0)
            state.offset = start + position + 1;
        else if (start == 0)
            state.offset = 0; // the whole file holds fewer lines
        else if (firstLineStart >= 0)
            state.offset = start + firstLineStart; // the window began inside a line: skip it
        else
            state = State{start, true}; // no line starts in the window: skip to the next newline
    }
}

QList<FileFollower::Line> FileFollower::poll(qint64 maximumBytes)
{
    QList<Line> lines;
    m_more = false;
    for (auto it = m_files.begin(); it != m_files.end(); ++it) {
        State &state = it.value();
        const int fd = openFollowed(it.key());
        if (fd < 0)
            continue;
        const qint64 size = fileSize(fd);
        if (size < state.offset)
            state = State{}; // truncated or replaced: start over
        const qint64 wanted = std::min(size - state.offset, maximumBytes);
        const QByteArray data = wanted > 0 ? readAt(fd, state.offset, wanted) : QByteArray();
        ::close(fd);
        if (data.isEmpty())
            continue;
        if (data.size() == maximumBytes && state.offset + data.size() < size)
            m_more = true;
        qsizetype position = 0;
        if (state.skipping) {
            const qsizetype newline = data.indexOf('\n');
            if (newline < 0) {
                state.offset += data.size();
                continue;
            }
            state.skipping = false;
            position = newline + 1;
        }
        for (qsizetype newline = data.indexOf('\n', position); newline >= 0; newline = data.indexOf('\n', position)) {
            if (newline - position > kMaximumLineBytes)
                warnLongLine(it.key()); // complete but too long: dropped whole
            else
                lines.append({it.key(), QString::fromUtf8(data.constData() + position, newline - position)});
            position = newline + 1;
        }
        state.offset += position;
        if (data.size() - position > kMaximumLineBytes) { // an unfinished line already too long
            warnLongLine(it.key());
            state.skipping = true;
            state.offset += data.size() - position;
        }
    }
    return lines;
}

} // namespace accel::launcher
