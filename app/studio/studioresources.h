// Registers the studio's compiled-in resources (icons). The resources live in a static library,
// so they must be initialised explicitly before the first QIcon(":/icons/...") is built. Also
// finds the project's resource files on disk (demo job, Python tracker).
#pragma once

#include <QString>

namespace accel::app {

void initStudioResources();

// A file of the project's resources/ folder (e.g. "jobs/demo-gpt.yaml"): installed beside the
// program (../share/accel-studio/), in a build tree (../resources/), else in the source tree this
// studio was built from. Canonical path, or empty when none exists.
QString findResourceFile(const QString &relative);

} // namespace accel::app
