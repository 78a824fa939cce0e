#include "core/bigmodel/atomicfilewriter.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace accel::bigmodel {

AtomicFileWriter::~AtomicFileWriter()
{
    if (m_fd >= 0) {
        ::close(m_fd);
        ::unlink(m_temporary.c_str());
    }
}

Result<void> AtomicFileWriter::open(const std::string &path)
{
    m_path = path;
    std::string pattern = path + ".tmp.XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    m_fd = ::mkstemp(name.data());
    if (m_fd < 0)
        return makeError(ErrorCode::Io, std::string("cannot create a temporary file: ") + std::strerror(errno), path);
    m_temporary = name.data();
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(m_fd, 0666 & ~mask);
    return {};
}

Result<void> AtomicFileWriter::write(const void *data, uint64_t size)
{
    const char *bytes = static_cast<const char *>(data);
    uint64_t written = 0;
    while (written < size) {
        const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - written, 1u << 30));
        const ssize_t n = ::write(m_fd, bytes + written, chunk);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return makeError(ErrorCode::Io, std::string("write failed: ") + std::strerror(errno), m_path);
        }
        written += static_cast<uint64_t>(n);
    }
    return {};
}

Result<void> AtomicFileWriter::commit()
{
    const int fd = m_fd;
    m_fd = -1;
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        ::unlink(m_temporary.c_str());
        return makeError(ErrorCode::Io, std::string("flush failed: ") + std::strerror(errno), m_path);
    }
    if (::rename(m_temporary.c_str(), m_path.c_str()) != 0) {
        const int saved = errno;
        ::unlink(m_temporary.c_str());
        return makeError(ErrorCode::Io, std::string("rename failed: ") + std::strerror(saved), m_path);
    }
    return {};
}

} // namespace accel::bigmodel
