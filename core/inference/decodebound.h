// What bounds decode on a CPU: each new token reads every weight the forward uses once, so tokens/s
// cannot pass the machine's memory bandwidth divided by those bytes. The serve worker reports both
// with a loaded model (the Playground shows them beside the measured tokens/s) and the inference
// benchmark compares against the same bound.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>

namespace accel::inference {

class InferenceModel;

struct DecodeBytes {
    uint64_t perToken = 0;  // weight bytes one decode step reads (the KV cache comes on top)
    uint64_t resident = 0;  // of them: held on the devices, quantized layers as quantized
    uint64_t offloaded = 0; // of them: brought in from the CPU copy or the offload folder each step
};

// Every weight once, as held (quantized layers by their quantized bytes, offloaded ones by the
// bytes brought in), except embedding tables that are only looked up: one row per token. The token
// embedding of a model with tie_word_embeddings is also its output head, read whole.
DecodeBytes decodeBytes(InferenceModel &model);

// This machine's memory bandwidth in bytes read per second: the fastest of 5 copies of 256 MiB
// (larger than the last-level caches of the CPUs this runs on). Measured on the first call (about
// 0.3 s and 512 MiB for that moment), then remembered for the process.
double memoryBandwidth();

// {"weight_bytes_per_token", "offloaded_bytes_per_token", "memory_bandwidth_bytes_per_s",
//  "tokens_per_s"}: the bound for this model on this machine (tokens_per_s null when unmeasured).
nlohmann::ordered_json decodeBoundJson(InferenceModel &model);

} // namespace accel::inference
