// Defaults of torch.distributed's launch that Accelerate takes over, declared once for the config
// writer, the launcher, the runtime, the CLI and the studio. The macros are there for help texts
// that are string literals (ACCEL_STRINGIFY(ACCEL_MAIN_PROCESS_PORT) is "29500").
#pragma once

// MASTER_PORT, Accelerate's main_process_port, when none is given.
#define ACCEL_MAIN_PROCESS_PORT 29500
// torchrun's port of an --rdzv_endpoint given without one.
#define ACCEL_RENDEZVOUS_PORT 29400
#define ACCEL_STRINGIFY_TEXT(x) #x
#define ACCEL_STRINGIFY(x) ACCEL_STRINGIFY_TEXT(x)

namespace accel {

inline constexpr int kDefaultMainProcessPort = ACCEL_MAIN_PROCESS_PORT;
inline constexpr int kDefaultRendezvousPort = ACCEL_RENDEZVOUS_PORT;

} // namespace accel
