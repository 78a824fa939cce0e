#!/usr/bin/env python3
"""Sharding benchmark: accel-worker's gpt recipe (n_layer 4, n_head 4, n_embd 256, context 128,
batch 8 per rank, AdamW; 2 ranks x 1 thread) under each sharding strategy against DDP, and every
FSDP strategy PyTorch runs on CPU (FSDP1 FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD,
HYBRID_SHARD_ZERO2; FSDP2 with and without reshard_after_forward) against PyTorch's own FSDP in
Python on the same torch (reference_fsdp.py); FULL_SHARD also with prefetch of the next unit. --only runs some strategies
(and DDP). Throughput over 30 steps after 10 warm-up steps, ACCEL_BENCH_ROUNDS (default 3)
back-to-back rounds, medians; one BENCH line per strategy.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("run_bench_runtime", os.path.join(HERE, "..", "runtime", "run_bench.py"))
runtime = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runtime)

STRATEGIES = {
    "DDP": {},
    "ZeRO-1": {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "1"},
    "ZeRO-2": {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "2"},
    "ZeRO-3": {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3"},
    "FULL_SHARD": {"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "FULL_SHARD",
                   "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP"},
    "SHARD_GRAD_OP": {"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "SHARD_GRAD_OP",
                      "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP"},
    "NO_SHARD": {"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "NO_SHARD",
                 "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP"},
    # Hybrid: shard within the node, replicate across nodes; the benchmark's 2 ranks are one node.
    "HYBRID_SHARD": {"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "HYBRID_SHARD",
                     "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP"},
    "HYBRID_SHARD_ZERO2": {"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "HYBRID_SHARD_ZERO2",
                           "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP"},
    "FSDP2": {"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": "2", "FSDP_RESHARD_AFTER_FORWARD": "true",
              "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP"},
    "FSDP2_no_reshard": {"ACCELERATE_USE_FSDP": "true", "FSDP_VERSION": "2", "FSDP_RESHARD_AFTER_FORWARD": "false",
                         "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP"},
    # FULL_SHARD with the next unit's all-gather in flight while a unit computes (forward_prefetch,
    # BACKWARD_PRE); FULL_SHARD above prefetches nothing.
    "FULL_SHARD_prefetch": {"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "FULL_SHARD",
                            "FSDP_AUTO_WRAP_POLICY": "TRANSFORMER_BASED_WRAP", "FSDP_FORWARD_PREFETCH": "true",
                            "FSDP_BACKWARD_PREFETCH": "BACKWARD_PRE"},
}
SHARDING_VARIABLES = sorted({key for env in STRATEGIES.values() for key in env})
# Every strategy PyTorch's FSDP runs on CPU, as reference_fsdp.py names it (DeepSpeed's ZeRO stages
# have no PyTorch peer here: DeepSpeed is not installed).
PEER_STRATEGY = {"FULL_SHARD": "FULL_SHARD", "SHARD_GRAD_OP": "SHARD_GRAD_OP", "NO_SHARD": "NO_SHARD",
                 "HYBRID_SHARD": "HYBRID_SHARD", "HYBRID_SHARD_ZERO2": "HYBRID_SHARD_ZERO2",
                 "FSDP2": "fully_shard:true", "FSDP2_no_reshard": "fully_shard:false"}


def ours(worker, job, strategy, run_dir):
    for key in SHARDING_VARIABLES:
        os.environ.pop(key, None)
    os.environ.update(STRATEGIES[strategy])
    try:
        return runtime.worker_throughput(worker, job, 2, run_dir)
    finally:
        for key in SHARDING_VARIABLES:
            os.environ.pop(key, None)


def pytorch_fsdp(strategy):
    cmd = [runtime.PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--redirects", "1", "--tee", "1",
           "--monitor_interval", "0.1", "--master_port", str(runtime.free_port()),
           os.path.join(HERE, "reference_fsdp.py"), strategy, "--warmup", str(runtime.WARMUP), "--steps", str(runtime.STEPS)]
    out = subprocess.run(cmd, env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    for line in out.stdout.splitlines():
        if "RESULT" in line:
            return float(line[line.index("RESULT"):].split()[2])
    sys.exit("reference_fsdp.py failed:\n" + out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--only", help="comma-separated strategies (default: all)")
    args = parser.parse_args()
    if args.only:
        unknown = set(args.only.split(",")) - set(STRATEGIES)
        if unknown:
            parser.error(f"--only: unknown {', '.join(sorted(unknown))}; valid: {', '.join(STRATEGIES)}")
        for name in list(STRATEGIES):
            if name not in args.only.split(",") and name != "DDP":
                del STRATEGIES[name]
    work = tempfile.mkdtemp(prefix="accel-bench-sharding-")
    job = os.path.join(work, "gpt.yaml")
    with open(job, "w") as f:
        f.write(f"recipe: gpt\nmodel: {{n_layer: 4, n_head: 4, n_embd: 256, block_size: 128}}\n"
                f"data: {{corpus: {args.corpus}, eval_fraction: 0}}\nsample: {{length: 0}}\n"
                f"training: {{max_steps: {runtime.WARMUP + runtime.STEPS}, log_every: 10, resume: none, shuffle: true, "
                "batch_size: 8, learning_rate: 3.0e-4, weight_decay: 0.01}\n")
    rounds = int(os.environ.get("ACCEL_BENCH_ROUNDS", "3"))
    results = {name: [] for name in STRATEGIES}
    peers = {name: [] for name in PEER_STRATEGY if name in STRATEGIES}
    median = lambda values: sorted(values)[len(values) // 2]
    for r in range(rounds):
        # Each strategy's peer right after it: on a shared machine both see the same load.
        for name in STRATEGIES:
            results[name].append(ours(args.worker, job, name, os.path.join(work, "run")))
            if name in peers:
                peers[name].append(pytorch_fsdp(PEER_STRATEGY[name]))
        print(f"# round {r + 1}: " + ", ".join(f"{n} {v[-1]:.2f}" for n, v in results.items()) + "; PyTorch FSDP "
              + ", ".join(f"{n} {v[-1]:.2f}" for n, v in peers.items()) + " samples/s", flush=True)
    ddp = median(results["DDP"])
    for name, values in results.items():
        line = f"BENCH sharding_gpt_2x1_{name.lower().replace('-', '')}_samples_per_s {median(values):.2f} samples/s " \
               f"vs_ddp={median(values) / ddp:.3f}"
        if name in peers:
            ratios = [o / p for o, p in zip(values, peers[name])]
            line += f" peer={median(peers[name]):.2f} ratio={median(ratios):.3f} target>=1.0x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
