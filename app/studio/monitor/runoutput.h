// What a finished fine-tuning run (recipe causal_lm, docs/finetune.md) wrote for the Playground:
// <output_dir>/model, a Hugging Face folder, or <output_dir>/adapter, a LoRA adapter in peft's
// layout with the base model folder its adapter_config.json names (base_model_name_or_path, else
// the job's model.path). output_dir is the run's job.yaml's, else the run directory (where
// accel-worker writes when the job names none).
#pragma once

#include <QString>

namespace accel::app {

struct RunOutput {
    QString model;   // the folder the Playground loads
    QString adapter; // a LoRA adapter applied to it, or ""
    bool isEmpty() const { return model.isEmpty(); }
};

RunOutput fineTunedOutput(const QString &runDirectory);

} // namespace accel::app
