"""PyTorch's own FSDP on the model accel-runtime-probe trains with model=stack (tst_shardingcompat).

One rank per process (RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT set), gloo on CPU,
the probe's initial weights and data set (safetensors), AdamW(lr=1e-2, weight_decay=0.01), gradient
norm clipping, no accumulation. Rank 0 writes "param <name> <hex>" lines in the probe's order.

usage: sharding_reference.py STRATEGY INIT DATA OUT STEPS BATCH MAX_NORM
STRATEGY: FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (FSDP1) or
fully_shard:true / fully_shard:false (FSDP2 with reshard_after_forward).
"""
import os
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import load_file

warnings.filterwarnings("ignore")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)

    def forward(self, x):
        return x + torch.tanh(self.fc(x))


class Stack(torch.nn.Module):
    def __init__(self, count):
        super().__init__()
        self.add_module("in", torch.nn.Linear(8, 32))
        self.blocks = torch.nn.ModuleList(Block() for _ in range(count))
        self.out = torch.nn.Linear(32, 4)

    def forward(self, x):
        x = torch.tanh(getattr(self, "in")(x))
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def main():
    strategy, init, data, out = sys.argv[1:5]
    steps, batch, max_norm = int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)

    weights = load_file(init)
    count = len({k.split(".")[1] for k in weights if k.startswith("blocks.")})
    model = Stack(count)
    model.load_state_dict(weights, strict=True)
    names = [name for name, _ in model.named_parameters()]

    if strategy.startswith("fully_shard:"):
        from torch.distributed.fsdp import fully_shard

        reshard = strategy.split(":")[1] == "true"
        for block in model.blocks:
            fully_shard(block, reshard_after_forward=reshard)
        fully_shard(model, reshard_after_forward=reshard)
        wrapped = model
    else:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import ShardingStrategy
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        kind = "_HYBRID_SHARD_ZERO2" if strategy == "HYBRID_SHARD_ZERO2" else strategy
        extra = {}
        if strategy.startswith("HYBRID"):
            from torch.distributed.device_mesh import init_device_mesh

            extra["device_mesh"] = init_device_mesh("cpu", (world // local, local))
        wrapped = FSDP(model, sharding_strategy=getattr(ShardingStrategy, kind),
                       auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=torch.device("cpu"),
                       use_orig_params=True, **extra)

    tensors = load_file(data)
    x, y = tensors["x"], tensors["y"]
    optimizer = torch.optim.AdamW(wrapped.parameters(), lr=1e-2, weight_decay=0.01)
    per_epoch = x.shape[0] // batch // world  # the probe's loader drops the last partial round
    for step in range(steps):
        first = ((step % per_epoch) * world + rank) * batch
        loss = F.cross_entropy(wrapped(x[first:first + batch]), y[first:first + batch])
        loss.backward()
        if max_norm > 0:
            if hasattr(wrapped, "clip_grad_norm_"):
                wrapped.clip_grad_norm_(max_norm)
            else:
                torch.nn.utils.clip_grad_norm_(wrapped.parameters(), max_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    if strategy.startswith("fully_shard:"):
        full = {name: p.full_tensor() for name, p in model.named_parameters()}
    else:
        with FSDP.summon_full_params(wrapped):
            full = {name.replace("_fsdp_wrapped_module.", ""): p.detach().clone()
                    for name, p in wrapped.named_parameters()}
    if rank == 0:
        with open(out, "w") as f:
            for name in names:
                for value in full[name].reshape(-1).tolist():
                    f.write(f"param {name} {float(value).hex()}\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # The answer is written and the group destroyed: leave without the interpreter's teardown. A
    # rank of this reference once ended with "terminate called without an active exception" on a
    # loaded machine (FULL_SHARD x2), which is what a C++ thread still joinable when static objects
    # are destroyed gives; nothing after this point may fail the comparison.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
