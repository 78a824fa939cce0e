#!/usr/bin/env python3
"""Python DDP reference for the runtime benchmark (run under torchrun, gloo, CPU).

The same models as accel-worker's `mlp` and `gpt` recipes, the same batch sizes and optimizers,
so the throughput figures compare the runtimes, not the models. Prints
  RESULT samples_per_s <x> tokens_per_s <y>
on rank 0 (global throughput over the timed steps, warm-up excluded).
"""
import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, n_embd, n_head, block):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        # A plain attribute, not a buffer: DDP would broadcast it, and gloo has no bool type.
        self.mask = torch.ones(block, block, dtype=torch.bool).tril()

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.qkv(x).split(C, 2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = Attention(n_embd, n_head, block)
        self.ln2 = nn.LayerNorm(n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, block):
        super().__init__()
        self.wte = nn.Embedding(256, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, block) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["mlp", "gpt"])
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    world = dist.get_world_size() if distributed else 1
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(0)
    if args.model == "mlp":
        model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
        batch, tokens_per_sample = 64, 0
        x = torch.randn(batch * 4, 512)
        y = torch.randint(0, 10, (batch * 4,))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def loss_fn(step, m):
            i = (step % 4) * batch
            return F.cross_entropy(m(x[i:i + batch]), y[i:i + batch])
    else:
        block, batch = 128, 8
        model = Gpt(4, 4, 256, block)
        tokens_per_sample = block
        data = torch.randint(0, 256, (batch * 4, block + 1))
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.01)

        def loss_fn(step, m):
            i = (step % 4) * batch
            b = data[i:i + batch]
            return F.cross_entropy(m(b[:, :-1]).reshape(-1, 256), b[:, 1:].reshape(-1))
    ddp = nn.parallel.DistributedDataParallel(model) if distributed else model
    start = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            if distributed:
                dist.barrier()
            start = time.perf_counter()
        loss = loss_fn(step, ddp)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    if distributed:
        dist.barrier()
    seconds = time.perf_counter() - start
    samples = args.steps * batch * world / seconds
    if rank == 0:
        print(f"RESULT samples_per_s {samples:.3f} tokens_per_s {samples * tokens_per_sample:.3f}", flush=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
