// What `accel launch --job` checks of the config file before any rank starts (docs/native-keys.md):
// the config keys no variable carries to the ranks are refused or noted as the table of native
// keys says (core/config/nativekeys.h); a distributed type the runtime cannot run is refused; a
// config whose distributed setup --cpu would drop is refused. The ranks check the variables
// themselves when they start (core/worker/nativesettings.h).
#pragma once

#include "core/common/result.h"
#include "launcher/launchmerge.h"

namespace accel::launcher {

// Appends the notes to settings.notes; an error names the key and what to do.
Result<void> checkNativeJobConfig(const ConfigView &config, LaunchSettings &settings);

} // namespace accel::launcher
