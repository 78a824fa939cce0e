#!/usr/bin/env bash
# Renders every page of accel-studio to docs/screenshots/<view>-<size>-<theme>.png at 1600x1000
# and 1024x700, light and dark. Uses a virtual X server (xvfb-run) when there is one, else Qt's
# offscreen platform. The Configure page is shown with a sample FSDP config that has one mistake,
# so the picture includes a validation message; the Launch page with the first-run demo in the
# recipe form; the Runs page with a sample run (progress, per-rank CPU and memory), a failed run
# with its triage card (runs-failed) and a stopped one (runs-stopped); and, when accel-worker is
# built, the Monitor following the real demo (2 CPU ranks) while it trains (monitor-demo) and its
# Memory tab (monitor-memory). Also the config wizard (wizard), the Playground tab (playground) and
# Tools > Compare FP8 Recipes after a real short comparison (fp8-compare). When the screenshot
# fixture is built (target screenshotfixture: the tests' sshd on loopback and single-node SLURM
# cluster), also the Hardware page's Cluster tab with its host check and the SLURM queue of jobs
# submitted with `accel slurm submit` (cluster) and the Runs page listing a host's runs over SSH
# (runs-remote). When tst_scriptlaunch is built, a user's argparse script launched from the studio
# and followed live, the studio reopened mid-run, and a 3-rank run's failure card (its pictures).
# Last, real runs of a Python script logging 15 keys through the tracker: every key charted
# (monitor-keys), three runs compared (monitor-compare), the runs table (runs-table); and an
# Accelerate script that logs only to TensorBoard, its scalars charted (monitor-tensorboard).
# Usage: packaging/screenshots.sh [build dir]   (default: $ACCEL_BUILD_DIR or build/)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${ACCEL_BUILD_DIR:-$here/build}}"
build="$(cd "$build" 2>/dev/null && pwd || echo "$build")" # absolute: the SSH host's shell starts elsewhere
studio="$build/bin/accel-studio"
out="$here/docs/screenshots"
if [[ ! -x "$studio" ]]; then
  echo "screenshots.sh: $studio not found; build first (packaging/build.sh)" >&2
  exit 1
fi
mkdir -p "$out"

# A private HOME so that the pictures never show the user's recent files or window layout.
scratch="$(mktemp -d)"
fixture_pid=""
cleanup() {
  if [[ -n "$fixture_pid" ]]; then # closing its input stops sshd and the SLURM daemons
    exec 9>&-
    wait "$fixture_pid" || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
export HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home/.config" XDG_CACHE_HOME="$scratch/home/.cache"
mkdir -p "$HOME" "$scratch/runtime"
chmod 700 "$scratch/runtime"
export XDG_RUNTIME_DIR="$scratch/runtime"
mkdir -p "$HOME/llama-finetune"
sample="$HOME/llama-finetune/fsdp_config.yaml"
cat > "$sample" <<'YAML'
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: FSDP
downcast_bf16: 'no'
enable_cpu_affinity: false
fsdp_config:
  fsdp_activation_checkpointing: false
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_cpu_ram_efficient_loading: true
  fsdp_offload_params: false
  fsdp_reshard_after_forward: true
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
  fsdp_version: 2
machine_rank: 2
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 8
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
YAML

# Sample runs for the Runs page (run.json, metrics, system samples, logs and events as the launcher
# and the runtime write them): a 2-rank run with a straggler banner, a run that failed on a missing
# Python module, and a run that was stopped.
# The runs of the SSH host "accel-test" (this machine through the fixture's sshd): the remote accel
# is a wrapper whose data folder is $remote_data, so its default runs root holds only these.
remote_data="$scratch/remote-data"
python3 - "$HOME/.local/share/accel-studio/runs" "$remote_data/accel-studio/runs" <<'PY'
import json, math, os, random, sys, time
random.seed(7)
root = sys.argv[1]

def make(run_id, name, t0, state, detail=None, processes=2):
    run = os.path.join(root, run_id)
    for sub in ("logs", "metrics", "checkpoints"):
        os.makedirs(os.path.join(run, sub), exist_ok=True)
    settings = {"distributed_type": "MULTI_CPU", "num_processes": processes, "mixed_precision": "bf16", "launcher": "simple"}
    manifest = {"schema": "accel.run", "version": 1, "id": run_id, "name": name, "created": t0,
                "settings": settings, "state": state, "restarts": 0,
                "states": [{"state": state, "time": t0, **({"detail": detail} if detail else {})}]}
    json.dump(manifest, open(os.path.join(run, "run.json"), "w"))
    return run

def write_events(run, events):
    with open(os.path.join(run, "events.jsonl"), "w") as e:
        for ev in events:
            e.write(json.dumps({"v": 1, **ev}, sort_keys=True) + "\n")

def write_system(run, t0, seconds, ranks=(0, 1)):
    with open(os.path.join(run, "metrics", "system.jsonl"), "w") as s:
        for i in range(int(seconds * 2)):
            t = t0 + i * 0.5
            for rank in ranks:
                s.write(json.dumps({"v": 1, "time": t, "rank": rank, "kind": "system", "pid": 4242 + rank, "processes": 1,
                                    "cpu_percent": round(min(100, random.gauss(92, 4)), 1),
                                    "mem_rss_bytes": int(1.9e9 + rank * 6e7 + i * 2.6e5 + random.gauss(0, 4e6))}) + "\n")

# A healthy run at step 600 of 1000, rank 1 straggling since step 380.
t0 = time.time() - 900
run = make("20261122-013000-llama-finetune-5e1c", "llama-finetune", t0, "running")
with open(os.path.join(run, "job.yaml"), "w") as job:
    job.write("recipe: gpt\nname: llama-finetune\ntraining:\n  max_steps: 1000\n")
for rank in (0, 1):
    with open(os.path.join(run, "metrics", f"rank{rank}.jsonl"), "w") as m, open(os.path.join(run, "logs", f"rank{rank}.log"), "w") as log:
        for step in range(0, 602, 2):
            lr = 3e-4 * min(1.0, step / 60) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / 1000)))
            loss = 2.0 + 2.5 * math.exp(-step / 150) + random.gauss(0, 0.08)
            slow = 1.35 if rank == 1 and step > 380 else 1.0
            line = {"v": 1, "time": t0 + step * 1.4 * slow, "rank": rank, "step": step, "loss": round(loss, 4), "lr": lr,
                    "samples_per_s": round(random.gauss(520, 12) / slow, 1), "grad_norm": round(abs(random.gauss(1.2 * math.exp(-step / 300) + 0.3, 0.05)), 4),
                    "step_time_s": round(1.4 * slow, 4)}
            if step % 100 == 0 and step > 0:
                line_eval = {"v": 1, "time": line["time"], "rank": rank, "step": step, "kind": "eval", "loss": round(loss + 0.15, 4)}
                m.write(json.dumps(line_eval) + "\n")
            m.write(json.dumps(line) + "\n")
            if step % 50 == 0:
                log.write(f"step {step:4d}  loss {loss:.4f}  lr {lr:.2e}\n")
write_system(run, t0, 880)
events = [{"event": "started", "ranks": 2, "launcher": "simple", "time": t0}]
events += [{"event": "rank_started", "rank": r, "pid": 4242 + r, "attempt": 0, "time": t0 + 0.2} for r in (0, 1)]
events.append({"event": "straggler_detected", "rank": 1, "step_time_s": 0.081, "others_median_step_time_s": 0.06, "margin": 0.2,
               "source": "monitor", "time": t0 + 560})
write_events(run, events)

# A plain script that died on a missing module, its error scrolled far up the log.
t1 = time.time() - 3600
reason = "rank 0 exit 1"
run = make("20261122-010000-sentiment-ab12", "sentiment", t1, "failed", reason)
with open(os.path.join(run, "logs", "rank0.log"), "w") as log:
    log.write("loading dataset imdb\nTraceback (most recent call last):\n  File \"train.py\", line 4, in <module>\n"
              "    from peft import LoraConfig\nModuleNotFoundError: No module named 'peft'\n")
with open(os.path.join(run, "logs", "rank1.log"), "w") as log:
    log.write("loading dataset imdb\n" + "waiting for rank 0\n" * 3)
write_system(run, t1, 6)
write_events(run, [{"event": "started", "ranks": 2, "launcher": "simple", "time": t1},
                   {"event": "rank_exited", "rank": 0, "exit_code": 1, "signal": 0, "result": "exit 1", "time": t1 + 6},
                   {"event": "stopping_ranks", "reason": reason, "grace_ms": 5000, "time": t1 + 6},
                   {"event": "rank_exited", "rank": 1, "exit_code": 143, "signal": 15, "result": "signal 15 (SIGTERM)", "time": t1 + 6.2},
                   {"event": "finished", "state": "failed", "exit_code": 1, "reason": reason, "time": t1 + 6.3}])

# A run the user stopped: shown as stopped, never as failed.
t2 = time.time() - 7200
reason = "supervisor received SIGINT"
run = make("20261122-003000-mlp-sweep-77aa", "mlp-sweep", t2, "stopped", reason)
for rank in (0, 1):
    with open(os.path.join(run, "metrics", f"rank{rank}.jsonl"), "w") as m:
        for step in range(0, 240, 4):
            m.write(json.dumps({"v": 1, "time": t2 + step * 0.5, "rank": rank, "step": step,
                                "loss": round(1.2 * math.exp(-step / 80) + 0.3 + random.gauss(0, 0.03), 4), "lr": 1e-3}) + "\n")
write_system(run, t2, 120)
write_events(run, [{"event": "started", "ranks": 2, "launcher": "simple", "time": t2},
                   {"event": "stopping_ranks", "reason": reason, "grace_ms": 5000, "time": t2 + 120},
                   {"event": "rank_exited", "rank": 0, "exit_code": 143, "signal": 15, "result": "signal 15 (SIGTERM)", "time": t2 + 120.1},
                   {"event": "rank_exited", "rank": 1, "exit_code": 143, "signal": 15, "result": "signal 15 (SIGTERM)", "time": t2 + 120.1},
                   {"event": "finished", "state": "stopped", "exit_code": 130, "reason": reason, "time": t2 + 120.2}])

# On the SSH host: a 4-rank pretraining run at step 2400 of 10000 and a finished evaluation.
root = sys.argv[2]
t3 = time.time() - 3 * 3600
run = make("20261122-020000-llama-pretrain-node1-9f2c", "llama-pretrain", t3, "running", processes=4)
for rank in range(4):
    with open(os.path.join(run, "metrics", f"rank{rank}.jsonl"), "w") as m:
        for step in range(0, 2401, 20):
            m.write(json.dumps({"v": 1, "time": t3 + step * 4.2, "rank": rank, "step": step,
                                "loss": round(2.6 + 6.0 * math.exp(-step / 400) + random.gauss(0, 0.05), 4),
                                "lr": 3e-4 * min(1.0, step / 200)}) + "\n")
write_system(run, t3, 600, ranks=range(4))
write_events(run, [{"event": "started", "ranks": 4, "launcher": "simple", "time": t3}])
t4 = time.time() - 5 * 3600
run = make("20261122-000000-eval-harness-3c1d", "eval-harness", t4, "succeeded", processes=1)
write_events(run, [{"event": "started", "ranks": 1, "launcher": "simple", "time": t4},
                   {"event": "finished", "state": "succeeded", "exit_code": 0, "time": t4 + 840}])
PY

# Llama-2-70B's config.json for the Big Models page, planned for two 40 GiB GPUs and 64 GiB of RAM
# (the page plans the model it used last, remembered in the studio's settings).
mkdir -p "$HOME/llama-2-70b" "$XDG_CONFIG_HOME/AccelStudio"
cat > "$HOME/llama-2-70b/config.json" <<'JSON'
{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 8192, "intermediate_size": 28672,
 "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 32000,
 "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "torch_dtype": "float16"}
JSON
cat >> "$XDG_CONFIG_HOME/AccelStudio/accel-studio.conf" <<INI
[bigmodels]
deviceMap\\model=$HOME/llama-2-70b
deviceMap\\budgets="0=40GiB,1=40GiB,cpu=64GiB"
deviceMap\\strategy=balanced
deviceMap\\dtype=float16
INI

run() {
  if command -v xvfb-run >/dev/null; then
    xvfb-run -a -s "-screen 0 1700x1100x24" "$studio" "$@"
  else
    QT_QPA_PLATFORM=offscreen "$studio" "$@"
  fi
}

sizes=(1600x1000 1024x700)
themes=(light dark)
# shot NAME [studio arguments...]: NAME-<size>-<theme>.png for every size and theme.
shot() {
  local name="$1"
  shift
  for size in "${sizes[@]}"; do
    for theme in "${themes[@]}"; do
      ACCEL_STUDIO_SCREENSHOT_SIZE="$size" run --theme "$theme" "$@" --screenshot "$out/$name-$size-$theme.png"
    done
  done
}

shot hardware --page hardware
shot configure --page configure --config "$sample"
shot launch --page launch --demo # the demo job in the recipe form, 2 CPU ranks
shot runs --page runs
ACCEL_STUDIO_SCREENSHOT_RUN=20261122-010000-sentiment-ab12 shot runs-failed --page runs
ACCEL_STUDIO_SCREENSHOT_RUN=20261122-003000-mlp-sweep-77aa shot runs-stopped --page runs
shot bigmodels --page bigmodels
for theme in "${themes[@]}"; do # the wizard is a 960x700 dialog whatever the window's size
  ACCEL_STUDIO_SCREENSHOT_VIEW=wizard run --theme "$theme" --page configure --screenshot "$out/wizard-$theme.png"
done
ACCEL_STUDIO_SCREENSHOT_VIEW=playground shot playground --page bigmodels
for theme in "${themes[@]}"; do # a 1024x700 dialog whatever the window's size
  ACCEL_STUDIO_SCREENSHOT_VIEW=fp8compare ACCEL_STUDIO_SCREENSHOT_FP8="gpt-tiny:120" \
    run --theme "$theme" --page hardware --screenshot "$out/fp8-compare-$theme.png"
done

# The tests' sshd and SLURM cluster (tests/helpers), kept by screenshotfixture until its input
# (fd 9) closes at exit.
fixture="$build/bin/screenshotfixture"
if [[ -x "$fixture" && -x "$build/bin/accel" ]]; then
  mkfifo "$scratch/fixture.in"
  "$fixture" "$scratch/fixture" <"$scratch/fixture.in" >"$scratch/fixture.out" 2>"$scratch/fixture.err" &
  fixture_pid=$!
  exec 9>"$scratch/fixture.in"
  for _ in $(seq 1 600); do
    [[ -s "$scratch/fixture.out" ]] && break
    sleep 0.2
  done
  field() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline()).get(sys.argv[2], ""))' "$scratch/fixture.out" "$1"; }
  ssh_dir="$(field ssh_dir)"
  if [[ -n "$ssh_dir" ]]; then
    host="$(field alias)"
    slurm_conf="$(field slurm_conf)"
    export ACCEL_SSH_DIR="$ssh_dir" ACCEL_REMOTE_BIN="$scratch/remote-accel"
    printf '#!/bin/sh\nXDG_DATA_HOME=%q exec %q "$@"\n' "$remote_data" "$build/bin/accel" >"$ACCEL_REMOTE_BIN"
    chmod +x "$ACCEL_REMOTE_BIN"
    # The studio's settings with the host in the Cluster tab's list (a copy: the pictures above
    # show this machine only).
    cp -r "$XDG_CONFIG_HOME" "$scratch/config-cluster"
    printf '\n[cluster]\nhosts=%s\n' "$host" >>"$scratch/config-cluster/AccelStudio/accel-studio.conf"
    if [[ -n "$slurm_conf" ]]; then
      # Jobs as a person submits them: one done, two running on the node's 2 CPUs, one waiting.
      for job in "tokenize-shards 1 true" "pretrain-llama 1 sleep 900" "eval-sweep 1 sleep 900" \
                 "finetune-70b 2 sleep 900"; do
        read -r name cpus command <<<"$job"
        printf '#!/bin/bash\n#SBATCH --job-name=%s\n#SBATCH --cpus-per-task=%s\n%s\n' "$name" "$cpus" "$command" \
          >"$scratch/$name.sbatch"
        "$build/bin/accel" slurm submit --host "$host" --json --remote_dir "$scratch/submit" \
          --remote_env "SLURM_CONF=$slurm_conf" "$scratch/$name.sbatch" >/dev/null
        sleep 1
      done
      export ACCEL_STUDIO_SCREENSHOT_SLURM_HOST="$host" ACCEL_STUDIO_SCREENSHOT_SLURM_ENV="SLURM_CONF=$slurm_conf"
    else
      echo "screenshots.sh: no SLURM cluster ($(field slurm_error)); the cluster pictures show an empty queue" >&2
    fi
    XDG_CONFIG_HOME="$scratch/config-cluster" ACCEL_STUDIO_SCREENSHOT_VIEW=cluster shot cluster --page hardware
    # The host's running run, selected in the list (Host column) and followed over SSH.
    XDG_CONFIG_HOME="$scratch/config-cluster" \
      ACCEL_STUDIO_SCREENSHOT_RUN="ssh://$host$remote_data/accel-studio/runs/20261122-020000-llama-pretrain-node1-9f2c" \
      shot runs-remote --page runs
  else
    echo "screenshots.sh: no sshd ($(field ssh_error)); cluster and runs-remote pictures not refreshed" >&2
  fi
else
  echo "screenshots.sh: $fixture not built; cluster and runs-remote pictures not refreshed" >&2
fi

# The Monitor during the real demo: launched detached like the studio's demo button does, pictured
# once both ranks have logged a few loss points, then stopped.
accel="$build/bin/accel"
worker="${ACCEL_WORKER_PROGRAM:-$build/bin/accel-worker}"
if [[ -x "$accel" && -x "$worker" ]]; then
  export ACCEL_WORKER_PROGRAM="$worker"
  job="$here/resources/jobs/demo-gpt.yaml"
  demo_run="$HOME/.local/share/accel-studio/runs/$(date -u +%Y%m%d-%H%M%S)-demo-gpt-d3m0"
  "$accel" launch --cpu --num_processes 2 --num_cpu_threads_per_process 1 --main_process_port 0 \
    --name demo-gpt --run_dir "$demo_run" --detach --json --job "$job" >/dev/null
  points() { cat "$demo_run/metrics/rank$1.jsonl" 2>/dev/null | grep -c '"loss"' || true; }
  for _ in $(seq 1 240); do
    if (( $(points 0) >= 8 && $(points 1) >= 8 )); then
      break
    fi
    sleep 0.5
  done
  ACCEL_STUDIO_SCREENSHOT_RUN="$(basename "$demo_run")" shot monitor-demo --page runs
  ACCEL_STUDIO_SCREENSHOT_RUN="$(basename "$demo_run")" ACCEL_STUDIO_SCREENSHOT_VIEW=memory \
    shot monitor-memory --page runs
  "$accel" stop "$demo_run" >/dev/null || true
else
  echo "screenshots.sh: $worker not built; monitor-demo pictures not refreshed" >&2
fi
# A user's argparse Accelerate script launched from the Launch page and followed live
# (script-launch-live), the studio closed and reopened while it runs on (script-launch-reopened),
# and the failure card of a 3-rank run whose rank 2 raises (runs-failed-3-ranks): pictured by the
# test that drives them with the real accel and the project's Python (tests/app/tst_scriptlaunch).
scriptlaunch="$build/tests/tst_scriptlaunch"
python="$here/.venv/bin/python"
if [[ -x "$scriptlaunch" && -x "$build/bin/accel" && -x "$python" ]]; then
  mkdir -p "$scratch/scriptlaunch"
  (
    export ACCEL_TEST_SCREENSHOTS="$scratch/scriptlaunch" ACCEL_PYTHON="$python" ACCEL_BIN_DIR="$build/bin" \
      ACCEL_SOURCE_DIR="$here" OMP_NUM_THREADS=1
    if command -v xvfb-run >/dev/null; then
      xvfb-run -a -s "-screen 0 1700x1100x24" "$scriptlaunch" -silent
    else
      QT_QPA_PLATFORM=offscreen "$scriptlaunch" -silent
    fi
  ) >"$scratch/scriptlaunch.log" 2>&1 || { cat "$scratch/scriptlaunch.log" >&2; exit 1; }
  cp "$scratch/scriptlaunch/"*.png "$out/"
else
  echo "screenshots.sh: tst_scriptlaunch, accel or .venv missing; script-launch and runs-failed-3-ranks pictures not refreshed" >&2
fi
# The Fine-tune flow (finetune-model, -data, -lora, -launch, -live, -playground): a tiny Llama picked
# on the Launch page, its data previewed, LoRA launched, its curves live and its adapter in the
# Playground, pictured by the test that drives them (tests/app/tst_finetuneflow; 1500 steps then).
finetuneflow="$build/tests/tst_finetuneflow"
if [[ -x "$finetuneflow" && -x "$build/bin/accel" && -x "$build/bin/accel-worker" && -x "$python" ]]; then
  mkdir -p "$scratch/finetuneflow"
  (
    export ACCEL_TEST_SCREENSHOTS="$scratch/finetuneflow" ACCEL_PYTHON="$python" ACCEL_BIN_DIR="$build/bin" \
      ACCEL_SOURCE_DIR="$here" OMP_NUM_THREADS=1
    if command -v xvfb-run >/dev/null; then
      xvfb-run -a -s "-screen 0 1700x1600x24" "$finetuneflow" -silent
    else
      QT_QPA_PLATFORM=offscreen "$finetuneflow" -silent
    fi
  ) >"$scratch/finetuneflow.log" 2>&1 || { cat "$scratch/finetuneflow.log" >&2; exit 1; }
  cp "$scratch/finetuneflow/"*.png "$out/"
else
  echo "screenshots.sh: tst_finetuneflow, accel, accel-worker or .venv missing; finetune pictures not refreshed" >&2
fi
# The Monitor's panels and the runs table, on real runs of a Python script that logs 15 keys through
# the project's tracker under Accelerate (no model: its curves follow the learning rate), launched by
# the real accel with the project's Python: every key charted (monitor-keys, a tall window), three
# learning rates compared under the names `accel runs rename` gave them (monitor-compare), and the
# runs table with their hyperparameters, tags and notes (runs-table). Last, so that the pictures
# above show the runs they name.
python="$here/.venv/bin/python"
if [[ -x "$accel" && -x "$python" ]]; then
  cat >"$scratch/train_sweep.py" <<'PY'
import argparse
import math
import random
import time

from accelerate import Accelerator
from accel_studio_tracker import AccelStudioTracker

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=3e-4)
parser.add_argument("--warmup", type=int, default=40)
parser.add_argument("--steps", type=int, default=400)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
random.seed(args.seed)
accelerator = Accelerator(cpu=True, log_with=AccelStudioTracker())
accelerator.init_trackers("train_sweep", config={
    "lr": args.lr, "warmup_steps": args.warmup, "max_steps": args.steps, "seed": args.seed, "batch_size": 32,
    "optimizer": {"name": "adamw", "weight_decay": 0.01, "betas": [0.9, 0.95]},
    "model": {"name": "gpt2-small", "layers": 12, "hidden": 768}})
speed = min(1.0, args.lr / 3e-4)
floor = 2.1 + 0.25 * abs(math.log10(args.lr / 3e-4))
for step in range(1, args.steps + 1):
    schedule = min(1.0, step / args.warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
    loss = floor + 3.0 * math.exp(-step * speed / 90) + random.gauss(0, 0.06)
    values = {"loss": loss, "lr": args.lr * schedule,
              "grad_norm": abs(random.gauss(0.4 + 2.0 * math.exp(-step / 60), 0.08)),
              "samples_per_s": random.gauss(410, 9), "epoch": step / 200,
              "train/accuracy": min(0.99, 0.25 + 0.55 * (1 - math.exp(-step * speed / 120)) + random.gauss(0, 0.01)),
              "train/perplexity": math.exp(loss), "train/tokens_seen": step * 32 * 1024,
              "timing/forward_s": random.gauss(0.031, 0.002), "timing/backward_s": random.gauss(0.062, 0.003),
              "timing/data_s": abs(random.gauss(0.004, 0.002)) + (0.05 if step % 97 == 0 else 0),
              "memory/allocated_bytes": 1.9e9 + 2.5e7 * math.log(step + 1)}
    if step % 50 == 0:
        eval_loss = loss + 0.12 + random.gauss(0, 0.02)
        values.update({"eval/loss": eval_loss, "eval/accuracy": values["train/accuracy"] - 0.03,
                       "eval/perplexity": math.exp(eval_loss)})
    accelerator.log(values, step=step)
    time.sleep(0.005)
accelerator.end_training()
PY
  runs_root="$HOME/.local/share/accel-studio/runs"
  sweep=()
  for spec in "1e-3:1:lr 1e-3" "3e-4:2:lr 3e-4 (baseline)" "1e-4:3:lr 1e-4"; do
    IFS=: read -r lr seed name <<<"$spec"
    id="$(date -u +%Y%m%d-%H%M%S)-train_sweep-$seed$seed$seed$seed"
    PYTHON_EXEC="$python" PYTHONPATH="$here/resources/python" "$accel" launch --cpu --num_processes 1 \
      --name train_sweep --run_dir "$runs_root/$id" "$scratch/train_sweep.py" --lr "$lr" --seed "$seed" >/dev/null 2>&1
    "$accel" runs rename "$id" "$name" >/dev/null
    "$accel" runs tag "$id" sweep >/dev/null
    sweep+=("$id")
  done
  "$accel" runs tag "${sweep[1]}" baseline >/dev/null
  "$accel" runs notes "${sweep[1]}" "Baseline for the sweep: cosine schedule, 40 warm-up steps" >/dev/null
  for theme in "${themes[@]}"; do # a window tall enough for every panel of the run
    ACCEL_STUDIO_SCREENSHOT_SIZE=1600x2350 ACCEL_STUDIO_SCREENSHOT_RUN="${sweep[1]}" ACCEL_STUDIO_SCREENSHOT_VIEW=panels \
      run --theme "$theme" --page runs --screenshot "$out/monitor-keys-$theme.png"
  done
  ACCEL_STUDIO_SCREENSHOT_RUN="$(IFS=,; echo "${sweep[*]}")" shot monitor-compare --page runs
  ACCEL_STUDIO_SCREENSHOT_RUN="${sweep[1]}" ACCEL_STUDIO_SCREENSHOT_VIEW=runstable shot runs-table --page runs
else
  echo "screenshots.sh: accel or $python missing; monitor-keys, monitor-compare and runs-table pictures not refreshed" >&2
fi
# An unmodified Accelerate script that logs only to TensorBoard (log_with="tensorboard", its folder
# chosen by its own argument), 2 CPU ranks under the real accel: the scalars accel launch read from
# its event files, charted (monitor-tensorboard; docs/trackers.md).
if [[ -x "$accel" && -x "$python" ]]; then
  cat >"$scratch/train_tensorboard.py" <<'PY'
import argparse
import math
import random

from accelerate import Accelerator

parser = argparse.ArgumentParser()
parser.add_argument("--project_dir", default="runs")
args = parser.parse_args()
random.seed(3)
accelerator = Accelerator(log_with="tensorboard", project_dir=args.project_dir)
accelerator.init_trackers("tensorboard-demo", config={"lr": 3e-4, "batch_size": 32})
for step in range(200):
    loss = 2.0 + 2.5 * math.exp(-step / 40) + random.gauss(0, 0.05)
    lr = 3e-4 * min(1.0, step / 20) * 0.5 * (1 + math.cos(math.pi * step / 200))
    values = {"train/loss": loss, "train/lr": lr,
              "train/grad_norm": abs(random.gauss(1.0 * math.exp(-step / 80) + 0.3, 0.05))}
    if step % 20 == 0:
        values["eval/loss"] = loss + 0.1
        values["eval/accuracy"] = 1 - math.exp(-step / 60) * 0.9
    accelerator.log(values, step=step)
accelerator.end_training()
PY
  id="$(date -u +%Y%m%d-%H%M%S)-tensorboard-demo-7b0a"
  PYTHON_EXEC="$python" "$accel" launch --cpu --num_processes 2 --main_process_port 0 --name tensorboard-demo \
    --run_dir "$HOME/.local/share/accel-studio/runs/$id" "$scratch/train_tensorboard.py" \
    --project_dir "$scratch/tensorboard-logs" >/dev/null 2>&1
  ACCEL_STUDIO_SCREENSHOT_RUN="$id" shot monitor-tensorboard --page runs
else
  echo "screenshots.sh: accel or $python missing; monitor-tensorboard pictures not refreshed" >&2
fi
echo "screenshots.sh: wrote $(ls "$out"/*.png | wc -l) screenshots to $out"
