#!/usr/bin/env python3
"""PyTorch's own tensor parallelism (DTensor: torch.distributed.tensor.parallel) on the transformers Llama
that run_bench.py made, one rank of a torchrun job on CPU (gloo): q/k/v, gate and up ColwiseParallel,
o and down RowwiseParallel (transformers' tp plan for Llama), embeddings, norms and head replicated,
torch AdamW (the fused kernel, as accel-worker steps it), the same windows as the causal_lm recipe (packed,
shuffle off, the batch whole on every rank of the tp group). Prints `STEP <i> <seconds> <loss>` per step on rank 0.
usage: peer_tp.py MODEL_FOLDER WINDOWS.pt --steps N"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("windows")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    from transformers import LlamaForCausalLM
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
    model = LlamaForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    model.train()
    plan = {"self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(),
            "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(), "mlp.down_proj": RowwiseParallel()}
    for layer in model.model.layers:
        parallelize_module(layer, mesh, plan)
    # The fused kernel takes the split (DTensor) and the replicated (plain) parameters in separate groups.
    from torch.distributed.tensor import DTensor
    split = [p for p in model.parameters() if isinstance(p, DTensor)]
    whole = [p for p in model.parameters() if not isinstance(p, DTensor)]
    optimizer = torch.optim.AdamW([{"params": split}, {"params": whole}], lr=5e-5, weight_decay=0.01, fused=True)
    windows = torch.load(args.windows)
    for step in range(args.steps):
        ids = windows[(step * args.batch) % windows.size(0):][:args.batch]
        start = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        seconds = time.perf_counter() - start
        if dist.get_rank() == 0:
            print(f"STEP {step + 1} {seconds:.6f} {loss.item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
