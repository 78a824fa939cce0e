// The limits a job file (docs/jobs.md) is read with, by both of its readers (accel-worker's
// core/worker/jobspec and the studio's launcher/jobfile): a job is a few hundred bytes, so at most
// 1 MiB, and its aliases may repeat text no further than the file itself could hold (the readers
// copy and re-emit values per key). An alias bomb of 819 bytes took 2.2 GB before. A key given twice
// in one mapping is an error.
#pragma once

#include "core/common/inputlimits.h"

#include <cstdint>

namespace accel::jobs {

inline constexpr uint64_t kMaxJobFileBytes = uint64_t(1) << 20;

inline InputLimits jobFileLimits()
{
    InputLimits limits;
    limits.maxBytes = kMaxJobFileBytes;
    limits.maxTextBytes = kMaxJobFileBytes;
    limits.rejectDuplicateKeys = true; // both readers kept both values of a repeated key
    limits.subject = "a job file";
    return limits;
}

} // namespace accel::jobs
