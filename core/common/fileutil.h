// File helpers shared by every library: whole-file reads and atomic writes (temporary file in
// the same folder, fsync, rename), so that a crash never leaves a half-written file behind.
#pragma once

#include "core/common/result.h"

#include <string>

namespace accel::fileutil {

Result<std::string> readFile(const std::string &path);

// Writes `content` to `path` atomically. The folder must exist.
Result<void> writeFileAtomic(const std::string &path, const std::string &content);

// Expands a leading "~" with $HOME.
std::string expandUser(const std::string &path);

// Levenshtein distance, for "did you mean" suggestions.
size_t editDistance(const std::string &a, const std::string &b);

// The candidate closest to `word`, or "" when none is reasonably close.
std::string closestMatch(const std::string &word, const std::initializer_list<const char *> &candidates);
template <typename Container>
std::string closestMatchIn(const std::string &word, const Container &candidates)
{
    std::string best;
    size_t bestDistance = word.size() / 2 + 2;
    for (const auto &candidate : candidates) {
        const size_t d = editDistance(word, candidate);
        if (d < bestDistance) {
            bestDistance = d;
            best = candidate;
        }
    }
    return best;
}

} // namespace accel::fileutil
