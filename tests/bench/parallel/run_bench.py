#!/usr/bin/env python3
"""Tensor-parallel training step time: accel-worker's causal_lm recipe with parallelism_config tp_size 2
(2 CPU ranks, DDP strategy, mesh tp 2) against PyTorch's own DTensor tensor parallelism on the same
torch (peer_tp.py under torchrun, gloo): the same random Llama saved by transformers (hidden 512,
intermediate 1408, 4 layers, 8 heads, 4 key/value heads, vocabulary 4096), the same packed windows
(block 128, batch 2, the whole batch on both ranks of the tp group), float32, AdamW lr 5e-5 weight
decay 0.01, no clipping, 1 thread per rank.
Step time: the median over --steps steps after --warmup steps (ours: the worker's step_time_s metric,
which also counts the batch's preparation and the logged loss's all-reduce; the peer: forward,
backward, optimizer step and zero_grad timed in the script). ACCEL_BENCH_ROUNDS (default 3) rounds,
ours then the peer back to back in each; the BENCH line gives the medians over rounds and the median
per-round ratio peer / ours (above 1: ours is faster).
usage: run_bench.py --worker ACCEL_WORKER [--warmup N] [--steps N]
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("ACCEL_BENCH_PYTHON") or sys.executable
BLOCK, BATCH, RANKS = 128, 2, 2
WORDS = ("river garden lantern morning silver quiet stone window harbor meadow candle winter paper "
         "orchard bridge thunder copper violet engine saddle").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(work):
    """The corpus, a byte-level BPE tokenizer trained on it, the model, and the peer's windows."""
    import random
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM

    rng = random.Random(0)
    docs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) for _ in range(600)]
    data = os.path.join(work, "train.txt")
    with open(data, "w") as f:
        f.write("\n\n".join(docs) + "\n")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=4096, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train([data], trainer)
    eos = tok.token_to_id("<|endoftext|>")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=4096, hidden_size=512, intermediate_size=1408,
                                         num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                                         max_position_embeddings=512, bos_token_id=eos, eos_token_id=eos,
                                         tie_word_embeddings=False))
    folder = os.path.join(work, "model")
    model.save_pretrained(folder)
    tok.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>"}, f)
    ids = []
    for doc in docs:
        ids += tok.encode(doc, add_special_tokens=False).ids + [eos]
    count = len(ids) // BLOCK
    windows = torch.tensor(ids[:count * BLOCK]).view(count, BLOCK)
    torch.save(windows, os.path.join(work, "windows.pt"))
    return folder, data, sum(p.numel() for p in model.parameters())


def ours(worker, work, folder, data, args):
    run = os.path.join(work, "ours")
    shutil.rmtree(run, ignore_errors=True)
    job = os.path.join(work, "job.yaml")
    with open(job, "w") as f:
        f.write(f"recipe: causal_lm\noutput_dir: {run}\nmodel: {{path: {folder}}}\n"
                f"data: {{train: {data}, block_size: {BLOCK}}}\n"
                f"training: {{max_steps: {args.warmup + args.steps}, batch_size: {BATCH}, learning_rate: 5.0e-5, "
                "weight_decay: 0.01, grad_clip: 0, log_every: 1, shuffle: false, resume: none, "
                "mixed_precision: \"no\"}\n")
    port = free_port()
    processes = []
    for rank in range(RANKS):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(RANKS),
                   LOCAL_WORLD_SIZE=str(RANKS), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   ACCELERATE_USE_PARALLELISM_CONFIG="true", PARALLELISM_CONFIG_TP_SIZE=str(RANKS),
                   OMP_NUM_THREADS="1")
        processes.append(subprocess.Popen([worker, job], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
    outputs = [p.communicate()[0] for p in processes]
    if any(p.returncode != 0 for p in processes):
        sys.exit("accel-worker failed:\n" + "\n".join(o[-3000:] for o in outputs))
    if "mesh tp 2" not in outputs[0]:
        sys.exit("accel-worker did not run on mesh tp 2:\n" + outputs[0][-3000:])
    times = []
    with open(os.path.join(run, "metrics", "rank0.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if "step_time_s" in record and record["step"] > args.warmup:
                times.append(record["step_time_s"])
    return statistics.median(times)


def peer(work, folder, args):
    cmd = [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", str(RANKS), "--master_port", str(free_port()),
           os.path.join(HERE, "peer_tp.py"), folder, os.path.join(work, "windows.pt"), "--steps",
           str(args.warmup + args.steps), "--batch", str(BATCH)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    times = []
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0] == "STEP" and int(fields[1]) > args.warmup:
            times.append(float(fields[2]))
    if out.returncode != 0 or len(times) != args.steps:
        sys.exit("peer_tp.py failed:\n" + out.stdout[-6000:])
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    rounds = int(os.environ.get("ACCEL_BENCH_ROUNDS", "3"))
    work = tempfile.mkdtemp(prefix="bench-parallel-")
    try:
        folder, data, parameters = prepare(work)
        mine, theirs, ratios = [], [], []
        for r in range(rounds):
            a = ours(args.worker, work, folder, data, args)
            b = peer(work, folder, args)
            mine.append(a)
            theirs.append(b)
            ratios.append(b / a)
            print(f"round {r + 1}: ours {a * 1e3:.1f} ms/step, DTensor {b * 1e3:.1f} ms/step, ratio {b / a:.2f}",
                  flush=True)
        print(f"| tp 2 on 2 CPU ranks, Llama {parameters / 1e6:.1f} M, block {BLOCK}, batch {BATCH} | "
              f"{statistics.median(mine) * 1e3:.1f} ms | {statistics.median(theirs) * 1e3:.1f} ms | "
              f"{statistics.median(ratios):.2f}x |")
        print(f"BENCH tp2 ours_ms={statistics.median(mine) * 1e3:.1f} dtensor_ms={statistics.median(theirs) * 1e3:.1f} "
              f"ratio={statistics.median(ratios):.2f} rounds={rounds}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
