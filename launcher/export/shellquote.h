// POSIX shell quoting for the exported command lines and scripts, and the reverse: splitting a
// command line (or a script's line with backslash continuations) back into words the way bash
// would, without expanding anything.
#pragma once

#include "core/common/result.h"

#include <string>
#include <vector>

namespace accel::launcher::exporting {

// The word unchanged when it only has safe characters, else in single quotes ('\'' for quotes).
std::string shellQuote(const std::string &word);
// Words quoted and joined with spaces.
std::string shellJoin(const std::vector<std::string> &words);

// Splits shell text into words: quotes removed, backslash-newline joined, "$VAR" kept literally,
// comments (# at a word start) dropped. Unterminated quotes are an InvalidInput error.
Result<std::vector<std::string>> shellSplit(const std::string &text);

} // namespace accel::launcher::exporting
