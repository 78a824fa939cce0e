// The small JSON files of a checkpoint folder that resume reads: scheduler_<i>.json (the scheduler's
// last step) and dl_state_dict.json (each data loader's epoch and batches done). A checkpoint may
// come from anywhere, so they are read through the input guard and every number is checked: a
// negative or wrapped step used to be taken ("last_step": -5 resumed from step -2).
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace accel::checkpointstate {

// The largest of these files read: the writer puts a few dozen bytes in each.
inline constexpr uint64_t kMaxStateFileBytes = uint64_t(1) << 20;

// "last_step" of a scheduler file: a whole number from 0 to 2^63-1. Errors name the file.
Result<int64_t> readSchedulerLastStep(const std::string &path);

struct LoaderState {
    int64_t epoch = 0;
    int64_t batchesDone = 0;
};

// The entries of dl_state_dict.json ([{"epoch": e, "batches_done": b}, ...], whole numbers >= 0).
Result<std::vector<LoaderState>> readLoaderStates(const std::string &path);

} // namespace accel::checkpointstate
