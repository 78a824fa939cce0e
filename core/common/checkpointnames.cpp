#include "core/common/checkpointnames.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace accel::checkpointnames {

namespace fs = std::filesystem;

Result<std::optional<int>> checkpointNumber(const std::string &folderName)
{
    static const std::string prefix = "checkpoint_";
    if (folderName.size() <= prefix.size() || folderName.compare(0, prefix.size(), prefix) != 0)
        return std::optional<int>();
    uint64_t value = 0;
    bool tooLarge = false;
    for (size_t i = prefix.size(); i < folderName.size(); ++i) {
        const char c = folderName[i];
        if (c < '0' || c > '9')
            return std::optional<int>();
        if (!tooLarge) {
            value = value * 10 + static_cast<uint64_t>(c - '0');
            tooLarge = value > static_cast<uint64_t>(kMaxCheckpointNumber);
        }
    }
    if (tooLarge)
        return makeError(ErrorCode::InvalidInput,
                         "checkpoint number beyond " + std::to_string(kMaxCheckpointNumber) +
                             " (the next checkpoint could not be named); rename or remove the folder",
                         folderName);
    return std::optional<int>(static_cast<int>(value));
}

Result<std::vector<NumberedFolder>> numberedCheckpoints(const std::string &folder)
{
    std::vector<NumberedFolder> found;
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        return found;
    for (const auto &entry : fs::directory_iterator(folder, ec)) {
        if (!entry.is_directory(ec))
            continue;
        auto number = checkpointNumber(entry.path().filename().string());
        if (!number)
            return makeError(number.error().code, number.error().message, entry.path().string());
        if (*number)
            found.push_back({**number, entry.path().string()});
    }
    std::sort(found.begin(), found.end(),
              [](const NumberedFolder &a, const NumberedFolder &b) { return a.number < b.number; });
    return found;
}

Result<int> latestCheckpointNumber(const std::string &folder)
{
    auto found = numberedCheckpoints(folder);
    if (!found)
        return tl::unexpected(found.error());
    return found->empty() ? -1 : found->back().number;
}

namespace {

constexpr const char *kTrashPrefix = ".deleting-";

Result<void> syncPath(const std::string &path, bool directory)
{
    const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return makeError(ErrorCode::Io, std::string("cannot open to flush: ") + std::strerror(errno), path);
    const bool ok = ::fsync(fd) == 0;
    const int error = errno;
    ::close(fd);
    if (!ok)
        return makeError(ErrorCode::Io, std::string("flush failed: ") + std::strerror(error), path);
    return {};
}

std::string parentOf(const std::string &path)
{
    const std::string parent = fs::path(path).parent_path().string();
    return parent.empty() ? std::string(".") : parent;
}

} // namespace

Result<void> syncTree(const std::string &folder)
{
    std::error_code ec;
    for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::file_status status = it->symlink_status(ec);
        if (ec)
            break;
        if (fs::is_regular_file(status) || fs::is_directory(status)) {
            if (auto ok = syncPath(it->path().string(), fs::is_directory(status)); !ok)
                return ok;
        }
    }
    if (ec)
        return makeError(ErrorCode::Io, "cannot list to flush: " + ec.message(), folder);
    return syncPath(folder, true);
}

Result<void> publish(const std::string &temporary, const std::string &target)
{
    std::error_code ec;
    const std::string previous = target + ".old";
    fs::remove_all(previous, ec);
    if (fs::exists(target, ec))
        fs::rename(target, previous, ec);
    ec.clear();
    fs::rename(temporary, target, ec);
    if (ec)
        return makeError(ErrorCode::Io, "cannot rename " + temporary + " to " + target + ": " + ec.message());
    if (auto ok = syncPath(parentOf(target), true); !ok)
        return ok;
    fs::remove_all(previous, ec);
    return {};
}

std::string trashName(const std::string &folderName)
{
    return kTrashPrefix + folderName;
}

Result<int> rotate(const std::string &folder, int totalLimit)
{
    std::error_code ec;
    // Trash an earlier kill left behind.
    for (const auto &entry : fs::directory_iterator(folder, ec)) {
        if (entry.path().filename().string().rfind(kTrashPrefix, 0) == 0)
            fs::remove_all(entry.path(), ec);
    }
    if (totalLimit <= 0)
        return 0;
    auto existing = numberedCheckpoints(folder);
    if (!existing)
        return tl::unexpected(existing.error());
    int removed = 0;
    for (size_t i = 0; i + size_t(totalLimit) < existing->size(); ++i) {
        const fs::path oldest = (*existing)[i].path;
        const fs::path trash = oldest.parent_path() / trashName(oldest.filename().string());
        fs::remove_all(trash, ec);
        fs::rename(oldest, trash, ec);
        if (ec)
            return makeError(ErrorCode::Io, "cannot rename " + oldest.string() + " to " + trash.string() +
                                                " to remove it: " + ec.message());
        if (auto ok = syncPath(folder, true); !ok)
            return tl::unexpected(ok.error());
        fs::remove_all(trash, ec);
        if (ec)
            return makeError(ErrorCode::Io, "cannot remove " + trash.string() + ": " + ec.message());
        ++removed;
    }
    return removed;
}

} // namespace accel::checkpointnames
