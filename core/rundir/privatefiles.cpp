#include "core/rundir/privatefiles.h"
#include "core/rundir/runlayout.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <grp.h>
#include <linux/falloc.h>
#include <map>
#include <mutex>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace accel::rundir {

namespace {

std::string systemError(const std::string &what)
{
    return what + ": " + std::strerror(errno);
}

// Components of a relative path; empty when it is absolute or has "", "." or ".." parts.
std::vector<std::string> components(const std::string &relative)
{
    std::vector<std::string> parts;
    if (relative.empty() || relative.front() == '/')
        return {};
    size_t start = 0;
    while (start <= relative.size()) {
        const size_t slash = relative.find('/', start);
        const std::string part = relative.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        if (part.empty() || part == "." || part == "..")
            return {};
        parts.push_back(part);
        if (slash == std::string::npos)
            break;
        start = slash + 1;
    }
    return parts;
}

class Fd {
public:
    explicit Fd(int fd = -1) : m_fd(fd) {}
    ~Fd()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    int get() const { return m_fd; }
    int release() { return std::exchange(m_fd, -1); }
    void reset(int fd)
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = fd;
    }

private:
    int m_fd;
};

// Run directories held by descriptor (holdRunDirectory), by path without trailing slashes.
std::mutex &heldMutex()
{
    static std::mutex mutex;
    return mutex;
}

std::map<std::string, int> &heldDirectories()
{
    static std::map<std::string, int> held;
    return held;
}

std::string withoutTrailingSlashes(std::string path)
{
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    return path;
}

// The run directory: a duplicate of the held descriptor when this process holds it, else opened
// now (never through a symlink).
int openRunDirectory(const std::string &runDirectory)
{
    {
        std::lock_guard<std::mutex> lock(heldMutex());
        const auto held = heldDirectories().find(withoutTrailingSlashes(runDirectory));
        if (held != heldDirectories().end())
            return ::fcntl(held->second, F_DUPFD_CLOEXEC, 0);
    }
    return ::open(runDirectory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

std::string octalMode(mode_t mode)
{
    char text[8];
    std::snprintf(text, sizeof(text), "%04o", unsigned(mode & 07777));
    return text;
}

// True when `user` is the only member of group `gid`: the only account whose primary group it is,
// and no other listed member (a user's private group, as usermod's USERGROUPS_ENAB makes them).
bool groupIsOnly(gid_t gid, uid_t user)
{
    const passwd *owner = ::getpwuid(user);
    const group *entry = ::getgrgid(gid);
    if (!owner || !entry)
        return false;
    const std::string name = owner->pw_name;
    for (char **member = entry->gr_mem; member && *member; ++member) {
        if (name != *member)
            return false;
    }
    bool primary = false;
    ::setpwent();
    while (const passwd *account = ::getpwent()) {
        if (account->pw_gid != gid)
            continue;
        if (account->pw_uid != user) {
            ::endpwent();
            return false;
        }
        primary = true;
    }
    ::endpwent();
    return primary || (entry->gr_mem && entry->gr_mem[0]);
}

std::string symlinkHint(int error)
{
    return error == ELOOP || error == ENOTDIR ? " (a symlink or not a folder: run directories never follow symlinks)"
                                              : std::string();
}

// What writeRunFile reserves beyond run.json's end for its next, longer version.
constexpr std::size_t kReservedBytes = 16u << 10;

// Overwrites an existing regular file in place, only when the blocks it already has hold the
// new content: then no block is allocated and the write cannot stop half-way for lack of space.
bool rewriteInPlace(int directory, const std::string &name, const std::string &content)
{
    Fd fd(::openat(directory, name.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode))
        return false;
    if (static_cast<unsigned long long>(content.size()) > static_cast<unsigned long long>(info.st_blocks) * 512)
        return false;
    size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::pwrite(fd.get(), content.data() + done, content.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += static_cast<size_t>(n);
    }
    return ::ftruncate(fd.get(), static_cast<off_t>(content.size())) == 0 && ::fsync(fd.get()) == 0;
}

} // namespace

Result<void> checkRealDirectory(const std::string &path)
{
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0)
        return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io, systemError("cannot inspect"), path);
    if (S_ISLNK(info.st_mode))
        return makeError(ErrorCode::InvalidInput, "is a symlink; a run directory must be a real folder", path);
    if (!S_ISDIR(info.st_mode))
        return makeError(ErrorCode::InvalidInput, "not a folder", path);
    return {};
}

Result<std::uint32_t> runDirectoryOwner(const std::string &runDirectory)
{
    Fd directory(openRunDirectory(runDirectory));
    if (directory.get() < 0)
        return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                         systemError("cannot open the run directory") + symlinkHint(errno), runDirectory);
    struct stat folder {};
    struct stat manifest {};
    if (::fstat(directory.get(), &folder) != 0)
        return makeError(ErrorCode::Io, systemError("cannot inspect"), runDirectory);
    if ((folder.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof(mode), "%04o", unsigned(folder.st_mode & 07777));
        return makeError(ErrorCode::InvalidInput,
                         std::string("other users may write into it (mode ") + mode +
                             "), so its run.json proves nothing",
                         runDirectory);
    }
    if (::fstatat(directory.get(), file::Manifest, &manifest, AT_SYMLINK_NOFOLLOW) != 0)
        return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io, systemError("cannot inspect run.json"),
                         runDirectory);
    if (!S_ISREG(manifest.st_mode) || manifest.st_uid != folder.st_uid)
        return makeError(ErrorCode::InvalidInput,
                         "run.json is not a regular file of the folder's owner (uid " + std::to_string(folder.st_uid) +
                             ")",
                         runDirectory);
    return static_cast<std::uint32_t>(folder.st_uid);
}

Result<void> checkNoOtherUserCanSwap(const std::string &path)
{
    if (path.empty() || path.front() != '/')
        return makeError(ErrorCode::InvalidInput, "not an absolute path", path);
    std::string folder = withoutTrailingSlashes(path);
    const uid_t me = ::geteuid();
    while (folder != "/") {
        const size_t slash = folder.find_last_of('/');
        folder = slash == 0 ? std::string("/") : folder.substr(0, slash);
        struct stat info {};
        if (::stat(folder.c_str(), &info) != 0) {
            if (errno == ENOENT)
                continue; // created by us, 0700, when the run folder is made
            return makeError(ErrorCode::Io, systemError("cannot inspect " + folder), path);
        }
        // Group write is the owner's alone when the group is the owner's private one (umask 002).
        const bool othersMayWrite = (info.st_mode & S_ISVTX) == 0 &&
                                    ((info.st_mode & S_IWOTH) != 0 ||
                                     ((info.st_mode & S_IWGRP) != 0 && !groupIsOnly(info.st_gid, info.st_uid)));
        if (info.st_uid != 0 && info.st_uid != me)
            return makeError(ErrorCode::InvalidInput,
                             folder + " belongs to another user (uid " + std::to_string(info.st_uid) +
                                 "), who could replace the run folder inside it; choose a folder under one of "
                                 "yours or root's",
                             path);
        if (othersMayWrite)
            return makeError(ErrorCode::InvalidInput,
                             folder + " may be written by other users (mode " + octalMode(info.st_mode) +
                                 ", no sticky bit), who could replace the run folder inside it; choose another "
                                 "folder, or chmod +t / chmod go-w it",
                             path);
    }
    return {};
}

Result<void> holdRunDirectory(const std::string &runDirectory)
{
    const std::string key = withoutTrailingSlashes(runDirectory);
    std::lock_guard<std::mutex> lock(heldMutex());
    if (heldDirectories().count(key))
        return {};
    const int fd = ::open(key.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                         systemError("cannot open the run directory") + symlinkHint(errno), runDirectory);
    heldDirectories()[key] = fd;
    return {};
}

void releaseRunDirectory(const std::string &runDirectory)
{
    std::lock_guard<std::mutex> lock(heldMutex());
    const auto held = heldDirectories().find(withoutTrailingSlashes(runDirectory));
    if (held == heldDirectories().end())
        return;
    ::close(held->second);
    heldDirectories().erase(held);
}

Result<void> makePrivateDirectory(const std::string &path)
{
    if (path.empty())
        return makeError(ErrorCode::InvalidInput, "empty folder name");
    const size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
        const std::string parent = path.substr(0, slash);
        struct stat info {};
        if (::stat(parent.c_str(), &info) != 0) {
            if (auto ok = makePrivateDirectory(parent); !ok)
                return ok;
        }
    }
    if (::mkdir(path.c_str(), 0700) == 0)
        return {}; // mkdir applies the umask to 0700: never wider
    if (errno != EEXIST)
        return makeError(ErrorCode::Io, systemError("cannot create folder"), path);
    if (auto ok = checkRealDirectory(path); !ok)
        return ok;
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && info.st_uid != ::geteuid())
        return makeError(ErrorCode::InvalidInput,
                         "belongs to another user (uid " + std::to_string(info.st_uid) + "); choose a folder of yours",
                         path);
    if (::chmod(path.c_str(), 0700) != 0)
        return makeError(ErrorCode::Io, systemError("cannot make private (chmod 0700)"), path);
    return {};
}

Result<int> openRunFile(const std::string &runDirectory, const std::string &relative, OpenFor mode)
{
    const std::string full = runDirectory + "/" + relative;
    const std::vector<std::string> parts = components(relative);
    if (parts.empty())
        return makeError(ErrorCode::InvalidInput, "not a path inside the run directory", full);
    Fd directory(openRunDirectory(runDirectory));
    if (directory.get() < 0)
        return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                         systemError("cannot open the run directory") + symlinkHint(errno), runDirectory);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
        const int next = ::openat(directory.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0)
            return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                             systemError("cannot open folder " + parts[i]) + symlinkHint(errno), full);
        directory.reset(next);
    }
    int flags = O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
    switch (mode) {
    case OpenFor::Read:
        flags |= O_RDONLY | O_NONBLOCK; // a FIFO must not block the open
        break;
    case OpenFor::Append:
        flags |= O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK;
        break;
    case OpenFor::CreateOnly:
        flags |= O_WRONLY | O_CREAT | O_EXCL;
        break;
    }
    Fd fd(::openat(directory.get(), parts.back().c_str(), flags, 0600));
    if (fd.get() < 0)
        return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                         systemError(mode == OpenFor::Read ? "cannot read" : "cannot write") +
                             (errno == ELOOP ? " (a symlink: run directories never follow symlinks)" : ""),
                         full);
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode))
        return makeError(ErrorCode::InvalidInput, "not a regular file", full);
    // Back to blocking I/O for a regular file (O_NONBLOCK only guarded the open).
    const int status = ::fcntl(fd.get(), F_GETFL);
    if (status >= 0)
        ::fcntl(fd.get(), F_SETFL, status & ~O_NONBLOCK);
    return fd.release();
}

Result<std::string> readRunFile(const std::string &runDirectory, const std::string &relative, std::size_t maxBytes)
{
    auto opened = openRunFile(runDirectory, relative, OpenFor::Read);
    if (!opened)
        return tl::unexpected(opened.error());
    Fd fd(*opened);
    std::string content;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return makeError(ErrorCode::Io, systemError("read failed"), runDirectory + "/" + relative);
        if (n == 0)
            break;
        if (content.size() + static_cast<size_t>(n) > maxBytes)
            return makeError(ErrorCode::InvalidInput,
                             "larger than " + std::to_string(maxBytes) + " bytes; not a file accel wrote",
                             runDirectory + "/" + relative);
        content.append(buffer, static_cast<size_t>(n));
    }
    return content;
}

bool writeAll(int fd, const char *bytes, std::size_t size)
{
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::write(fd, bytes + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENOSPC;
            return false;
        }
        done += static_cast<size_t>(n);
    }
    return true;
}

Result<void> appendRunLine(const std::string &runDirectory, const std::string &relative, const std::string &line)
{
    auto opened = openRunFile(runDirectory, relative, OpenFor::Append);
    if (!opened)
        return tl::unexpected(opened.error());
    Fd fd(*opened);
    const std::string text = line + "\n";
    if (!writeAll(fd.get(), text.data(), text.size()))
        return makeError(ErrorCode::Io, systemError("write failed"), runDirectory + "/" + relative);
    return {};
}

Result<bool> runFileExists(const std::string &runDirectory, const std::string &name)
{
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        return makeError(ErrorCode::InvalidInput, "not a file name directly in the run directory", name);
    Fd directory(openRunDirectory(runDirectory));
    if (directory.get() < 0)
        return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                         systemError("cannot open the run directory") + symlinkHint(errno), runDirectory);
    struct stat info {};
    if (::fstatat(directory.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return false;
        return makeError(ErrorCode::Io, systemError("cannot look at"), runDirectory + "/" + name);
    }
    return S_ISREG(info.st_mode);
}

Result<void> writeRunFile(const std::string &runDirectory, const std::string &name, const std::string &content)
{
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        return makeError(ErrorCode::InvalidInput, "not a file name directly in the run directory", name);
    const std::string full = runDirectory + "/" + name;
    Fd directory(openRunDirectory(runDirectory));
    if (directory.get() < 0)
        return makeError(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                         systemError("cannot open the run directory") + symlinkHint(errno), runDirectory);
    // A fresh temporary name (O_EXCL: never an existing file or symlink), then rename over `name`:
    // rename replaces a symlink there instead of writing through it.
    std::string temporary;
    Fd fd;
    for (int attempt = 0; attempt < 100 && fd.get() < 0; ++attempt) {
        temporary = "." + name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(attempt);
        fd.reset(
            ::openat(directory.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (fd.get() < 0 && errno != EEXIST)
            return makeError(ErrorCode::Io, systemError("cannot create a temporary file"), full);
    }
    if (fd.get() < 0)
        return makeError(ErrorCode::Io, "cannot create a temporary file: too many left over", full);
    auto fail = [&](const std::string &what) {
        const std::string message = systemError(what);
        ::unlinkat(directory.get(), temporary.c_str(), 0);
        return makeError(ErrorCode::Io, message, full);
    };
    // run.json: room to grow reserved beyond its end (not part of the file), so that on a disk that
    // fills up later its next version (the final state) still fits in its own blocks (rewriteInPlace).
    if (name == file::Manifest)
        (void)::fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(content.size() + kReservedBytes));
    if (!writeAll(fd.get(), content.data(), content.size())) {
        const int error = errno;
        ::unlinkat(directory.get(), temporary.c_str(), 0);
        // A full disk: the file's own blocks may still hold the new content (run.json's final state).
        if ((error == ENOSPC || error == EDQUOT || error == EFBIG) && rewriteInPlace(directory.get(), name, content))
            return {};
        errno = error;
        return makeError(ErrorCode::Io, systemError("write failed"), full);
    }
    if (::fsync(fd.get()) != 0)
        return fail("flush failed");
    if (::close(fd.release()) != 0)
        return fail("flush failed");
    if (::renameat(directory.get(), temporary.c_str(), directory.get(), name.c_str()) != 0)
        return fail("rename failed");
    return {};
}

} // namespace accel::rundir
