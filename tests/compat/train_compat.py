"""A small Accelerate training script run unchanged under `accel launch` and `accelerate launch`.

    train_compat.py OUT_JSON CHECKPOINT_DIR [--resume]

Trains a two-layer regression model for two epochs with gradient accumulation, evaluates with
gather_for_metrics after each epoch, and saves the state (save_state) after the first epoch. With
--resume it loads that state (load_state) and runs only the second epoch. The main process writes
OUT_JSON: the launch environment it saw, every optimizer step's loss, the evaluation results and
the final parameters, all as exact hex bytes so two runs can be compared bit for bit.
"""

import json
import os
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, set_seed
from torch.utils.data import DataLoader, TensorDataset


def hexbytes(tensor):
    return tensor.detach().contiguous().cpu().numpy().tobytes().hex()


def main():
    out_path, checkpoint_dir = sys.argv[1], sys.argv[2]
    resume = "--resume" in sys.argv[3:]
    set_seed(1234)
    # The seedable sampler's epoch and seed are part of save_state, so a resumed run shuffles the
    # second epoch as the uninterrupted one did.
    accelerator = Accelerator(
        gradient_accumulation_steps=2, dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True)
    )

    generator = torch.Generator().manual_seed(7)
    inputs = torch.randn(96, 8, generator=generator)
    targets = inputs @ torch.randn(8, 1, generator=generator) + 0.1 * torch.randn(96, 1, generator=generator)
    train = DataLoader(TensorDataset(inputs[:80], targets[:80]), batch_size=4, shuffle=True)
    # 16 samples over 2 ranks with batch 3: the last batch is padded; gather_for_metrics drops the pad.
    evaluation = DataLoader(TensorDataset(inputs[80:], targets[80:]), batch_size=3)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    model, optimizer, train, evaluation, scheduler = accelerator.prepare(model, optimizer, train, evaluation, scheduler)

    losses = []
    evaluations = []
    first_epoch = 0
    if resume:
        accelerator.load_state(checkpoint_dir)
        first_epoch = 1
    for epoch in range(first_epoch, 2):
        model.train()
        # The prepared loader restarts its epoch count at 0 in a new process; the epoch sets the shuffle.
        train.set_epoch(epoch)
        for x, y in train:
            with accelerator.accumulate(model):
                loss = torch.nn.functional.mse_loss(model(x), y)
                accelerator.backward(loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            losses.append(hexbytes(accelerator.reduce(loss.detach(), reduction="mean")))
        model.eval()
        predictions = []
        with torch.no_grad():
            for x, y in evaluation:
                predictions.append(accelerator.gather_for_metrics((model(x) - y) ** 2))
        errors = torch.cat(predictions)
        evaluations.append({"count": int(errors.shape[0]), "sum": hexbytes(errors.sum())})
        if epoch == 0:
            accelerator.save_state(checkpoint_dir)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        result = {
            "num_processes": accelerator.num_processes,
            "distributed_type": str(accelerator.distributed_type),
            "mixed_precision": accelerator.mixed_precision,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
            "torch_threads": torch.get_num_threads(),
            "losses": losses,
            "evaluations": evaluations,
            "parameters": {name: hexbytes(p) for name, p in accelerator.unwrap_model(model).named_parameters()},
            "checkpoint_files": sorted(os.listdir(checkpoint_dir)),
        }
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
    accelerator.end_training()


if __name__ == "__main__":
    main()
