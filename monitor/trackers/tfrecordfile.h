// TfRecordFile: the records appended to a TFRecord file (TensorBoard's event files) since the last
// call, read while the writer is still busy. Each record is framed as
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// A record is handed out only when all its bytes are there and both checksums match: a record the
// writer has not finished (a torn tail) is left for the next call, never handed out in part. A
// record whose data checksum fails while later bytes follow it is damaged: it is skipped and said.
// A length whose checksum fails stops reading at that record (said once) until its bytes change.
#pragma once

#include <QByteArray>
#include <QString>

#include <vector>

namespace accel::trackers {

class TfRecordFile {
public:
    explicit TfRecordFile(QString path);

    struct Read {
        std::vector<QByteArray> records;
        QString problem; // empty, or what was wrong (with the byte offset)
    };
    // Records complete since the last call, reading about `budgetBytes` at most.
    Read readAvailable(qint64 budgetBytes = qint64(4) << 20);

    const QString &path() const { return m_path; }
    qint64 offset() const { return m_offset; }

    // Records longer than this are skipped unread (images, graphs: never a scalar).
    static constexpr quint64 kMaximumRecordBytes = quint64(16) << 20;

private:
    QString m_path;
    qint64 m_offset = 0;
};

} // namespace accel::trackers
