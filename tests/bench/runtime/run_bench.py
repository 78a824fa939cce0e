#!/usr/bin/env python3
"""Runtime benchmark: accel-worker (our libtorch runtime, gloo) against Python DDP under torchrun.

(a) MLP 512-2048-2048-10, batch 64 per rank, SGD momentum;
(b) GPT n_layer 4, n_head 4, n_embd 256, context 128, vocab 256, batch 8 per rank, AdamW.
Both with 1 and 2 ranks x 1 thread. Throughput is measured over 30 steps after 10 warm-up steps
(ours: from the worker's metrics windows; Python: timed in reference_ddp.py), in ACCEL_BENCH_ROUNDS
(default 3) back-to-back rounds; the BENCH lines give the medians and the median per-round ratio.
"""
import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WARMUP, STEPS = 10, 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_mlp_data(path, n=256):
    import random
    rng = random.Random(0)
    inputs = struct.pack(f"<{n * 512}f", *[rng.gauss(0, 1) for _ in range(n * 512)])
    targets = struct.pack(f"<{n}q", *[rng.randrange(10) for _ in range(n)])
    header = json.dumps({"inputs": {"dtype": "F32", "shape": [n, 512], "data_offsets": [0, len(inputs)]},
                         "targets": {"dtype": "I64", "shape": [n], "data_offsets": [len(inputs), len(inputs) + len(targets)]}})
    header += " " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header.encode() + inputs + targets)


def worker_throughput(worker, job, world, run_dir):
    shutil.rmtree(run_dir, ignore_errors=True)
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, OMP_NUM_THREADS="1", ACCEL_RUN_DIR=run_dir)
        env.pop("ACCEL_METRICS_FILE", None)
        if world > 1:
            env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([worker, job], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate()[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        sys.exit("accel-worker failed:\n" + "\n".join(outputs))
    windows = []
    with open(os.path.join(run_dir, "metrics", "rank0.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if "samples_per_s" in record and record["step"] > WARMUP:
                windows.append((record["step_time_s"], record["samples_per_s"]))
    # Harmonic mean over the windows = total samples / total time.
    total_time = sum(t for t, _ in windows)
    total_samples = sum(t * s for t, s in windows)
    return total_samples / total_time


# The peer runs on the interpreter of the project's Python environment (this script's), same torch as ours.
PYTHON = os.environ.get("ACCEL_BENCH_PYTHON") or sys.executable


def python_throughput(model, world):
    cmd = [PYTHON, os.path.join(HERE, "reference_ddp.py"), model, "--warmup", str(WARMUP), "--steps", str(STEPS)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if world > 1:
        cmd = [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", str(world), "--redirects", "1", "--tee", "1",
               "--monitor_interval", "0.1", "--master_port", str(free_port())] + cmd[1:]
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in out.stdout.splitlines():
        if "RESULT" in line:
            fields = line[line.index("RESULT"):].split()
            return float(fields[2]), float(fields[4])
    sys.exit("reference_ddp.py failed:\n" + out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--only", choices=["mlp", "gpt"])
    args = parser.parse_args()
    # Both sides run the same libtorch (the project environment's PyTorch wheel, with its own BLAS).
    caps = json.loads(subprocess.run([args.worker, "--capabilities", "--json"], stdout=subprocess.PIPE, text=True).stdout)
    import torch
    print(f"# accel-worker: libtorch {caps.get('torch_version')}, BLAS {caps.get('blas')}; "
          f"Python peer: torch {torch.__version__} ({sys.executable})", flush=True)
    work = tempfile.mkdtemp(prefix="accel-bench-runtime-")
    write_mlp_data(os.path.join(work, "mlp.safetensors"))
    common = f"training: {{max_steps: {WARMUP + STEPS}, log_every: 10, resume: none, shuffle: true, "
    with open(os.path.join(work, "mlp.yaml"), "w") as f:
        f.write("recipe: mlp\nmlp: {data: mlp.safetensors, hidden: [2048, 2048], classes: 10, optimizer: sgd, momentum: 0.9}\n"
                + common + "batch_size: 64, learning_rate: 0.01}\n")
    with open(os.path.join(work, "gpt.yaml"), "w") as f:
        f.write(f"recipe: gpt\nmodel: {{n_layer: 4, n_head: 4, n_embd: 256, block_size: 128}}\ndata: {{corpus: {args.corpus}, eval_fraction: 0}}\n"
                "sample: {length: 0}\n" + common + "batch_size: 8, learning_rate: 3.0e-4, weight_decay: 0.01}\n")
    rounds = int(os.environ.get("ACCEL_BENCH_ROUNDS", "3"))
    for model, target in (("mlp", ">=1.15x"), ("gpt", ">=1.0x")):
        if args.only and args.only != model:
            continue
        job = os.path.join(work, model + ".yaml")
        # Rounds of ours then Python back to back: a shared machine's speed drifts between runs far
        # more than the difference measured, so each round gives a ratio and the median is reported.
        per_round = []
        for r in range(rounds):
            ours1 = worker_throughput(args.worker, job, 1, os.path.join(work, "run1"))
            ours2 = worker_throughput(args.worker, job, 2, os.path.join(work, "run2"))
            py1 = python_throughput(model, 1)[0]
            py2 = python_throughput(model, 2)[0]
            per_round.append((ours1, ours2, py1, py2))
            print(f"# {model} round {r + 1}: 1 rank {ours1:.1f} vs {py1:.1f} ({ours1 / py1:.3f}x), "
                  f"2 ranks {ours2:.1f} vs {py2:.1f} ({ours2 / py2:.3f}x) samples/s", flush=True)
        median = lambda values: sorted(values)[len(values) // 2]
        ours1, ours2, py1, py2 = (median([row[i] for row in per_round]) for i in range(4))
        ratio2 = median([row[1] / row[3] for row in per_round])
        ratio1 = median([row[0] / row[2] for row in per_round])
        tokens = 128 if model == "gpt" else 0
        name = "runtime_mlp_2x1_samples_per_s" if model == "mlp" else "runtime_gpt_2x1_tokens_per_s"
        scale = tokens if tokens else 1
        unit = "tokens/s" if tokens else "samples/s"
        print(f"BENCH {name} {ours2 * scale:.1f} {unit} peer={py2 * scale:.1f} ratio={ratio2:.3f} target={target}", flush=True)
        print(f"BENCH runtime_{model}_1x1_{'tokens' if tokens else 'samples'}_per_s {ours1 * scale:.1f} {unit} peer={py1 * scale:.1f} "
              f"ratio={ratio1:.3f}", flush=True)
        print(f"BENCH runtime_{model}_scaling_efficiency_2_ranks {ours2 / (2 * ours1):.3f} fraction peer={py2 / (2 * py1):.3f}", flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
