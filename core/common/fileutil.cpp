#include "core/common/fileutil.h"

#include "core/common/atomicfile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace accel::fileutil {

namespace {

const char *fileKind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a folder";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    return "not a regular file";
}

} // namespace

Result<int> openRegularFile(const std::string &path)
{
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        const int saved = errno;
        const ErrorCode code = saved == ENOENT   ? ErrorCode::NotFound
                               : saved == EISDIR ? ErrorCode::InvalidInput
                                                 : ErrorCode::Io;
        return makeError(code, std::string("cannot open: ") + std::strerror(saved), path);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int saved = errno;
        ::close(fd);
        return makeError(ErrorCode::Io, std::string("cannot stat: ") + std::strerror(saved), path);
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return makeError(ErrorCode::InvalidInput,
                         std::string("is ") + fileKind(st.st_mode) + ", expected a regular file", path);
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0)
        ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

Result<std::string> readFile(const std::string &path, uint64_t maxBytes)
{
    auto opened = openRegularFile(path);
    if (!opened)
        return tl::unexpected(opened.error());
    const int fd = *opened;
    auto tooLarge = [&](const std::string &size) {
        return makeError(ErrorCode::InvalidInput,
                         "file too large: " + size + " bytes (the limit for this file is " + std::to_string(maxBytes) +
                             " bytes)",
                         path);
    };
    struct stat st {};
    if (::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) > maxBytes) {
        ::close(fd);
        return tooLarge(std::to_string(st.st_size));
    }
    std::string content;
    if (st.st_size > 0)
        content.reserve(static_cast<size_t>(st.st_size));
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int saved = errno;
            ::close(fd);
            return makeError(ErrorCode::Io, std::string("read failed: ") + std::strerror(saved), path);
        }
        if (n == 0)
            break;
        // Files whose size is not known in advance (/proc) or that grow while read stop at the limit.
        if (static_cast<uint64_t>(n) > maxBytes - content.size()) {
            ::close(fd);
            return tooLarge("more than " + std::to_string(maxBytes));
        }
        content.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return content;
}

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
    // mkstemp creates 0600; give the file the permissions an ordinary new file would get.
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

Result<void> writeFileAtomic(const std::string &path, const std::string &content)
{
    AtomicFileWriter writer;
    if (auto ok = writer.open(path); !ok)
        return ok;
    if (auto ok = writer.write(content.data(), content.size()); !ok)
        return ok;
    return writer.commit();
}

std::string expandUser(const std::string &path)
{
    if (path.empty() || path[0] != '~')
        return path;
    if (path.size() > 1 && path[1] != '/')
        return path;
    const char *home = std::getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
}

size_t editDistance(const std::string &a, const std::string &b)
{
    std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        previous[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

std::string closestMatch(const std::string &word, const std::initializer_list<const char *> &candidates)
{
    std::vector<std::string> list(candidates.begin(), candidates.end());
    return closestMatchIn(word, list);
}

} // namespace accel::fileutil
