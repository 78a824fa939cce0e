#!/usr/bin/env python3
"""Collective bandwidth benchmark: 2 ranks of `accel-runtime-probe collectives` (1 thread each, loopback)
time float32 reduce-scatter and all-gather of 64 KiB .. 64 MiB (the size of the whole buffer:
reduce-scatter's input, all-gather's output) three ways on the same bytes:
  shm   the sharding engine's shared-memory collectives (core/runtime/shmcollectives.h)
  pg    the engine's ProcessGroupCollectives over gloo
  c10d  the gloo process group's own _reduce_scatter_base / _allgather_base, called directly
Each figure is the median of ACCEL_BENCH_ROUNDS (default 5) rounds of ~0.1 s of calls. Prints a
table (microseconds per call, GB/s of the whole buffer, c10d / ours ratios: > 1 means ours is
faster) and one BENCH line per operation and size.
"""
import argparse
import os
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--probe", required=True)
    parser.add_argument("--sizes", default="64,256,1024,4096,16384,65536", help="KiB, comma-separated")
    args = parser.parse_args()
    port = free_port()
    rounds = os.environ.get("ACCEL_BENCH_ROUNDS", "5")
    ranks = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        ranks.append(subprocess.Popen([args.probe, "collectives", "bench", "sizes=" + args.sizes, "rounds=" + rounds], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate() for p in ranks]
    for p, (out, err) in zip(ranks, outputs):
        if p.returncode != 0:
            sys.exit(f"accel-runtime-probe collectives failed ({p.returncode}):\n{out}\n{err}")
    rows = [line.split()[1:] for line in outputs[0][0].splitlines() if line.startswith("bench ")]
    print(f"# 2 ranks, float32, medians of {rounds} rounds; ratio = c10d time / ours (> 1: ours faster)")
    print(f"{'operation':15} {'bytes':>10} {'shm us':>10} {'pg us':>10} {'c10d us':>10} {'shm GB/s':>9} "
          f"{'c10d GB/s':>9} {'c10d/shm':>9} {'c10d/pg':>8}")
    for op, size, shm, pg, raw in rows:
        size, shm, pg, raw = int(size), float(shm), float(pg), float(raw)
        print(f"{op:15} {size:>10} {shm:>10.1f} {pg:>10.1f} {raw:>10.1f} {size / shm / 1e3:>9.2f} "
              f"{size / raw / 1e3:>9.2f} {raw / shm:>9.2f} {raw / pg:>8.2f}", flush=True)
    for op, size, shm, pg, raw in rows:
        size, shm, pg, raw = int(size), float(shm), float(pg), float(raw)
        kib = size // 1024
        print(f"BENCH collectives_{op}_{kib}KiB_shm {size / shm / 1e3:.3f} GB/s peer={size / raw / 1e3:.3f} "
              f"ratio={raw / shm:.3f} target=>=1.0x")
        print(f"BENCH collectives_{op}_{kib}KiB_process_group {size / pg / 1e3:.3f} GB/s peer={size / raw / 1e3:.3f} "
              f"ratio={raw / pg:.3f} target=>=1.0x")


if __name__ == "__main__":
    main()
