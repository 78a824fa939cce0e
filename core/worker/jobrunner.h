// Runs one rank of a job file: builds the Accelerator from the environment and the job's
// settings, then the recipe (docs/jobs.md). Also the worker's capability report.
#pragma once

#include "core/common/result.h"
#include "core/runtime/accelerator.h"
#include "core/worker/jobspec.h"

#include <string>

namespace accel::worker {

// Accelerator options from a job: timeouts, bucket size, accumulation, precision, project
// folder (checkpoints under <output_dir>/checkpoints, automatic naming, next iteration after
// the latest existing checkpoint).
runtime::AcceleratorOptions acceleratorOptions(const JobSpec &job);

Result<void> runJob(const JobSpec &job);

// {"schema":"accel.worker-capabilities","version":1,...} (one line, no newline).
std::string capabilitiesJson();

// Recipes (one per file where they are large).
Result<void> runGptRecipe(runtime::Accelerator &accelerator, const JobSpec &job);
// gpt with a frozen teacher gpt and a distillation term (gptrecipe.cpp).
Result<void> runDistillRecipe(runtime::Accelerator &accelerator, const JobSpec &job);
// A Hugging Face causal LM fine-tuned whole or with LoRA (causallmrecipe.cpp).
Result<void> runCausalLmRecipe(runtime::Accelerator &accelerator, const JobSpec &job);
Result<void> runMlpRecipe(runtime::Accelerator &accelerator, const JobSpec &job);
Result<void> runTorchScriptRecipe(runtime::Accelerator &accelerator, const JobSpec &job);
Result<void> runPluginRecipe(runtime::Accelerator &accelerator, const JobSpec &job);
Result<void> runSelfTestRecipe(runtime::Accelerator &accelerator, const JobSpec &job);

} // namespace accel::worker
