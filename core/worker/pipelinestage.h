// Pipeline-parallel inference split by layer (Accelerate's prepare_pippy: each process one stage,
// the stages in layer order). Which process runs which layers: `--device_map pipeline` splits the
// layers evenly (the first layers % N processes one more), a map whose values name processes
// ("rank:0", "rank:1", ...) places them as written. The embeddings run on the first process, the
// final norm and head on the last (with a tied head the last process also holds the embedding
// matrix). Each process's device map keeps its parameters resident and the others mapped from the
// checkpoint but never read (their hooks dropped after loading). PipelineStage runs one stage's
// part of a forward, built from the families' public modules. Includes libtorch.
#pragma once

#include "core/common/result.h"
#include "core/inference/causallm.h"
#include "core/inference/dispatch.h"
#include "core/inference/pipelinemap.h"
#include "core/inference/rotary.h"

#include <optional>
#include <string>
#include <vector>

namespace accel::worker {

struct PipelinePlan {
    std::vector<int64_t> firstLayer; // per stage; stage s runs [firstLayer[s], end(s))
    int64_t numLayers = 0;
    int stages() const { return static_cast<int>(firstLayer.size()); }
    int64_t begin(int stage) const { return firstLayer[static_cast<size_t>(stage)]; }
    int64_t end(int stage) const { return stage + 1 < stages() ? begin(stage + 1) : numLayers; }
};

// The layers of `stages` processes for `spec` (see above); errors name the map's key and value.
Result<PipelinePlan> planPipeline(const std::string &spec, inference::CausalLM &model, int stages);

// The device map of `stage`: its parameters on the CPU, every other one "disk" (never read).
inference::DeviceMap stageDeviceMap(const PipelinePlan &plan, inference::CausalLM &model, int stage);
// Where the plan runs the model, as a map naming processes (embeddings, each layer, norm, head).
inference::DeviceMap pipelineLayout(const PipelinePlan &plan, inference::CausalLM &model);

// One stage's forward over a model loaded with stageDeviceMap().
class PipelineStage {
public:
    static Result<PipelineStage> create(inference::CausalLM &model, const PipelinePlan &plan, int stage);
    bool first() const { return m_stage == 0; }
    bool last() const { return m_stage + 1 == m_plan.stages(); }
    // First stage: the hidden states [B, T, hidden] of ids [B, T] at positions past...
    at::Tensor embed(const at::Tensor &ids, int64_t past);
    // This stage's layers; their keys and values appended to `cache`, which advances by T.
    at::Tensor layers(const at::Tensor &hidden, inference::KVCache &cache);
    // Last stage: float32 logits (of the last position only with lastOnly).
    at::Tensor head(const at::Tensor &hidden, bool lastOnly);
    // Drops the offload hooks of the modules other stages run (this stage never reads them).
    void dropOtherStages();

private:
    PipelineStage(inference::CausalLM &model, PipelinePlan plan, int stage);
    inference::CausalLM *m_model;
    PipelinePlan m_plan;
    int m_stage;
    inference::Module *m_embedding = nullptr, *m_positions = nullptr, *m_norm = nullptr, *m_lmHead = nullptr;
    std::vector<inference::Module *> m_blocks;
    std::optional<inference::RotaryEmbedding> m_rotary; // the Llama family
};

} // namespace accel::worker
