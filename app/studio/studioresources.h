// Registers the studio's compiled-in resources (icons). The resources live in a static library,
// so they must be initialised explicitly before the first QIcon(":/icons/...") is built.
#pragma once

namespace accel::app {

void initStudioResources();

} // namespace accel::app
