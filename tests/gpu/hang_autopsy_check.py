#!/usr/bin/env python3
"""The hang autopsy on GPUs (docs/hang-autopsy.md): NCCL's flight recorder in `accel stack`.

Needs 2 GPUs and a build with CUDA (libaccel_runtime_cuda.so beside libaccel_runtime.so):

    .venv/bin/python tests/gpu/hang_autopsy_check.py [--build build]

A gpt job on 2 GPUs (NCCL) where rank 1 waits in a barrier the other rank never enters
(ACCEL_FAULT_EXTRA_BARRIER=1:3); the supervisor's hang_suspected (ACCEL_HANG_MINIMUM_S=2) runs
`accel stack`. Passes when both ranks' capture carries `nccl_flight_recorder` with entries whose
last one names an NCCL collective (profiling_name "nccl:..."). NCCL implements barrier as a
one-element all_reduce, so unlike gloo the two ranks' calls may pair up and the hang come a step
later; the line printed shows each rank's group and last flight-recorder entry as they were.
Prints one line and exits non-zero on failure.
"""
import argparse, json, os, subprocess, sys, tempfile, time

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(SOURCE, "build"))
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    accel = os.path.join(args.build, "bin", "accel")
    work = tempfile.mkdtemp(prefix="accel-hang-autopsy-")
    run_dir = os.path.join(work, "run")
    job = os.path.join(work, "job.yaml")
    corpus = os.path.join(SOURCE, "resources", "corpus", "corpus.txt")
    with open(job, "w") as f:
        f.write(f"recipe: gpt\noutput_dir: {os.path.join(work, 'out')}\n"
                "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32}\n"
                f"data: {{corpus: {corpus}}}\n"
                "training: {max_steps: 100000, batch_size: 4, log_every: 1, eval_every: 0, checkpoint_every: 0}\n")
    env = dict(os.environ, ACCEL_FAULT_EXTRA_BARRIER="1:3", ACCEL_HANG_MINIMUM_S="2")
    launch = subprocess.Popen([accel, "launch", "--num_processes", "2", "--gpu_ids", "0,1", "--main_process_port",
                               "0", "--run_dir", run_dir, "--job", job], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stacks = os.path.join(run_dir, "stacks.json")
    deadline = time.monotonic() + args.timeout
    while not os.path.exists(stacks) and time.monotonic() < deadline and launch.poll() is None:
        time.sleep(0.2)
    ok, detail = False, "no stacks.json (did hang_suspected fire? see " + run_dir + ")"
    if os.path.exists(stacks):
        with open(stacks) as f:
            autopsy = json.load(f)
        ranks = {r["rank"]: r for r in autopsy["ranks"]}
        groups = {rank: g for g in autopsy["groups"] for rank in g["ranks"]}
        recorders = [ranks.get(r, {}).get("nccl_flight_recorder", {}) for r in (0, 1)]
        lasts = [(rec.get("entries") or [{}])[-1] for rec in recorders]
        ok = (all(rec.get("entries") for rec in recorders)
              and all(str(last.get("profiling_name", "")).startswith("nccl:") for last in lasts))
        detail = "; ".join(f"rank {r}: {groups.get(r, {}).get('summary')}, flight recorder last "
                           f"{lasts[r].get('profiling_name')} #{lasts[r].get('collective_seq_id')} {lasts[r].get('state')}"
                           for r in (0, 1))
    subprocess.run([accel, "stop", run_dir, "--timeout", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    launch.wait(timeout=30)
    print(f"NCCL flight recorder in the hang autopsy: {detail} -> {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
