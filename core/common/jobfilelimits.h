// The limits a job file (docs/jobs.md) is read with, by both of its readers (accel-worker's
// core/worker/jobspec and the studio's launcher/jobfile): a job is a few hundred bytes, so at most
// 1 MiB, and its aliases may repeat text no further than the file itself could hold (the readers
// copy and re-emit values per key). An alias bomb of 819 bytes took 2.2 GB before. A key given twice
// in one mapping is an error.
#pragma once

#include "core/common/inputlimits.h"

#include <cstdint>
#include <string>

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

// Why a mapping key of a job file cannot be read, or "". Keys are names: the readers flatten sections
// to dotted paths (model.n_layer), so a key with a dot would stand for a path too
// ("training.max_steps: 5" beside "training: {max_steps: 7}" gave one of them silently), and a
// key of 190 dots came back from the studio's form as sections 190 deep (found by fuzz_jobfile).
inline std::string jobKeyProblem(const std::string &key)
{
    if (key.empty())
        return "an empty key";
    if (key.find('.') != std::string::npos)
        return "the key \"" + key.substr(0, 80) + "\" holds a '.': write nested sections (training: {max_steps: 5})";
    return {};
}

} // namespace accel::jobs
