// FileTail: reads what was appended to a file since the last call. A file that shrank
// (truncated) or was replaced by another file (new inode, e.g. log rotation or an atomic
// rewrite) is read again from its start, and the read says so. A file that does not exist yet
// simply yields nothing until it appears.
#pragma once

#include <QByteArray>
#include <QString>

#include <sys/types.h>

namespace accel::monitor {

class FileTail {
public:
    explicit FileTail(QString path);
    ~FileTail();
    FileTail(const FileTail &) = delete;
    FileTail &operator=(const FileTail &) = delete;

    struct Chunk {
        QByteArray bytes;
        QString restartReason; // "truncated" or "replaced" when reading restarted at 0
        bool exists = false;
    };
    // At most `maximumBytes`; call again while bytes come back full to read the rest.
    Chunk readNew(qint64 maximumBytes = 4 << 20);
    // Before the first read: start at `offset` (a position an earlier reader reached, e.g. from an
    // accel.tail stream) instead of 0. A file shorter than that by then reads as "truncated".
    void resumeAt(qint64 offset);

    const QString &path() const { return m_path; }
    qint64 offset() const { return m_offset; }

private:
    void close();

    QString m_path;
    int m_fd = -1;
    dev_t m_device = 0;
    ino_t m_inode = 0;
    qint64 m_offset = 0;
    bool m_resuming = false;
};

} // namespace accel::monitor
