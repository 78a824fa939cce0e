// Fuzz target: a DeepSpeed config file, as every rank's ShardingPlan and `accel estimate-memory
// --config_file` read it (applyDeepSpeedJsonText). An error names what is wrong; an accepted file
// gives a plan the engine can run: a stage 0..3 and its strategy name, a positive or unset
// accumulation, a finite non-negative clipping.
#include "core/plan/shardingplan.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace accel::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string text(reinterpret_cast<const char *>(data), size);
    ShardingPlan plan;
    plan.source = ShardingSource::DeepSpeed;
    auto applied = applyDeepSpeedJsonText(text, "fuzz/ds_config.json", plan);
    if (!applied) {
        if (applied.error().message.empty() || applied.error().context != "fuzz/ds_config.json")
            std::abort();
        return 0;
    }
    if (plan.stage < 0 || plan.stage > 3 || plan.strategy != "ZeRO-" + std::to_string(plan.stage))
        std::abort();
    if (plan.gradientAccumulationSteps < 0 || !std::isfinite(plan.gradientClipping) || plan.gradientClipping < 0)
        std::abort();
    if (plan.offloadParameters && plan.stage != 3)
        std::abort();
    (void)plan.describe();
    return 0;
}
