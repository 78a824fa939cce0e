#include "monitor/filetail.h"

#include <QFile>

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace accel::monitor {

FileTail::FileTail(QString path) : m_path(std::move(path)) {}

FileTail::~FileTail()
{
    close();
}

void FileTail::resumeAt(qint64 offset)
{
    if (m_fd >= 0 || offset < 0)
        return;
    m_offset = offset;
    m_resuming = true;
}

void FileTail::close()
{
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
}

FileTail::Chunk FileTail::readNew(qint64 maximumBytes)
{
    Chunk chunk;
    const QByteArray nativePath = QFile::encodeName(m_path);
    struct stat onDisk {};
    // lstat/O_NOFOLLOW: a symlink planted in a run directory is never followed, and only regular
    // files are read (a FIFO would block the reader).
    if (::lstat(nativePath.constData(), &onDisk) != 0 || !S_ISREG(onDisk.st_mode)) {
        // Gone (or not there yet): keep what we have; a new file under this name restarts.
        return chunk;
    }
    chunk.exists = true;
    if (m_fd >= 0 && (onDisk.st_ino != m_inode || onDisk.st_dev != m_device)) {
        close();
        chunk.restartReason = QStringLiteral("replaced");
        m_offset = 0;
    }
    if (m_fd < 0) {
        m_fd = ::open(nativePath.constData(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (m_fd < 0)
            return chunk;
        struct stat opened {};
        if (::fstat(m_fd, &opened) != 0 || !S_ISREG(opened.st_mode)) {
            close();
            return chunk;
        }
        m_device = opened.st_dev;
        m_inode = opened.st_ino;
        if (m_resuming) {
            m_resuming = false; // keep m_offset: the size check below tells a shorter file
        } else {
            if (m_offset != 0 && chunk.restartReason.isEmpty())
                chunk.restartReason = QStringLiteral("replaced");
            m_offset = 0;
        }
    }
    struct stat current {};
    if (::fstat(m_fd, &current) != 0)
        return chunk;
    const qint64 size = current.st_size;
    if (size < m_offset) {
        chunk.restartReason = QStringLiteral("truncated");
        m_offset = 0;
    }
    const qint64 wanted = std::min(size - m_offset, maximumBytes);
    if (wanted <= 0)
        return chunk;
    chunk.bytes.resize(static_cast<qsizetype>(wanted));
    qint64 done = 0;
    while (done < wanted) {
        const ssize_t n = ::pread(m_fd, chunk.bytes.data() + done, static_cast<size_t>(wanted - done), m_offset + done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += n;
    }
    chunk.bytes.truncate(static_cast<qsizetype>(done));
    m_offset += done;
    return chunk;
}

} // namespace accel::monitor
