#!/usr/bin/env python3
"""GPU checks of accel-worker's CUDA paths; see tests/gpu/README.md. Needs GPUs; prints a table."""
import argparse, json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
rows = []


def row(check, result, ok):
    rows.append((check, result, "ok" if ok else "FAILED"))
    print(f"{check}: {result} -> {'ok' if ok else 'FAILED'}", flush=True)
    return ok


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def launch(bin_dir, job, ranks, extra=(), env=None):
    cmd = [os.path.join(bin_dir, "accel"), "launch", "--num_processes", str(ranks),
           "--gpu_ids", ",".join(str(i) for i in range(ranks)), *extra, "--job", job]
    out = run(cmd, env=env)
    if out.returncode != 0:
        print(out.stdout)
    return out.returncode == 0


def tensors(path):
    from safetensors.torch import load_file
    return load_file(path)


def metrics(run_dir):
    lines = []
    metrics_dir = os.path.join(run_dir, "metrics")
    with open(os.path.join(metrics_dir, "rank0.jsonl")) as f:
        for line in f:
            item = json.loads(line)
            if item.get("kind", "train") == "train" and "loss" in item:
                lines.append(item)
    return lines


def package_checks(build, bin_dir, work):
    """The worker's two packages (docs/packaging.md): accel-worker alone (CMake components worker and
    libtorch) computes on the CPU even with GPUs present; with accel-worker-cuda's files (component cuda)
    beside it, the same worker places a rank on GPU 0."""
    prefix = os.path.join(work, "packaged")
    worker = os.path.join(prefix, "bin", "accel-worker")

    def install(component):
        return run(["cmake", "--install", build, "--prefix", prefix, "--component", component]).returncode == 0

    def capabilities():
        out = run([worker, "--capabilities", "--json"])
        return json.loads(out.stdout) if out.returncode == 0 else {}

    cpu = install("worker") and install("libtorch") and capabilities()
    row("accel-worker alone: CPU only", f"cuda={cpu.get('cuda') if cpu else None} ({cpu.get('cuda_plugin') if cpu else 'not installed'})",
        bool(cpu) and cpu.get("cuda") is False and "accel-worker-cuda" in cpu.get("cuda_plugin", ""))
    gpu = install("cuda") and capabilities()
    ok = bool(gpu) and gpu.get("cuda") is True and gpu.get("gpu_count", 0) >= 1 and gpu.get("nccl_version")
    out_dir = os.path.join(work, "packaged-run")
    if ok:
        job = os.path.join(work, "packaged.yaml")
        with open(job, "w") as f:
            f.write(f"recipe: mlp\nseed: 1\noutput_dir: {out_dir}\n"
                    "mlp: {data: mlp.safetensors, hidden: [64], classes: 10}\n"
                    "training: {max_steps: 20, batch_size: 32, log_every: 10, resume: none}\n")
        env = dict(os.environ, ACCEL_WORKER_PROGRAM=worker, ACCEL_RUN_DIR=out_dir)
        ok = launch(bin_dir, job, 1, env=env) and "mem_device_bytes" in metrics(out_dir)[-1]
    row("accel-worker + accel-worker-cuda: GPU", f"cuda={gpu.get('cuda') if gpu else None} gpus={gpu.get('gpu_count') if gpu else 0} "
        f"NCCL {gpu.get('nccl_version') if gpu else None}, 1-GPU mlp run with the installed worker", bool(ok))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=0, help="GPUs to use (default: all)")
    parser.add_argument("--build", default=os.path.join(SOURCE, "build"))
    args = parser.parse_args()
    import torch
    bin_dir = os.path.join(args.build, "bin")
    caps = json.loads(run([os.path.join(bin_dir, "accel-worker"), "--capabilities", "--json"]).stdout)
    gpus = args.gpus or caps.get("gpu_count", 0)
    if not row("CUDA visible to accel-worker",
               f"cuda_compiled={caps.get('cuda_compiled')} cuda={caps.get('cuda')} gpus={caps.get('gpu_count')} "
               f"CUDA {caps.get('cuda_version')} NCCL {caps.get('nccl_version')}",
               caps.get("cuda_compiled") and caps.get("cuda") and gpus >= 1):
        return finish()
    work = tempfile.mkdtemp(prefix="accel-gpu-checks-")
    torch.manual_seed(0)
    from safetensors.torch import save_file
    save_file({"inputs": torch.randn(4096, 256), "targets": torch.randint(0, 10, (4096,))},
              os.path.join(work, "mlp.safetensors"))

    def mlp_job(name, batch):
        path = os.path.join(work, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"recipe: mlp\nseed: 1\noutput_dir: {os.path.join(work, name)}\n"
                    "mlp: {data: mlp.safetensors, hidden: [512, 512], classes: 10, optimizer: sgd}\n"
                    f"training: {{max_steps: 50, batch_size: {batch}, learning_rate: 0.05, shuffle: false, "
                    "log_every: 10, resume: none}\n")
        return path

    if gpus >= 2:
        ok = launch(bin_dir, mlp_job("ddp", 32), gpus) and launch(bin_dir, mlp_job("single", 32 * gpus), 1)
        diff = float("inf")
        if ok:
            a = tensors(os.path.join(work, "ddp", "model.safetensors"))
            b = tensors(os.path.join(work, "single", "model.safetensors"))
            diff = max(((a[k] - b[k]).abs().max() / b[k].abs().max().clamp_min(1e-12)).item() for k in b)
        row(f"DDP {gpus} GPUs == 1 GPU x{gpus} batch", f"max relative difference {diff:.2e}", ok and diff <= 1e-4)
    else:
        row("DDP N GPUs == 1 GPU", "skipped: needs 2 GPUs", True)
    sharding_checks(bin_dir, work, gpus, mlp_job)

    corpus = os.path.join(SOURCE, "resources", "corpus", "corpus.txt")
    for precision in ("fp16", "bf16"):
        out_dir = os.path.join(work, "gpt-" + precision)
        job = os.path.join(work, f"gpt-{precision}.yaml")
        with open(job, "w") as f:
            f.write(f"recipe: gpt\nseed: 1\noutput_dir: {out_dir}\nmodel: {{n_layer: 4, n_head: 4, n_embd: 256, block_size: 128}}\n"
                    f"data: {{corpus: {corpus}, eval_fraction: 0}}\nsample: {{length: 0}}\n"
                    "training: {max_steps: 200, batch_size: 16, learning_rate: 1.0e-3, log_every: 10, resume: none}\n")
        env = dict(os.environ, ACCEL_RUN_DIR=out_dir)
        ok = launch(bin_dir, job, 1, ["--mixed_precision", precision], env)
        first = last = float("nan")
        extra = ""
        if ok:
            lines = metrics(out_dir)
            first, last = lines[0]["loss"], lines[-1]["loss"]
            if precision == "fp16":
                extra = f", loss_scale {lines[-1].get('loss_scale')}, device memory {lines[-1].get('mem_device_bytes')}"
                ok = ok and "loss_scale" in lines[-1] and "mem_device_bytes" in lines[-1]
        row(f"{precision} training (gpt, 1 GPU)", f"loss {first:.3f} -> {last:.3f}{extra}", ok and last <= 0.7 * first)

    fp8_checks(bin_dir, work, corpus)
    package_checks(args.build, bin_dir, work)

    if gpus >= 2:
        probe = os.path.join(bin_dir, "accel-runtime-probe")
        out = run([os.path.join(bin_dir, "accel"), "launch", "--num_processes", str(gpus), "--no_python", probe,
                   "allreduce-bandwidth", "size_mb=64", "iters=20"])
        ours = next((float(l.split()[1]) for l in out.stdout.splitlines() if l.startswith("busbw_gbps")), 0.0)
        script = os.path.join(work, "nccl_bw.py")
        with open(script, "w") as f:
            f.write("import os, time, torch, torch.distributed as dist\n"
                    "dist.init_process_group('nccl'); r = dist.get_rank(); n = dist.get_world_size()\n"
                    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
                    "t = torch.ones(64 * 1024 * 1024 // 4, device='cuda')\n"
                    "for _ in range(5): dist.all_reduce(t); t.div_(n)\n"
                    "torch.cuda.synchronize(); s = time.perf_counter()\n"
                    "for _ in range(20): dist.all_reduce(t); t.div_(n)\n"
                    "torch.cuda.synchronize(); dt = (time.perf_counter() - s) / 20\n"
                    "r == 0 and print('busbw_gbps', 2 * (n - 1) / n * t.numel() * 4 / dt / 1e9)\n")
        torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
        peer_out = run([torchrun, "--standalone", "--nproc_per_node", str(gpus), script])
        peer = next((float(l.split()[1]) for l in peer_out.stdout.splitlines() if "busbw_gbps" in l), 0.0)
        ratio = ours / peer if peer else 0.0
        row("NCCL all-reduce 64 MiB bus bandwidth", f"ours {ours:.1f} GB/s, torch.distributed {peer:.1f} GB/s, ratio {ratio:.2f}",
            ratio >= 0.9)
    return finish()


SHARDING = (("FSDP1 FULL_SHARD", ["--use_fsdp", "--fsdp_sharding_strategy", "FULL_SHARD"]),
            ("FSDP2", ["--use_fsdp", "--fsdp_version", "2"]),
            ("ZeRO-3", ["--use_deepspeed", "--zero_stage", "3"]))


def max_relative_difference(a_path, b_path):
    a, b = tensors(a_path), tensors(b_path)
    return max(((a[k].float() - b[k].float()).abs().max() / b[k].float().abs().max().clamp_min(1e-12)).item()
               for k in b)


def sharding_checks(bin_dir, work, gpus, mlp_job):
    """The sharding engine on GPUs (parameters, flat chunks and ZeRO-3's released storage in CUDA memory,
    sub-groups over NCCL): the mlp recipe and the causal_lm recipe (a tiny Llama saved by transformers)
    sharded over N GPUs equal 1 GPU with the N-fold batch."""
    if gpus < 2:
        row("sharding on GPUs", "skipped: needs 2 GPUs", True)
        return
    single = os.path.join(work, "single", "model.safetensors")
    for name, flags in SHARDING:
        tag = "mlp-" + name.split()[0].lower().replace("-", "")
        ok = launch(bin_dir, mlp_job(tag, 32), gpus, flags) and os.path.exists(single)
        diff = max_relative_difference(os.path.join(work, tag, "model.safetensors"), single) if ok else float("inf")
        row(f"mlp {name} on {gpus} GPUs == 1 GPU", f"max relative difference {diff:.2e}", ok and diff <= 1e-4)
    # causal_lm: the tests' tiny Llama, tokenizer and text (tests/runtime/finetune_oracle.py prepare).
    data = os.path.join(work, "finetune")
    os.makedirs(data, exist_ok=True)
    prepared = run([sys.executable, os.path.join(SOURCE, "tests", "runtime", "finetune_oracle.py"), "prepare", data])
    if prepared.returncode != 0:
        print(prepared.stdout)
        row("causal_lm sharded on GPUs", "finetune_oracle.py prepare failed", False)
        return

    def causal_job(tag, batch):
        path = os.path.join(work, tag + ".yaml")
        with open(path, "w") as f:
            f.write(f"recipe: causal_lm\nseed: 1\noutput_dir: {os.path.join(work, tag)}\n"
                    f"model: {{path: {os.path.join(data, 'llama')}}}\n"
                    f"data: {{train: {os.path.join(data, 'train.txt')}, block_size: 16}}\n"
                    f"training: {{max_steps: 10, batch_size: {batch}, learning_rate: 2.0e-3, shuffle: false, "
                    "log_every: 1, resume: none}\n")
        return path

    # Two GPUs: the prepared text holds 2 x 4 x 10 windows, one epoch of these 10 steps.
    ok = launch(bin_dir, causal_job("llama-single", 8), 1)
    reference = os.path.join(work, "llama-single", "model", "model.safetensors")
    for name, flags in SHARDING:
        tag = "llama-" + name.split()[0].lower().replace("-", "")
        ran = ok and launch(bin_dir, causal_job(tag, 4), 2, flags)
        diff = max_relative_difference(os.path.join(work, tag, "model", "model.safetensors"), reference) if ran else float("inf")
        row(f"causal_lm {name} on 2 GPUs == 1 GPU", f"max relative difference {diff:.2e}", ran and diff <= 1e-4)


def fp8_checks(bin_dir, work, corpus):
    """The FP8 recipes' CUDA path (torch::_scaled_mm) on GPU 0, or its refusal below compute capability 8.9."""
    import torch
    major, minor = torch.cuda.get_device_capability(0)
    name = torch.cuda.get_device_name(0)
    if (major, minor) < (8, 9):
        job = os.path.join(work, "gpt-fp8.yaml")
        with open(job, "w") as f:
            f.write(f"recipe: gpt\nseed: 1\noutput_dir: {os.path.join(work, 'gpt-fp8')}\n"
                    f"data: {{corpus: {corpus}, eval_fraction: 0}}\nsample: {{length: 0}}\n"
                    "training: {max_steps: 10, batch_size: 8, log_every: 5, resume: none}\n")
        out = run([os.path.join(bin_dir, "accel"), "launch", "--num_processes", "1", "--gpu_ids", "0",
                   "--mixed_precision", "fp8", "--fp8_backend", "te", "--job", job])
        said = "compute capability 8.9" in out.stdout and f"has {major}.{minor}" in out.stdout
        row(f"FP8 refused on {name} (SM {major}.{minor})", "exit %d, %s" % (
            out.returncode, "names the capability" if said else "message: " + out.stdout.strip()[-300:]),
            out.returncode != 0 and said)
        return
    # SM 8.9+: the benchmark of the README on the GPU (every recipe at its defaults, 500 steps).
    out_dir = os.path.join(work, "fp8-bench")
    out = run([os.path.join(bin_dir, "accel"), "bench", "fp8", "--steps", "500", "--shapes", "gpt", "--out", out_dir,
               "--json"])
    if not row(f"accel bench fp8 on {name} (SM {major}.{minor})", f"exit {out.returncode}", out.returncode == 0):
        print(out.stdout[-2000:])
        return
    result = json.loads(out.stdout.strip().splitlines()[-1])
    for item in result["runs"]:
        if not item["precision"].startswith("fp8-"):
            continue
        with open(os.path.join(out_dir, item["shape"], item["precision"], "metrics.jsonl")) as f:
            on_gpu = any("mem_device_bytes" in json.loads(line) for line in f if line.strip())
        diff = item["eval_loss_vs_bf16_percent"]
        row(f"{item['precision']} on the GPU vs bf16 (gpt, 500 steps)",
            f"eval loss {item['eval_loss']:.4f}, {diff:+.2f} % against bf16, device memory logged: {on_gpu}",
            on_gpu and abs(diff) <= 2.0)


def finish():
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'check':<{width}}  {'status':<6}  result")
    for check, result, status in rows:
        print(f"{check:<{width}}  {status:<6}  {result}")
    return 0 if all(r[2] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
