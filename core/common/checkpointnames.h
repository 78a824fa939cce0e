// Accelerate's automatic checkpoint folders, "checkpoint_<n>" under <project>/checkpoints: the one
// place their names are read, and how a save is published and old ones rotated out so that a kill
// at any moment leaves every checkpoint_<n> whole. A number too large for the next save's name
// (the iteration counter is an int) is an error naming the folder, never an exception or a wrapped
// negative number.
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

// Flushes every file and folder under `folder` (and `folder` itself) to the disk (fsync).
Result<void> syncTree(const std::string &folder);
// Publishes a save written to `temporary`: renames it to `target` (an existing `target` is moved
// aside first and removed after) and flushes the parent folder, so `target` is whole or absent.
Result<void> publish(const std::string &temporary, const std::string &target);
// The name a checkpoint folder gets while it is being removed: no longer a checkpoint_<n>.
std::string trashName(const std::string &folderName); // ".deleting-checkpoint_3"
// Removes the oldest checkpoint_<n> under `folder` until `totalLimit` are left (0: keep all):
// each is renamed to its trashName first (atomic), the rename flushed, then removed, so a kill
// during the removal leaves no half-deleted checkpoint_<n>; trash left by an earlier kill goes
// too. Call it after publishing the new checkpoint, never before. Returns how many were removed.
Result<int> rotate(const std::string &folder, int totalLimit);

} // namespace accel::checkpointnames
