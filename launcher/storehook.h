// The rendezvous hook of a Python run on one machine (resources/python/accel_store_hook.py): the
// launcher holds MASTER_PORT on 127.0.0.1 from its choice on and hands the listening socket to
// rank 0; this hook, on rank 0's PYTHONPATH as sitecustomize, makes torch's env:// rendezvous host
// its TCPStore on that socket instead of binding the port again (docs/security.md).
#pragma once

#include "core/common/result.h"

#include <QString>

namespace accel::launcher {

// The folder inside the run directory that holds the hook as sitecustomize.py.
inline constexpr const char *kStoreHookFolder = "rendezvous";

// Writes <run>/rendezvous/sitecustomize.py (once; an existing one is kept) and returns the folder
// to append to rank 0's PYTHONPATH.
Result<QString> writeStoreHook(const QString &runDirectory);

} // namespace accel::launcher
