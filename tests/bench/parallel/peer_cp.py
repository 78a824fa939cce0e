#!/usr/bin/env python3
"""The PyTorch peers of the context-parallel bench (run_bench.py --mode cp), one rank of a torchrun job on
CPU (gloo), on the transformers Llama and windows that run_bench.py made, torch AdamW (lr 5e-5, weight
decay 0.01, the fused kernel, as accel-worker steps it), batch B whole sequences per step:

- `--method context_parallel`: PyTorch's own context parallelism,
  torch.distributed.tensor.experimental.context_parallel on a cp mesh of every rank, used as Accelerate's
  maybe_context_parallel uses it: the rotate method set by set_rotate_method (`--rotate`), the ids, the
  shifted labels and the positions sharded along the sequence (load balanced), each attention's mask
  dropped for is_causal, and the gradients averaged over the cp ranks (DDP over the cp group, as FSDP2
  over dp_shard x cp averages them). Every rank holds all B sequences, a 1 / world part of each.
- `--method ddp`: not context parallel: plain DDP of the same steps, each rank B / world whole sequences
  of the global batch (one rank per sequence), transformers' SDPA attention over the whole sequence.

Prints `STEP <i> <seconds> <loss>` per step on rank 0 (forward, backward, optimizer step, zero_grad), or
`REFUSED <exception type>: <message>` when a step raises, and then exits with 3.
usage: peer_cp.py MODEL_FOLDER WINDOWS.pt --method context_parallel|ddp [--rotate allgather|alltoall]
                  --steps N --batch B"""
import argparse
import contextlib
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

REFUSED_EXIT = 3


def drop_attention_mask(module, args, kwargs):
    """Context parallelism shards the sequence: the attention takes is_causal instead of a mask."""
    if "attention_mask" in kwargs:
        kwargs["attention_mask"] = None
        kwargs["is_causal"] = True
    return args, kwargs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("windows")
    parser.add_argument("--method", choices=("context_parallel", "ddp"), required=True)
    parser.add_argument("--rotate", choices=("allgather", "alltoall"), default="allgather")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    from transformers import LlamaForCausalLM
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = LlamaForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    model.train()
    cp = args.method == "context_parallel"
    if cp:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.experimental import context_parallel
        from torch.distributed.tensor.experimental._attention import set_rotate_method
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("cp",))
        set_rotate_method(args.rotate)
        for name, module in model.named_modules():
            if name.endswith("self_attn"):
                module.register_forward_pre_hook(drop_attention_mask, with_kwargs=True, prepend=True)
    elif args.batch % world:
        sys.exit(f"--batch {args.batch} does not divide over {world} ranks")
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01, fused=True)
    windows = torch.load(args.windows)
    length = windows.size(1)
    for step in range(args.steps):
        batch = windows[(step * args.batch) % windows.size(0):][:args.batch]
        start = time.perf_counter()
        try:
            if cp:
                ids = batch.clone()
                labels = torch.full_like(ids, -100)
                labels[:, :-1] = ids[:, 1:]
                positions = torch.arange(length).expand(ids.size(0), length).clone()
                buffers = [ids, labels, positions]
                context = context_parallel(mesh, buffers=buffers, buffer_seq_dims=[1, 1, 1],
                                           no_restore_buffers=set(buffers))
            else:
                ids = batch[rank::world]
                labels = ids
                positions = None
                context = contextlib.nullcontext()
            with context:
                if cp:
                    loss = ddp(input_ids=ids, position_ids=positions, labels=labels, shift_labels=labels).loss
                else:
                    loss = ddp(input_ids=ids, labels=labels).loss
                loss.backward()
        except Exception as error:  # the refusal is the finding: print it whole on one line
            if rank == 0:
                lines = traceback.format_exception_only(type(error), error)
                print(f"REFUSED {''.join(lines).strip()}".replace("\n", " | "), flush=True)
                print(traceback.format_exc(), file=sys.stderr, flush=True)
            sys.exit(REFUSED_EXIT)
        optimizer.step()
        optimizer.zero_grad()
        seconds = time.perf_counter() - start
        if rank == 0:
            print(f"STEP {step + 1} {seconds:.6f} {loss.item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
