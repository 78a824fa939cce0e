// Bytes a rank holds for training state: what a strategy measures and what ShardingPlan::predictMemory
// predicts (no libtorch).
#pragma once

#include <cstdint>

namespace accel::runtime {

// Distinct storages, each counted once: parameters (the model's and the optimizer's own, e.g.
// ZeRO shards), their gradients, and the optimizer's state (Adam moments, SGD momentum).
struct TrainingMemory {
    int64_t parameters = 0;
    int64_t gradients = 0;
    int64_t optimizerState = 0;
    int64_t total() const { return parameters + gradients + optimizerState; }
};

} // namespace accel::runtime
