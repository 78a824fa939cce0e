#include "monitor/tarwriter.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <zlib.h>

namespace accel::monitor {

namespace {

constexpr int kBlock = 512;
constexpr int kChunk = 64 * 1024;

void putOctal(char *field, int width, qint64 value)
{
    // width - 1 octal digits and a NUL, as ustar wants.
    std::snprintf(field, static_cast<size_t>(width), "%0*llo", width - 1, static_cast<unsigned long long>(value));
}

} // namespace

struct TarGzWriter::Stream {
    z_stream z{};
    bool started = false;
    ~Stream()
    {
        if (started)
            deflateEnd(&z);
    }
};

TarGzWriter::TarGzWriter(const QString &path) : m_path(path), m_file(path), m_stream(std::make_unique<Stream>()) {}

TarGzWriter::~TarGzWriter() = default;

Result<void> TarGzWriter::open()
{
    if (!m_file.open(QIODevice::WriteOnly))
        return makeError(ErrorCode::Io, QStringLiteral("cannot write: %1").arg(m_file.errorString()).toStdString(),
                         m_path.toStdString());
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
    if (deflateInit2(&m_stream->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return makeError(ErrorCode::Internal, "zlib could not start", m_path.toStdString());
    m_stream->started = true;
    return {};
}

Result<void> TarGzWriter::write(const char *data, qint64 size, bool finish)
{
    char out[kChunk];
    z_stream &z = m_stream->z;
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data));
    z.avail_in = static_cast<uInt>(size);
    int status = Z_OK;
    do {
        z.next_out = reinterpret_cast<Bytef *>(out);
        z.avail_out = sizeof out;
        status = deflate(&z, finish ? Z_FINISH : Z_NO_FLUSH);
        if (status == Z_STREAM_ERROR)
            return makeError(ErrorCode::Internal, "zlib failed", m_path.toStdString());
        const qint64 produced = qint64(sizeof out) - z.avail_out;
        if (produced > 0 && m_file.write(out, produced) != produced)
            return makeError(ErrorCode::Io, QStringLiteral("cannot write: %1").arg(m_file.errorString()).toStdString(),
                             m_path.toStdString());
    } while (z.avail_out == 0 || (finish && status != Z_STREAM_END));
    m_written += size;
    return {};
}

Result<void> TarGzWriter::writeHeader(const QString &name, char type, qint64 size, qint64 modifiedSeconds, int mode)
{
    const QByteArray path = name.toUtf8();
    char header[kBlock] = {};
    // Names up to 100 bytes fit the name field; longer ones are split at a '/' into prefix (155) and name.
    QByteArray prefix, base = path;
    if (path.size() > 100) {
        const qsizetype split = path.lastIndexOf('/', std::min<qsizetype>(path.size() - 2, 155));
        if (split <= 0 || path.size() - split - 1 > 100)
            return makeError(
                ErrorCode::Unsupported,
                QStringLiteral("path longer than a tar header holds (255 bytes): %1").arg(name).toStdString(),
                m_path.toStdString());
        prefix = path.left(split);
        base = path.mid(split + 1);
    }
    std::memcpy(header, base.constData(), size_t(base.size()));
    putOctal(header + 100, 8, mode);
    putOctal(header + 108, 8, 0); // uid, gid: the archive is for another machine
    putOctal(header + 116, 8, 0);
    putOctal(header + 124, 12, size);
    putOctal(header + 136, 12, modifiedSeconds);
    std::memset(header + 148, ' ', 8); // the checksum field counts as spaces
    header[156] = type;
    std::memcpy(header + 257, "ustar", 6);
    std::memcpy(header + 263, "00", 2);
    std::memcpy(header + 345, prefix.constData(), size_t(prefix.size()));
    unsigned sum = 0;
    for (unsigned char c : header)
        sum += c;
    std::snprintf(header + 148, 8, "%06o", sum);
    header[155] = ' ';
    return write(header, kBlock);
}

Result<void> TarGzWriter::addDirectory(const QString &name, qint64 modifiedSeconds)
{
    return writeHeader(name.endsWith(QLatin1Char('/')) ? name : name + QLatin1Char('/'), '5', 0, modifiedSeconds, 0700);
}

Result<void> TarGzWriter::addFile(const QString &name, int fd, qint64 size, qint64 modifiedSeconds, int mode)
{
    if (auto header = writeHeader(name, '0', size, modifiedSeconds, mode); !header)
        return header;
    char buffer[kChunk];
    qint64 left = size;
    while (left > 0) {
        const ssize_t got = ::read(fd, buffer, size_t(std::min<qint64>(left, kChunk)));
        if (got < 0)
            return makeError(ErrorCode::Io, QStringLiteral("cannot read %1").arg(name).toStdString(),
                             m_path.toStdString());
        if (got == 0) { // the file shrank: keep the header's size
            std::memset(buffer, 0, sizeof buffer);
            while (left > 0) {
                const qint64 n = std::min<qint64>(left, kChunk);
                if (auto written = write(buffer, n); !written)
                    return written;
                left -= n;
            }
            break;
        }
        if (auto written = write(buffer, got); !written)
            return written;
        left -= got;
    }
    const qint64 padding = (kBlock - size % kBlock) % kBlock;
    const char zeros[kBlock] = {};
    return write(zeros, padding);
}

Result<void> TarGzWriter::commit()
{
    const char zeros[2 * kBlock] = {};
    if (auto end = write(zeros, sizeof zeros, true); !end)
        return end;
    if (!m_file.commit())
        return makeError(ErrorCode::Io, QStringLiteral("cannot write: %1").arg(m_file.errorString()).toStdString(),
                         m_path.toStdString());
    return {};
}

} // namespace accel::monitor
