#include "core/bigmodel/mappedfile.h"

#include "core/common/fileutil.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace accel::bigmodel {

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string &path)
{
    auto opened = fileutil::openRegularFile(path); // never blocks on a FIFO
    if (!opened)
        return tl::unexpected(opened.error());
    const int fd = *opened;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int saved = errno;
        ::close(fd);
        return makeError(ErrorCode::Io, std::string("cannot stat: ") + std::strerror(saved), path);
    }
    std::shared_ptr<MappedFile> file(new MappedFile());
    file->m_path = path;
    file->m_size = static_cast<uint64_t>(st.st_size);
    if (file->m_size > 0) {
        void *address = ::mmap(nullptr, file->m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (address == MAP_FAILED) {
            const int saved = errno;
            ::close(fd);
            return makeError(ErrorCode::Io, std::string("cannot map: ") + std::strerror(saved), path);
        }
        file->m_data = static_cast<const std::byte *>(address);
    }
    ::close(fd);
    return std::shared_ptr<const MappedFile>(std::move(file));
}

MappedFile::~MappedFile()
{
    if (m_data)
        ::munmap(const_cast<std::byte *>(m_data), m_size);
}

void MappedFile::adviseSequential() const
{
    if (m_data) {
        ::madvise(const_cast<std::byte *>(m_data), m_size, MADV_SEQUENTIAL);
        ::madvise(const_cast<std::byte *>(m_data), m_size, MADV_WILLNEED);
    }
}

} // namespace accel::bigmodel
