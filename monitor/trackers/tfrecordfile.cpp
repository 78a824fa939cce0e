#include "monitor/trackers/tfrecordfile.h"

#include "core/common/fileutil.h"
#include "monitor/trackers/crc32c.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>

namespace accel::trackers {

namespace {

template <typename T>
T littleEndian(const char *bytes)
{
    T value = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
        value |= T(static_cast<unsigned char>(bytes[i])) << (8 * i);
    return value;
}

bool readAt(int fd, char *buffer, size_t size, qint64 offset)
{
    size_t done = 0;
    while (done < size) {
        const ssize_t got = ::pread(fd, buffer + done, size - done, static_cast<off_t>(offset + qint64(done)));
        if (got <= 0)
            return false;
        done += static_cast<size_t>(got);
    }
    return true;
}

} // namespace

TfRecordFile::TfRecordFile(QString path) : m_path(std::move(path)) {}

TfRecordFile::Read TfRecordFile::readAvailable(qint64 budgetBytes)
{
    Read read;
    auto fd = fileutil::openRegularFile(m_path.toStdString());
    if (!fd) {
        read.problem = QString::fromStdString(fd.error().message);
        return read;
    }
    struct stat info {};
    ::fstat(*fd, &info);
    const qint64 size = info.st_size;
    if (size < m_offset) { // rewritten from the start: read it again
        read.problem = QStringLiteral("the file became shorter (%1 bytes, %2 read): read again from its start")
                           .arg(size)
                           .arg(m_offset);
        m_offset = 0;
    }
    qint64 used = 0;
    char header[12];
    while (used < budgetBytes && m_offset + 12 <= size) {
        if (!readAt(*fd, header, sizeof header, m_offset))
            break;
        const quint64 length = littleEndian<quint64>(header);
        if (maskedCrc32c(header, 8) != littleEndian<quint32>(header + 8)) {
            read.problem =
                QStringLiteral("bad length checksum in the record at byte %1: reading stops there").arg(m_offset);
            break;
        }
        if (length > quint64(size))
            break; // cannot be all there yet
        const qint64 total = 12 + qint64(length) + 4;
        if (m_offset + total > size)
            break; // the writer is still busy with it
        if (length > kMaximumRecordBytes) {
            m_offset += total; // too big to be a scalar's: skipped unread
            continue;
        }
        QByteArray data(qsizetype(length) + 4, Qt::Uninitialized);
        if (!readAt(*fd, data.data(), static_cast<size_t>(data.size()), m_offset + 12))
            break;
        if (maskedCrc32c(data.constData(), length) != littleEndian<quint32>(data.constData() + length)) {
            if (m_offset + total == size)
                break; // the last record: may still be written over (a network file system); wait
            read.problem = QStringLiteral("bad data checksum in the record at byte %1: skipped").arg(m_offset);
            m_offset += total;
            continue;
        }
        data.truncate(qsizetype(length));
        read.records.push_back(std::move(data));
        m_offset += total;
        used += total;
    }
    ::close(*fd);
    return read;
}

} // namespace accel::trackers
