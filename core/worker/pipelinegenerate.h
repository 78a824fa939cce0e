// Pipeline-parallel generate and infer under accel launch (issue 36): `accel launch --num_processes
// N --no_python accel generate MODEL --device_map pipeline (--prompt T | --input_ids I |
// --prompts_file F --output O)`. Each process loads only its stage's layers (pipelinestage.h). The
// last process drives generation with the same generator as one process (greedy, sampling with the
// seed, stop tokens and strings, chunked prefill): its model's forward sends the ids to the first
// process, which embeds them and runs its layers, the hidden states pass from stage to stage
// (c10d send / recv, pipelinelink.h), and the last process runs its layers, the head and picks the
// token. With several prompts, min(prompts, N) micro-batches are in flight (Accelerate's
// num_chunks default), each a lane of its own on every process, so the stages work on different
// prompts at once. The last process writes the results (and for infer the logits). Refused by name:
// --draft, --quantization / --skip_modules / --keep_in_fp32_modules, --adapter, --offload_folder,
// --max_memory, --gpus_on_cpu, --dtype auto, --pin_threads.
#pragma once

namespace accel::inference {
struct WorkerRequest;
}

namespace accel::worker {

// generate (or infer: the request has --logits-out) with --device_map naming a pipeline.
int pipelineMain(const inference::WorkerRequest &request);

} // namespace accel::worker
