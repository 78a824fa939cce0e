// The run's secret: 128 random bits (32 hex digits) the supervisor gives every rank in its
// environment and nowhere else (run.json does not record it). The supervisor's reaper finds a
// run's escaped processes by it (launcher/groupreaper.h), and the ranks of a run on one machine
// sign what they put in the rendezvous store with it (core/runtime/signedstore.h), so that another
// local user who connects to the store cannot inject values.
#pragma once

namespace accel {

inline constexpr const char *kRunTokenVariable = "ACCEL_RUN_TOKEN";

} // namespace accel
