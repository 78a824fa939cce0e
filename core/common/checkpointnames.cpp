#include "core/common/checkpointnames.h"

#include <algorithm>
#include <filesystem>

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

} // namespace accel::checkpointnames
