# Writes the SHARDED_STATE_DICT checkpoints Accelerate saves for FSDP2 and FSDP1, on CPU with gloo,
# for tst_shardingfolder (accel merge-weights against `accelerate merge-weights`).
# Usage: torchrun --standalone --nproc_per_node 2 dcp_checkpoint.py OUT_DIR
# Writes OUT_DIR/fsdp2/pytorch_model_fsdp_0/ (and the optimizer's OUT_DIR/fsdp2/optimizer_0/) and
# OUT_DIR/fsdp1/pytorch_model_fsdp_0/ (.metadata and __<rank>_0.distcp) through Accelerate's own save_fsdp_model, the call Accelerator.save_state makes.
# Accelerate 1.15 turns FSDP on only for GPU-like devices (state.py: the FSDP branch is not taken for
# MULTI_CPU), so the script shards the model with torch's fully_shard / FullyShardedDataParallel
# itself and hands it to that function with the FSDP plugin; the files are what a GPU run writes.
import os
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import FullyShardedDataParallelPlugin
from accelerate.utils.fsdp_utils import save_fsdp_model, save_fsdp_optimizer
from torch.distributed.fsdp import FullyShardedDataParallel, fully_shard


class Tiny(torch.nn.Module):
    # Shards that do not split evenly over 2 ranks (7 rows, 3 rows, 1 value: rank 1 holds nothing of
    # `gain`), a bf16 embedding, a float64 buffer.
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(5, 7)
        self.fc2 = torch.nn.Linear(7, 3, bias=False)
        self.gain = torch.nn.Parameter(torch.randn(1))
        self.register_buffer("scale", torch.arange(4, dtype=torch.float64))
        self.emb = torch.nn.Embedding(9, 4).to(torch.bfloat16)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * self.gain


def main():
    out = sys.argv[1]
    accelerator = Accelerator(cpu=True)
    assert accelerator.num_processes == 2, accelerator.num_processes
    torch.manual_seed(0)
    model = Tiny()
    fully_shard(model.fc1)
    fully_shard(model.emb)  # one dtype per unit for the forward below
    fully_shard(model)
    plugin = FullyShardedDataParallelPlugin(fsdp_version=2, state_dict_type="SHARDED_STATE_DICT")
    save_fsdp_model(plugin, accelerator, model, os.path.join(out, "fsdp2"))
    # Its optimizer after one step: fsdp2/optimizer_0/ holds tensors and non-tensor param_groups.
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 5)).sum().backward()
    optimizer.step()
    save_fsdp_optimizer(plugin, accelerator, optimizer, model, os.path.join(out, "fsdp2"))

    torch.manual_seed(1)
    model = Tiny()
    cpu = torch.device("cpu")
    model.emb = FullyShardedDataParallel(model.emb, device_id=cpu, use_orig_params=True)  # one dtype per unit
    model = FullyShardedDataParallel(model, device_id=cpu, use_orig_params=True)
    plugin = FullyShardedDataParallelPlugin(fsdp_version=1, state_dict_type="SHARDED_STATE_DICT")
    save_fsdp_model(plugin, accelerator, model, os.path.join(out, "fsdp1"))
    accelerator.wait_for_everyone()
    accelerator.end_training()
    # Everything is on disk. PyTorch 2.12.1's gloo sometimes ends a rank at interpreter exit with
    # "terminate called without an active exception" (1 run in 8 here): leave without the teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
