// Files of a run directory, private and never through a symlink. Run directories and their
// folders are created 0700 and files 0600 whatever the umask; every path inside a run directory
// is opened one component at a time with O_NOFOLLOW, so a symlink planted in a run directory
// (run.json, events.jsonl, logs -> /etc, ...) makes the operation fail with an error naming the
// path instead of reading or writing where it points. Readers only accept regular files (a FIFO
// would block them) and read at most a given size.
#pragma once

#include "core/common/result.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace accel::rundir {

// Creates `path` (and missing parents) 0700. An existing `path` must be a real directory (not a
// symlink) owned by the caller; it is then made 0700.
Result<void> makePrivateDirectory(const std::string &path);
// Checks that `path` is a real directory, not a symlink.
Result<void> checkRealDirectory(const std::string &path);
// Who wrote the run directory's run.json, proven by the file system: the owner of the folder,
// when run.json is a regular file of the same owner and no one else may write into the folder
// (no group or other write bit). Only that user's processes can be the run's (`accel stop`).
Result<std::uint32_t> runDirectoryOwner(const std::string &runDirectory);

// Refuses a run folder that another user could swap: every existing folder above `path` (up to
// /) must belong to root or the caller, and one that others may write (the other write bit, or the
// group write bit of a group with another member than the folder's owner) must have the sticky bit
// (as /tmp), else its owner or writers could rename the run folder away and put theirs in its
// place, and the run's checkpoints, events and metrics would land there.
Result<void> checkNoOtherUserCanSwap(const std::string &path);
// Holds `runDirectory` by descriptor for the rest of this process (the supervisor, from its
// start): every later open of a file in it by this path is relative to that descriptor, so a
// folder put in its place receives nothing. Idempotent.
Result<void> holdRunDirectory(const std::string &runDirectory);
// Ends holdRunDirectory (the supervisor, when it is destroyed): the path is opened again.
void releaseRunDirectory(const std::string &runDirectory);

enum class OpenFor {
    Read,      // existing regular file
    Append,    // created 0600 when missing; must be a regular file
    CreateOnly // must not exist yet (O_EXCL), created 0600
};
// Opens `relative` ("run.json", "logs/rank0.log") under `runDirectory` without following any
// symlink inside it. Returns a file descriptor (O_CLOEXEC) the caller closes.
Result<int> openRunFile(const std::string &runDirectory, const std::string &relative, OpenFor mode);

// Reads a whole regular file of the run directory, refusing more than maxBytes.
Result<std::string> readRunFile(const std::string &runDirectory, const std::string &relative,
                                std::size_t maxBytes = 64u << 20);
// Appends `line` (a newline is added) in one write to a run file.
Result<void> appendRunLine(const std::string &runDirectory, const std::string &relative, const std::string &line);
// Replaces a file directly in the run directory atomically (temporary file 0600, fsync, rename;
// a symlink in its place is replaced, never followed). On a full disk, an existing file whose own
// blocks hold the new content is overwritten in place instead (so run.json still gets its final
// state); otherwise the old file is left whole.
Result<void> writeRunFile(const std::string &runDirectory, const std::string &name, const std::string &content);
// Whether a regular file `name` lies directly in the run directory (a symlink or anything else
// there is not one); only the folder is opened, never the file, so a file another user wrote there
// (root's `accel stop` in a user's run) counts as well.
Result<bool> runFileExists(const std::string &runDirectory, const std::string &name);
// Writes all of `bytes` to fd; false with errno set on a short or failed write (full disk).
bool writeAll(int fd, const char *bytes, std::size_t size);

} // namespace accel::rundir
