#!/usr/bin/env python3
"""Training step time of accel-worker's causal_lm recipe on a 2-rank device mesh (2 CPU ranks, DDP strategy,
1 thread per rank) against PyTorch's own parallelism in Python on the same torch (torchrun, gloo), on the
same random Llama saved by transformers (hidden 512, intermediate 1408, 4 layers, 8 heads, 4 key/value
heads, vocabulary 4096), the same packed windows (shuffle off), float32, AdamW lr 5e-5 weight decay 0.01,
no clipping.

--mode tp (block 128, batch 2): parallelism_config tp_size 2 against DTensor tensor parallelism
  (peer_tp.py: torch.distributed.tensor.parallel), the whole batch on both ranks of the tp group.
--mode cp (block 1024, batch 2): parallelism_config cp_size 2 with each K/V exchange strategy
  (cp_comm_strategy allgather and alltoall), each rank a half of every sequence, against PyTorch's own
  context parallelism (peer_cp.py --method context_parallel: torch.distributed.tensor.experimental.
  context_parallel, rotate methods allgather and alltoall). Where PyTorch refuses that on CPU, the
  exception it raises is printed (`PyTorch context_parallel ... refused on CPU: ...`) and ours is timed
  against the strongest peer that runs, named as what it is: DDP of the same steps, one rank per sequence
  (peer_cp.py --method ddp; not context parallel).
Step time: the median over --steps steps after --warmup steps (ours: the worker's step_time_s metric,
which also counts the batch's preparation and the logged loss's all-reduce; the peers: forward, backward,
optimizer step and zero_grad timed in the script). ACCEL_BENCH_ROUNDS (default 3) rounds, ours and the
peers interleaved in each; each round prints the load averages before and after it. The BENCH line gives
the medians over rounds and the median per-round ratio peer / ours (above 1: ours is faster).
usage: run_bench.py --worker ACCEL_WORKER [--mode tp|cp] [--block N] [--warmup N] [--steps N]
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
BATCH, RANKS = 2, 2
DEFAULTS = {"tp": {"block": 128, "warmup": 3, "steps": 10}, "cp": {"block": 1024, "warmup": 2, "steps": 6}}
STRATEGIES = ("allgather", "alltoall")
WORDS = ("river garden lantern morning silver quiet stone window harbor meadow candle winter paper "
         "orchard bridge thunder copper violet engine saddle").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load():
    return "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def prepare(work, block):
    """The corpus, a byte-level BPE tokenizer trained on it, the model, and the peers' windows."""
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
                                         max_position_embeddings=max(512, block), bos_token_id=eos,
                                         eos_token_id=eos, tie_word_embeddings=False))
    folder = os.path.join(work, "model")
    model.save_pretrained(folder)
    tok.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>"}, f)
    ids = []
    for doc in docs:
        ids += tok.encode(doc, add_special_tokens=False).ids + [eos]
    count = len(ids) // block
    windows = torch.tensor(ids[:count * block]).view(count, block)
    torch.save(windows, os.path.join(work, "windows.pt"))
    return folder, data, sum(p.numel() for p in model.parameters())


def ours(worker, work, folder, data, args, mesh, expect):
    """The median step time of accel-worker on 2 ranks with the PARALLELISM_CONFIG_* variables `mesh`."""
    run = os.path.join(work, "ours")
    shutil.rmtree(run, ignore_errors=True)
    job = os.path.join(work, "job.yaml")
    with open(job, "w") as f:
        f.write(f"recipe: causal_lm\noutput_dir: {run}\nmodel: {{path: {folder}}}\n"
                f"data: {{train: {data}, block_size: {args.block}}}\n"
                f"training: {{max_steps: {args.warmup + args.steps}, batch_size: {BATCH}, learning_rate: 5.0e-5, "
                "weight_decay: 0.01, grad_clip: 0, log_every: 1, shuffle: false, resume: none, "
                "mixed_precision: \"no\"}\n")
    port = free_port()
    processes = []
    for rank in range(RANKS):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(RANKS),
                   LOCAL_WORLD_SIZE=str(RANKS), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   ACCELERATE_USE_PARALLELISM_CONFIG="true", OMP_NUM_THREADS="1", **mesh)
        processes.append(subprocess.Popen([worker, job], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
    outputs = [p.communicate()[0] for p in processes]
    if any(p.returncode != 0 for p in processes):
        sys.exit("accel-worker failed:\n" + "\n".join(o[-3000:] for o in outputs))
    if expect not in outputs[0]:
        sys.exit(f"accel-worker did not run on {expect}:\n" + outputs[0][-3000:])
    times = []
    with open(os.path.join(run, "metrics", "rank0.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if "step_time_s" in record and record["step"] > args.warmup:
                times.append(record["step_time_s"])
    return statistics.median(times)


def peer(work, folder, args, script, extra=()):
    """The median step time of a torchrun peer; (None, refusal) when its first step raised."""
    cmd = [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", str(RANKS), "--master_port", str(free_port()),
           os.path.join(HERE, script), folder, os.path.join(work, "windows.pt"), "--steps",
           str(args.warmup + args.steps), "--batch", str(BATCH), *extra]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work,
                         env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=1800)
    times = []
    for line in out.stdout.splitlines():
        if line.startswith("REFUSED "):
            return None, line[len("REFUSED "):]
        fields = line.split()
        if len(fields) == 4 and fields[0] == "STEP" and int(fields[1]) > args.warmup:
            times.append(float(fields[2]))
    if out.returncode != 0 or len(times) != args.steps:
        sys.exit(f"{script} {' '.join(extra)} failed:\n" + out.stdout[-6000:])
    return statistics.median(times), None


def bench_tp(args, worker, work, folder, data, parameters, rounds):
    mine, theirs, ratios = [], [], []
    for r in range(rounds):
        before = load()
        a = ours(worker, work, folder, data, args, {"PARALLELISM_CONFIG_TP_SIZE": str(RANKS)}, "mesh tp 2")
        b, refusal = peer(work, folder, args, "peer_tp.py")
        if refusal:
            sys.exit("peer_tp.py: DTensor tensor parallelism refused: " + refusal)
        mine.append(a)
        theirs.append(b)
        ratios.append(b / a)
        print(f"round {r + 1}: ours {a * 1e3:.1f} ms/step, DTensor {b * 1e3:.1f} ms/step, ratio {b / a:.2f} "
              f"(load average {before} before, {load()} after)", flush=True)
    print(f"| tp 2 on 2 CPU ranks, Llama {parameters / 1e6:.1f} M, block {args.block}, batch {BATCH} | "
          f"{statistics.median(mine) * 1e3:.1f} ms | {statistics.median(theirs) * 1e3:.1f} ms | "
          f"{statistics.median(ratios):.2f}x |")
    print(f"BENCH tp2 ours_ms={statistics.median(mine) * 1e3:.1f} dtensor_ms={statistics.median(theirs) * 1e3:.1f} "
          f"ratio={statistics.median(ratios):.2f} rounds={rounds}")


def bench_cp(args, worker, work, folder, data, parameters, rounds):
    # PyTorch's own context parallelism first: where it runs it is the peer, where it refuses the
    # refusal is reported and DDP of the same steps is the peer, under its own name.
    peers, refusals = [], {}
    for rotate in STRATEGIES:
        seconds, refusal = peer(work, folder, args, "peer_cp.py", ("--method", "context_parallel", "--rotate", rotate))
        if refusal:
            refusals[rotate] = refusal
            print(f"PyTorch context_parallel (rotate method {rotate}) refused on CPU: {refusal}", flush=True)
        else:
            peers.append((f"context_parallel {rotate}", ("--method", "context_parallel", "--rotate", rotate)))
    peers.append(("DDP one rank per sequence (not context parallel)", ("--method", "ddp")))
    mine = {s: [] for s in STRATEGIES}
    theirs = {name: [] for name, _ in peers}
    ratios = {(s, name): [] for s in STRATEGIES for name, _ in peers}
    for r in range(rounds):
        before = load()
        for strategy in STRATEGIES:
            mine[strategy].append(ours(worker, work, folder, data, args,
                                       {"PARALLELISM_CONFIG_CP_SIZE": str(RANKS),
                                        "PARALLELISM_CONFIG_CP_COMM_STRATEGY": strategy},
                                       f"cp {RANKS}, {strategy} exchange"))
        for name, extra in peers:
            seconds, refusal = peer(work, folder, args, "peer_cp.py", extra)
            if refusal:
                sys.exit(f"peer_cp.py {' '.join(extra)} refused in round {r + 1}: {refusal}")
            theirs[name].append(seconds)
        for strategy in STRATEGIES:
            for name, _ in peers:
                ratios[(strategy, name)].append(theirs[name][-1] / mine[strategy][-1])
        print(f"round {r + 1}: " + ", ".join(f"ours {s} {mine[s][-1] * 1e3:.1f} ms/step" for s in STRATEGIES) + ", " +
              ", ".join(f"{name} {theirs[name][-1] * 1e3:.1f} ms/step" for name, _ in peers) +
              f" (load average {before} before, {load()} after)", flush=True)
    for strategy in STRATEGIES:
        for name, _ in peers:
            each = ", ".join(f"{x:.2f}" for x in ratios[(strategy, name)])
            print(f"| cp 2 {strategy} on 2 CPU ranks, Llama {parameters / 1e6:.1f} M, block {args.block}, "
                  f"batch {BATCH} | {statistics.median(mine[strategy]) * 1e3:.1f} ms | {name} "
                  f"| {statistics.median(theirs[name]) * 1e3:.1f} ms "
                  f"| {statistics.median(ratios[(strategy, name)]):.2f}x (rounds {each}) |")
    fields = [f"ours_{s}_ms={statistics.median(mine[s]) * 1e3:.1f}" for s in STRATEGIES]
    for name, _ in peers:
        key = name.split(" (")[0].replace(" ", "_")
        fields.append(f"{key}_ms={statistics.median(theirs[name]) * 1e3:.1f}")
        fields += [f"ratio_{key}_{s}={statistics.median(ratios[(s, name)]):.2f}" for s in STRATEGIES]
    fields += [f"context_parallel_{s}={'refused' if s in refusals else 'ran'}" for s in STRATEGIES]
    print(f"BENCH cp2 block={args.block} " + " ".join(fields) + f" rounds={rounds}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--mode", choices=tuple(DEFAULTS), default="tp")
    parser.add_argument("--block", type=int)
    parser.add_argument("--warmup", type=int)
    parser.add_argument("--steps", type=int)
    args = parser.parse_args()
    for key, value in DEFAULTS[args.mode].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    rounds = int(os.environ.get("ACCEL_BENCH_ROUNDS", "3"))
    work = tempfile.mkdtemp(prefix="bench-parallel-")
    try:
        folder, data, parameters = prepare(work, args.block)
        bench = bench_tp if args.mode == "tp" else bench_cp
        bench(args, args.worker, work, folder, data, parameters, rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
