#!/usr/bin/env python3
"""Python eager peer for bench_inference: the same GPT-2 checkpoint, read with a small pure-Python
safetensors reader (header JSON + torch.frombuffer over an mmap), prefill and cached decode timed
the same way. Prints `prefill <tokens/s>` and `decode <tokens/s>`."""
import json
import math
import mmap
import struct
import sys
import time

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64}


def read_safetensors(path):
    f = open(path, "rb")
    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    (n,) = struct.unpack("<Q", mapped[:8])
    header = json.loads(mapped[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        count = (end - begin) // torch.tensor([], dtype=dtype).element_size()
        t = torch.frombuffer(mapped, dtype=dtype, count=count, offset=base + begin)
        tensors[name] = t.view(info["shape"])
    return tensors


class Gpt2:
    def __init__(self, folder):
        cfg = json.load(open(folder + "/config.json"))
        self.w = read_safetensors(folder + "/model.safetensors")
        self.layers = cfg["n_layer"]
        self.heads = cfg["n_head"]
        self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.hidden = cfg["n_embd"]

    def forward(self, ids, cache):
        w = self.w
        past = cache[0][0].shape[2] if cache[0] is not None else 0
        b, t = ids.shape
        pos = torch.arange(past, past + t)
        h = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][pos]
        hd = self.hidden // self.heads
        for i in range(self.layers):
            p = f"transformer.h.{i}."
            x = torch.nn.functional.layer_norm(h, (self.hidden,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], self.eps)
            qkv = torch.addmm(w[p + "attn.c_attn.bias"], x.view(-1, self.hidden), w[p + "attn.c_attn.weight"])
            q, k, v = qkv.view(b, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
            if cache[i] is not None:
                k = torch.cat([cache[i][0], k], 2)
                v = torch.cat([cache[i][1], v], 2)
            cache[i] = (k, v)
            s = q @ k.transpose(-1, -2) / math.sqrt(hd)
            if t > 1:
                mask = torch.ones(t, k.shape[2], dtype=torch.bool).triu(past + 1)
                s = s.masked_fill(mask, float("-inf"))
            a = (s.softmax(-1) @ v).transpose(1, 2).reshape(b * t, self.hidden)
            h = h + torch.addmm(w[p + "attn.c_proj.bias"], a, w[p + "attn.c_proj.weight"]).view(b, t, -1)
            x = torch.nn.functional.layer_norm(h, (self.hidden,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], self.eps)
            f = torch.addmm(w[p + "mlp.c_fc.bias"], x.view(b * t, -1), w[p + "mlp.c_fc.weight"])
            f = torch.nn.functional.gelu(f, approximate="tanh")
            h = h + torch.addmm(w[p + "mlp.c_proj.bias"], f, w[p + "mlp.c_proj.weight"]).view(b, t, -1)
        h = torch.nn.functional.layer_norm(h[:, -1:], (self.hidden,), w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], self.eps)
        return h @ w["transformer.wte.weight"].t()


def main():
    folder, threads = sys.argv[1], int(sys.argv[2])
    prefill_tokens, decode_tokens = int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    model = Gpt2(folder)
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        ids = torch.randint(0, 50257, (1, prefill_tokens), generator=gen)
        best = None
        for _ in range(3):
            cache = [None] * model.layers
            start = time.perf_counter()
            model.forward(ids, cache)
            elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
        print(f"prefill {prefill_tokens / best:.2f}")
        cache = [None] * model.layers
        logits = model.forward(ids[:, :16], cache)
        start = time.perf_counter()
        for _ in range(decode_tokens):
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            logits = model.forward(nxt, cache)
        print(f"decode {decode_tokens / (time.perf_counter() - start):.2f}")


if __name__ == "__main__":
    main()
