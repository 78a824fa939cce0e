// The rendezvous flags of `accel launch` as torchrun reads them: --rdzv_backend (static or c10d),
// --rdzv_endpoint HOST[:PORT] and --rdzv_conf KEY=VALUE,... Every rdzv_conf key torchrun documents
// is acted on, noted as meaningless here, or refused by name (docs/launch.md "Rendezvous").
#pragma once

#include "core/common/result.h"
#include "launcher/launchsettings.h"

#include <optional>
#include <string>

namespace accel::launcher {

struct RendezvousRequest {
    std::optional<std::string> backend;  // --rdzv_backend, else the config's rdzv_backend
    bool backendFromConfig = false;      // the value came from the config file (accelerate launch ignores it)
    std::optional<std::string> conf;     // --rdzv_conf
    std::optional<std::string> endpoint; // --rdzv_endpoint
    bool machineRankGiven = false;       // --machine_rank or the config's machine_rank
};

// Sets settings.rdzvBackend and settings.rendezvous (after num_machines, main_process_ip and
// main_process_port are known); adds notes; refuses what cannot be honoured, naming the key.
Result<void> decideRendezvous(LaunchSettings &settings, const RendezvousRequest &request);

} // namespace accel::launcher
