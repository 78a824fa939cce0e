#!/usr/bin/env python3
"""PyTorch's own FSDP (FSDP1 FullyShardedDataParallel or FSDP2 fully_shard, each Block a unit) on
the benchmark's GPT (tests/bench/runtime/reference_ddp.py: n_layer 4, n_head 4, n_embd 256, context
128, batch 8 per rank, AdamW), gloo on CPU, under torchrun. Prints on rank 0
  RESULT samples_per_s <x> tokens_per_s <y>
usage: reference_fsdp.py STRATEGY [--warmup N] [--steps N]
STRATEGY: FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (FSDP1; hybrid: shard
within the node, LOCAL_WORLD_SIZE ranks, replicate across nodes) or fully_shard:true /
fully_shard:false (FSDP2 with reshard_after_forward).
"""
import argparse
import importlib.util
import os
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("reference_ddp", os.path.join(HERE, "..", "runtime", "reference_ddp.py"))
reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reference)


def main():
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    parser = argparse.ArgumentParser()
    parser.add_argument("strategy", choices=["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                             "HYBRID_SHARD_ZERO2", "fully_shard:true", "fully_shard:false"])
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    torch.manual_seed(0)
    block, batch = 128, 8
    if args.strategy.startswith("fully_shard:"):
        from torch.distributed.fsdp import fully_shard

        reshard = args.strategy.split(":")[1] == "true"
        model = reference.Gpt(4, 4, 256, block)
        for module in list(model.modules()):
            if isinstance(module, reference.Block):
                fully_shard(module, reshard_after_forward=reshard)
        fully_shard(model, reshard_after_forward=reshard)
    else:
        extra = {}
        if args.strategy.startswith("HYBRID"):
            from torch.distributed.device_mesh import init_device_mesh

            local = int(os.environ["LOCAL_WORLD_SIZE"])
            extra["device_mesh"] = init_device_mesh("cpu", (world // local, local))
        kind = "_HYBRID_SHARD_ZERO2" if args.strategy == "HYBRID_SHARD_ZERO2" else args.strategy
        model = FSDP(reference.Gpt(4, 4, 256, block), sharding_strategy=getattr(ShardingStrategy, kind),
                     auto_wrap_policy=ModuleWrapPolicy({reference.Block}), device_id=torch.device("cpu"),
                     use_orig_params=True, **extra)
    data = torch.randint(0, 256, (batch * 4, block + 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.01)
    start = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            dist.barrier()
            start = time.perf_counter()
        b = data[(step % 4) * batch:(step % 4 + 1) * batch]
        loss = F.cross_entropy(model(b[:, :-1]).reshape(-1, 256), b[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    dist.barrier()
    samples = args.steps * batch * world / (time.perf_counter() - start)
    if rank == 0:
        print(f"RESULT samples_per_s {samples:.3f} tokens_per_s {samples * block:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
