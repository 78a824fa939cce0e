"""A plain Python Accelerate training script for tst_clusterjob's two-node run.

Every rank trains the same small regression model with DDP for 12 steps, prints
"step=N loss=X" lines (what the studio's monitor reads from a script's output), and at the end
one line with a digest of its parameters: data-parallel ranks on every node must end with equal
parameters. Rank 0 also prints the world it saw.
"""
import hashlib

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset


def main():
    set_seed(5)
    accelerator = Accelerator()
    generator = torch.Generator().manual_seed(11)
    inputs = torch.randn(192, 6, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True)
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=4, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, (x, y) in enumerate(loader, start=1):
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        print(f"step={step} loss={loss.item():.6f}", flush=True)
        if step == 12:
            break
    digest = hashlib.sha256()
    for parameter in accelerator.unwrap_model(model).parameters():
        digest.update(parameter.detach().numpy().tobytes())
    if accelerator.is_main_process:
        print(f"world: {accelerator.num_processes} processes, {accelerator.distributed_type}", flush=True)
    print(f"rank {accelerator.process_index} parameters {digest.hexdigest()}", flush=True)
    accelerator.end_training()


if __name__ == "__main__":
    main()
