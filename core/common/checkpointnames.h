// Accelerate's automatic checkpoint folders, "checkpoint_<n>" under <project>/checkpoints: the one
// place their names are read. A number too large for the next save's name (the iteration counter
// is an int) is an error naming the folder, never an exception or a wrapped negative number.
#pragma once

#include "core/common/result.h"

#include <optional>
#include <string>
#include <vector>

namespace accel::checkpointnames {

// The largest n accepted: checkpoint_<n + 1> must still be a valid next name.
constexpr int kMaxCheckpointNumber = 2147483646;

// n for a folder name "checkpoint_<n>" (digits only); nullopt for any other name; InvalidInput
// when n is beyond kMaxCheckpointNumber.
Result<std::optional<int>> checkpointNumber(const std::string &folderName);

struct NumberedFolder {
    int number = 0;
    std::string path;
};

// The checkpoint_<n> sub-folders of `folder`, by number ascending (none when it does not exist).
// An out-of-range number is an error naming that folder.
Result<std::vector<NumberedFolder>> numberedCheckpoints(const std::string &folder);

// The highest n under `folder`, -1 when there is none.
Result<int> latestCheckpointNumber(const std::string &folder);

} // namespace accel::checkpointnames
