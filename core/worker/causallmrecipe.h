// The causal_lm recipe's settings, read and checked before anything starts (the model folder's
// config.json against what the families implement, LoRA, the output format). Includes
// libtorch (through the families' headers).
#pragma once

#include "core/common/result.h"
#include "core/inference/lora.h"
#include "core/inference/modelconfig.h"
#include "core/worker/jobspec.h"
#include "core/worker/lmdata.h"

#include <optional>
#include <string>

namespace accel::worker {

struct CausalLmSetup {
    std::string modelDir;
    inference::ModelConfig config;
    int64_t blockSize = 0;
    LmDataFormat format = LmDataFormat::Auto;
    std::optional<inference::LoraConfig> lora; // none: full fine-tuning
    std::optional<at::ScalarType> outputDtype; // none: the checkpoint's
    uint64_t maxShardBytes = 0;
};

Result<CausalLmSetup> readCausalLmSetup(const JobSpec &job);

} // namespace accel::worker
