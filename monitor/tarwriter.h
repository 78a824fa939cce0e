// A gzip-compressed POSIX tar (ustar) archive written as a stream: what `tar xzf` unpacks. Used to
// export a run as one self-contained file (monitor/runfolder.h). The archive is written to a
// temporary file and only takes its name in commit(), so a failed export leaves nothing behind.
#pragma once

#include "core/common/result.h"

#include <QSaveFile>
#include <QString>

#include <memory>

namespace accel::monitor {

class TarGzWriter {
public:
    explicit TarGzWriter(const QString &path);
    ~TarGzWriter();

    Result<void> open();
    // A folder entry ("run/logs/").
    Result<void> addDirectory(const QString &name, qint64 modifiedSeconds);
    // A regular file of `size` bytes read from `fd` (exactly size bytes are written: a file that
    // shrank meanwhile is padded with zeros, one that grew is cut at size).
    Result<void> addFile(const QString &name, int fd, qint64 size, qint64 modifiedSeconds, int mode = 0600);
    // The end-of-archive blocks, the gzip trailer, and the rename into place.
    Result<void> commit();

private:
    struct Stream;
    Result<void> writeHeader(const QString &name, char type, qint64 size, qint64 modifiedSeconds, int mode);
    Result<void> write(const char *data, qint64 size, bool finish = false);

    QString m_path;
    QSaveFile m_file;
    std::unique_ptr<Stream> m_stream;
    qint64 m_written = 0; // uncompressed tar bytes
};

} // namespace accel::monitor
