#!/usr/bin/env python3
"""The checkpoint kill matrix (docs/security.md): SIGKILL of rank 0 of a 2-rank `gpt` job inside a
checkpoint save or inside the rotation that removes old ones, for DDP, FSDP2 and ZeRO-3 under
checkpoint_total_limit 1, 2 and 3. After every kill, every checkpoint_<n> left must be whole and a
new launch with `resume: auto` must resume from the newest one and succeed; a cycle that ends
without a loadable checkpoint after one had been published is a failure.

Not part of the test suite (it runs for many minutes). Usage:

    packaging/checkpoint-kill-matrix.py [--bin build/bin] [--cycles 3] [--seed N]
        [--strategies ddp,fsdp2,zero3] [--limits 1,2,3] [--points save,rotation] [--keep]

It prints one line per cycle and a table of counts per cell; exit 1 when a cycle failed.
Kills land on inotify events of the checkpoints folder: inside a save, a random 0-40 ms after
`checkpoint_<k>.partial` is created (k past the first published one); inside a rotation, as soon
as an old checkpoint is renamed to its trash name `.deleting-checkpoint_<n>`, while it is removed.
"""
import argparse
import ctypes
import json
import os
import random
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

IN_CREATE = 0x100
IN_MOVED_TO = 0x80
STRATEGIES = {  # on a machine without GPUs (accel launch takes one of --cpu, --use_fsdp, --use_deepspeed)
    "ddp": ["--cpu"],
    "fsdp2": ["--use_fsdp", "--fsdp_version", "2"],
    "zero3": ["--use_deepspeed", "--zero_stage", "3"],
}
EVERY = 2
STEPS = 24

libc = ctypes.CDLL(None, use_errno=True)


class Watch:
    """inotify on one folder: names created in it or moved into it, as they happen."""

    def __init__(self, folder):
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, folder.encode(), IN_CREATE | IN_MOVED_TO) < 0:
            raise OSError(ctypes.get_errno(), "inotify")

    def events(self, timeout):
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        data = os.read(self.fd, 65536)
        out, offset = [], 0
        while offset < len(data):
            _, mask, _, length = struct.unpack_from("iIII", data, offset)
            name = data[offset + 16:offset + 16 + length].rstrip(b"\0").decode()
            out.append((mask, name))
            offset += 16 + length
        return out

    def close(self):
        os.close(self.fd)


def write_job(folder, out, steps, limit):
    corpus = os.path.join(folder, "corpus.txt")
    if not os.path.exists(corpus):
        rng = random.Random(1234)
        words = "the quick brown fox jumps over a lazy dog "
        with open(corpus, "w") as f:
            f.write("".join(words[rng.randrange(30):][:12] for _ in range(4000)))
    path = os.path.join(folder, "job-%d.yaml" % steps)
    with open(path, "w") as f:
        f.write("recipe: gpt\nname: killmatrix\nseed: 7\noutput_dir: %s\n"
                "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16, dropout: 0.0}\n"
                "data: {corpus: %s, eval_fraction: 0.05}\n"
                "training: {max_steps: %d, batch_size: 4, learning_rate: 1.0e-3, log_every: 2, "
                "checkpoint_every: %d, checkpoint_total_limit: %d, resume: auto, timeout_s: 30}\n"
                % (out, corpus, steps, EVERY, limit))
    return path


def launch_args(accel, strategy, run_dir, job):
    return [accel, "launch", "--num_processes", "2", "--main_process_port", "0",
            "--grace_period", "1", "--no_mirror", "--system_sample_hz", "0", "--run_dir", run_dir] + \
        STRATEGIES[strategy] + ["--job", job]


def rank0_pid(run_dir):
    try:
        with open(os.path.join(run_dir, "run.json")) as f:
            ranks = json.load(f).get("ranks", [])
        for rank in ranks:
            if rank.get("rank") == 0 and rank.get("result") == "running":
                return int(rank["pid"])
    except (OSError, ValueError, KeyError):
        pass
    return 0


def numbered(checkpoints):
    found = []
    for name in os.listdir(checkpoints):
        m = re.fullmatch(r"checkpoint_(\d+)", name)
        if m and os.path.isdir(os.path.join(checkpoints, name)):
            found.append(int(m.group(1)))
    return sorted(found)


def cycle(args, strategy, limit, point, rng, base):
    folder = tempfile.mkdtemp(prefix="cell-", dir=base)
    out = os.path.join(folder, "out")
    checkpoints = os.path.join(out, "checkpoints")
    os.makedirs(checkpoints)
    job = write_job(folder, out, STEPS, limit)
    run_dir = os.path.join(folder, "run1")
    watch = Watch(checkpoints)
    launch = subprocess.Popen(launch_args(args.accel, strategy, run_dir, job), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    published = 0
    # Inside a save: a save after the first published one; inside a rotation: the first removal
    # (with limit L, after save L + 1), or a later one.
    target_save = rng.randrange(1, STEPS // EVERY - 1)
    killed, where, pid = False, "", 0
    deadline = time.time() + 240
    while launch.poll() is None and time.time() < deadline and not killed:
        pid = pid or rank0_pid(run_dir)
        for mask, name in watch.events(0.2):
            if mask & IN_MOVED_TO and re.fullmatch(r"checkpoint_\d+", name):
                published += 1
            elif point == "save" and mask & IN_CREATE and name == "checkpoint_%d.partial" % target_save:
                time.sleep(rng.uniform(0, 0.04))
                partial_before = os.path.isdir(os.path.join(checkpoints, name))
                pid = pid or rank0_pid(run_dir)
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    killed = True
                    still = os.path.isdir(os.path.join(checkpoints, name))
                    where = "inside save %d" % target_save if (partial_before and still) else \
                        "after save %d was published" % target_save
                break
            elif point == "rotation" and mask & IN_MOVED_TO and name.startswith(".deleting-checkpoint_"):
                if published < limit + 1 or rng.random() < 0.5 or published >= STEPS // EVERY - 1:
                    pid = pid or rank0_pid(run_dir)
                    if pid:
                        os.kill(pid, signal.SIGKILL)
                        killed = True
                        time.sleep(0.05)
                        where = ("inside the removal of %s" if os.path.isdir(os.path.join(checkpoints, name))
                                 else "after the removal of %s") % name[len(".deleting-"):]
                    break
    watch.close()
    try:
        launch.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(launch.pid, signal.SIGKILL)
        launch.wait()
    left = numbered(checkpoints)
    trash = [n for n in os.listdir(checkpoints) if n.startswith(".deleting-")]
    result = {"strategy": strategy, "limit": limit, "point": point, "killed": killed, "where": where,
              "published": published, "left": left, "trash": trash}
    if not killed:
        log = os.path.join(run_dir, "logs", "rank0.log")
        last = (open(log, errors="replace").read().strip().splitlines() or [""])[-1][:160] if os.path.exists(log) else ""
        result["verdict"] = "no kill (the run ended first: exit %s; %s)" % (launch.returncode, last)
        result["ok"] = None
    elif published == 0:
        result["verdict"] = "killed before any checkpoint was published"
        result["ok"] = None
    elif not left:
        result["verdict"] = "FAIL: no checkpoint left after %d published" % published
        result["ok"] = False
    else:
        # Loadable: a new launch resumes from the newest one and succeeds.
        newest = left[-1]
        resume_job = write_job(folder, out, (newest + 1) * EVERY + EVERY, limit)
        resumed = subprocess.run(launch_args(args.accel, strategy, os.path.join(folder, "run2"), resume_job),
                                 capture_output=True, text=True, timeout=300)
        log = open(os.path.join(folder, "run2", "logs", "rank0.log"), errors="replace").read() \
            if os.path.exists(os.path.join(folder, "run2", "logs", "rank0.log")) else ""
        step = (newest + 1) * EVERY
        if resumed.returncode == 0 and ("resumed from step %d (" % step) in log:
            result["verdict"] = "resumed from checkpoint_%d (step %d)" % (newest, step)
            result["ok"] = True
        else:
            result["verdict"] = "FAIL: resume from checkpoint_%d: exit %d; %s" % (
                newest, resumed.returncode, (log.strip().splitlines() or [""])[-1][:200])
            result["ok"] = False
    if not args.keep and result["ok"] is not False:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        result["folder"] = folder
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--strategies", default="ddp,fsdp2,zero3")
    parser.add_argument("--limits", default="1,2,3")
    parser.add_argument("--points", default="save,rotation")
    parser.add_argument("--keep", action="store_true", help="keep every cycle's folder")
    args = parser.parse_args()
    args.accel = os.path.join(os.path.abspath(args.bin), "accel")
    print("seed %d" % args.seed, flush=True)
    rng = random.Random(args.seed)
    base = tempfile.mkdtemp(prefix="killmatrix-")
    cells = {}
    for strategy in args.strategies.split(","):
        for limit in [int(v) for v in args.limits.split(",")]:
            for point in args.points.split(","):
                counts = cells.setdefault((strategy, limit, point), {"cycles": 0, "inside": 0, "ok": 0, "fail": 0,
                                                                      "skipped": 0})
                for n in range(args.cycles):
                    r = cycle(args, strategy, limit, point, rng, base)
                    counts["cycles"] += 1
                    counts["inside"] += 1 if r["where"].startswith("inside") else 0
                    key = "ok" if r["ok"] else ("fail" if r["ok"] is False else "skipped")
                    counts[key] += 1
                    print("%-5s limit %d %-8s cycle %d: killed %s; published %d, left %s%s; %s" % (
                        strategy, limit, point, n + 1, r["where"] or "-", r["published"], r["left"],
                        " trash %s" % r["trash"] if r["trash"] else "", r["verdict"] +
                        (" (%s)" % r["folder"] if "folder" in r else "")), flush=True)
    print("\n| strategy | limit | kill | cycles | inside | resumed | without a loadable checkpoint | not counted |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    failed = 0
    for (strategy, limit, point), c in cells.items():
        failed += c["fail"]
        print("| %s | %d | %s | %d | %d | %d | %d | %d |" % (strategy, limit, point, c["cycles"], c["inside"], c["ok"],
                                                           c["fail"], c["skipped"]))
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
