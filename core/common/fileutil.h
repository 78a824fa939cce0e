// File helpers shared by every library: whole-file reads and atomic writes (temporary file in
// the same folder, fsync, rename), so that a crash never leaves a half-written file behind.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>

namespace accel::fileutil {

// The largest file readFile() reads unless told otherwise: no whole-file input of the project
// comes near it, and a bigger one would take that much memory before it could be refused.
constexpr uint64_t kDefaultMaxFileBytes = uint64_t(1) << 30;

// Opens `path` for reading without ever blocking (O_NONBLOCK, then cleared) and returns the
// descriptor only when it is a regular file: a FIFO, socket, device or folder in place of an
// input file is an InvalidInput error naming what it is. The caller closes the descriptor.
Result<int> openRegularFile(const std::string &path);

// Reads a whole regular file (openRegularFile) of at most `maxBytes` bytes; a bigger file is an
// InvalidInput error naming its size and the limit, and nothing more than the limit is read.
Result<std::string> readFile(const std::string &path, uint64_t maxBytes = kDefaultMaxFileBytes);

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
