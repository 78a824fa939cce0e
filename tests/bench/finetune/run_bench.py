#!/usr/bin/env python3
"""Fine-tuning benchmark: accel-worker's causal_lm recipe launched with `accel launch` against the
shortest Accelerate script a user writes (peer_finetune.py: transformers model + Accelerator.prepare +
torch AdamW, peft for LoRA) started by torchrun with the variables `accelerate launch` exports, on
the same torch (the project's Python environment's wheel, whose libtorch accel-worker links), the same random models saved by transformers
(GPT-2-small-shaped: n_embd 768, 12 layers, 12 heads, vocabulary 50257; Llama-shaped: hidden 768,
intermediate 2048, 12 layers, 12 heads, 4 key/value heads, vocabulary 32000), the same tokenizer and
windows (block 128, batch 2 per process, float32, AdamW lr 5e-5 weight decay 0.01, dropout as the
configs' defaults), the same ranks:
  DDP 2x1   2 processes x 1 thread
  FSDP 2x1  FULL_SHARD, each block a unit (GPT2Block / LlamaDecoderLayer); on CPU the peer's Accelerator
            ignores ACCELERATE_USE_FSDP (Accelerate 1.15 turns FSDP on for the MULTI_GPU family of
            distributed types only, not MULTI_CPU) and trains it as DDP: the row compares our FSDP with
            what Accelerate does with an FSDP config on CPU
  LoRA 1x2  1 process x 2 threads, r 8, alpha 16 on c_attn (GPT-2) / q_proj, v_proj (Llama)
Throughput: tokens/s over --steps steps after --warmup steps (ours: the worker's per-step metrics;
the peer: timed in the script). Peak RSS per rank: the rank process's ru_maxrss (ours: read by a
wrapper that runs accel-worker as its child, ACCEL_WORKER_PROGRAM; the peer: the script's own),
the larger of the ranks. ACCEL_BENCH_ROUNDS (default 3) rounds, ours then the peer back to back in
each; the BENCH lines give the medians and the median per-round ratio. Each round's line gives the
1-minute load average before and after it: on a shared machine that, not the code, decides most of
the spread.
usage: run_bench.py --accel ACCEL [--only gpt2,llama] [--modes ddp,fsdp,lora] [--warmup N] [--steps N]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PYTHON = os.environ.get("ACCEL_BENCH_PYTHON") or sys.executable
BLOCK, BATCH = 128, 2
MODES = {
    "ddp": {"processes": 2, "threads": 1, "name": "DDP 2x1"},
    "fsdp": {"processes": 2, "threads": 1, "name": "FSDP 2x1"},
    "lora": {"processes": 1, "threads": 2, "name": "LoRA 1x2"},
}
FAMILIES = {
    "gpt2": {"block": "GPT2Block", "lora": "c_attn"},
    "llama": {"block": "LlamaDecoderLayer", "lora": "q_proj,v_proj"},
}

WRAPPER = """#!{python}
# Runs accel-worker as a child and writes its peak resident bytes to $ACCEL_BENCH_RSS_DIR/rank<RANK>.
# Rank 0 is handed the rendezvous port's listening socket (ACCEL_STORE_LISTEN_FD): it passes on.
import os, resource, subprocess, sys
held = os.environ.get("ACCEL_STORE_LISTEN_FD")
code = subprocess.run([os.environ["ACCEL_BENCH_REAL_WORKER"]] + sys.argv[1:],
                      pass_fds=[int(held)] if held else []).returncode
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
with open(os.path.join(os.environ["ACCEL_BENCH_RSS_DIR"], "rank" + os.environ.get("RANK", "0")), "w") as f:
    f.write(str(rss))
sys.exit(code)
"""


def make_models(work, corpus):
    """The tokenizer (a byte-level BPE trained by tokenizers on the corpus) and the two random models."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=8192, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train([corpus], trainer)
    eos = tok.token_to_id("<|endoftext|>")
    folders = {}
    for family in FAMILIES:
        torch.manual_seed(0)
        if family == "gpt2":
            model = GPT2LMHeadModel(GPT2Config(bos_token_id=eos, eos_token_id=eos))
        else:
            model = LlamaForCausalLM(LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048,
                                                 num_hidden_layers=12, num_attention_heads=12,
                                                 num_key_value_heads=4, max_position_embeddings=2048,
                                                 bos_token_id=eos, eos_token_id=eos, tie_word_embeddings=False))
        folder = os.path.join(work, family)
        model.save_pretrained(folder)
        tok.save(os.path.join(folder, "tokenizer.json"))
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>"}, f)
        folders[family] = (folder, sum(p.numel() for p in model.parameters()))
    return folders


def accel_config(path, family, mode):
    m = MODES[mode]
    text = "compute_environment: LOCAL_MACHINE\nmixed_precision: 'no'\nnum_machines: 1\nuse_cpu: true\n"
    text += f"num_processes: {m['processes']}\n"
    if mode == "ddp":
        text += "distributed_type: MULTI_CPU\n"
    elif mode == "fsdp":
        text += ("distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n"
                 "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                 f"  fsdp_transformer_layer_cls_to_wrap: {FAMILIES[family]['block']}\n  fsdp_version: 1\n"
                 "  fsdp_state_dict_type: FULL_STATE_DICT\n")
    else:
        text += "distributed_type: 'NO'\n"
    with open(path, "w") as f:
        f.write(text)
    return path


def read_rss(folder, processes):
    values = []
    for rank in range(processes):
        with open(os.path.join(folder, f"rank{rank}")) as f:
            values.append(int(f.read()))
    return values


def ours(accel, worker, work, folder, family, mode, data, args):
    m = MODES[mode]
    run = os.path.join(work, "run")
    rss = os.path.join(work, "rss")
    shutil.rmtree(run, ignore_errors=True)
    shutil.rmtree(rss, ignore_errors=True)
    os.makedirs(rss)
    job = os.path.join(work, "job.yaml")
    lora = ""
    if mode == "lora":
        targets = ", ".join(FAMILIES[family]["lora"].split(","))
        lora = f"lora: {{r: 8, alpha: 16, target_modules: [{targets}]}}\n"
    with open(job, "w") as f:
        f.write(f"recipe: causal_lm\noutput_dir: {os.path.join(work, 'out')}\nmodel: {{path: {folder}}}\n"
                f"data: {{train: {data}, block_size: {BLOCK}}}\n{lora}"
                f"training: {{max_steps: {args.warmup + args.steps}, batch_size: {BATCH}, learning_rate: 5.0e-5, "
                "weight_decay: 0.01, log_every: 1, shuffle: false, resume: none}\n")
    config = accel_config(os.path.join(work, f"accel-{mode}.yaml"), family, mode)
    env = dict(os.environ, ACCEL_WORKER_PROGRAM=os.path.join(work, "worker-wrapper"), ACCEL_BENCH_REAL_WORKER=worker,
               ACCEL_BENCH_RSS_DIR=rss)
    cmd = [accel, "launch", "--config_file", config, "--num_cpu_threads_per_process", str(m["threads"]),
           "--main_process_port", "0", "--run_dir", run, "--job", job]
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        logs = ""
        for name in sorted(os.listdir(os.path.join(run, "logs"))) if os.path.isdir(os.path.join(run, "logs")) else []:
            logs += open(os.path.join(run, "logs", name)).read()[-3000:]
        sys.exit(f"accel launch failed ({mode}, {family}):\n{out.stdout}\n{logs}")
    steps = []
    with open(os.path.join(run, "metrics", "rank0.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if "tokens_per_s" in record and record["step"] > args.warmup:
                steps.append((record["step_time_s"], record["tokens_per_s"]))
    seconds = sum(t for t, _ in steps)
    return sum(t * s for t, s in steps) / seconds, read_rss(rss, m["processes"])


def peer(work, folder, family, mode, data, args):
    """The peer under torchrun with the variables `accelerate launch` exports: on CPU, `accelerate launch
    --cpu` starts one process whatever --num_processes says (its simple launcher; several CPU processes
    are left to mpirun), so the ranks are started as its multi-GPU launcher starts them."""
    m = MODES[mode]
    env = dict(os.environ, ACCELERATE_USE_CPU="true", ACCELERATE_MIXED_PRECISION="no", ACCELERATE_DYNAMO_BACKEND="NO",
               OMP_NUM_THREADS=str(m["threads"]))
    if mode == "fsdp":
        env.update(ACCELERATE_USE_FSDP="true", FSDP_SHARDING_STRATEGY="FULL_SHARD",
                   FSDP_AUTO_WRAP_POLICY="TRANSFORMER_BASED_WRAP",
                   FSDP_TRANSFORMER_CLS_TO_WRAP=FAMILIES[family]["block"], FSDP_STATE_DICT_TYPE="FULL_STATE_DICT",
                   FSDP_VERSION="1")
    cmd = [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", str(m["processes"]), "--master_port",
           str(_free_port())]
    cmd += [os.path.join(HERE, "peer_finetune.py"), folder, data, "--block", str(BLOCK), "--batch", str(BATCH),
            "--warmup", str(args.warmup), "--steps", str(args.steps)]
    if mode == "lora":
        cmd += ["--lora", FAMILIES[family]["lora"]]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work, env=env)
    tokens, rss = None, {}
    for line in out.stdout.splitlines():
        if "RESULT tokens_per_s" in line:
            tokens = float(line.split()[-1])
        elif line.startswith("RSS rank") or "RSS rank" in line:
            fields = line[line.index("RSS rank"):].split()
            rss[int(fields[2])] = int(fields[3])
    if out.returncode != 0 or tokens is None or len(rss) != m["processes"]:
        sys.exit(f"peer_finetune.py failed ({mode}, {family}):\n{out.stdout[-6000:]}")
    return tokens, [rss[r] for r in sorted(rss)]


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accel", required=True)
    parser.add_argument("--worker", required=True)
    parser.add_argument("--only", default="gpt2,llama")
    parser.add_argument("--modes", default="ddp,fsdp,lora")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--keep", help="a folder to work in and keep (models are reused)")
    args = parser.parse_args()
    import torch
    caps = json.loads(subprocess.run([args.worker, "--capabilities", "--json"], stdout=subprocess.PIPE,
                                     text=True).stdout)
    print(f"# accel-worker: libtorch {caps.get('torch_version')}, BLAS {caps.get('blas')}; peer: torch "
          f"{torch.__version__} ({PYTHON}); block {BLOCK}, batch {BATCH} per process, {args.warmup} warm-up + "
          f"{args.steps} measured steps", flush=True)
    work = args.keep or tempfile.mkdtemp(prefix="accel-bench-finetune-")
    os.makedirs(work, exist_ok=True)
    wrapper = os.path.join(work, "worker-wrapper")
    with open(wrapper, "w") as f:
        f.write(WRAPPER.format(python=PYTHON))
    os.chmod(wrapper, 0o755)
    data = os.path.join(SOURCE, "resources", "corpus", "corpus.txt")
    folders = make_models(work, data)
    rounds = int(os.environ.get("ACCEL_BENCH_ROUNDS", "3"))
    median = lambda values: sorted(values)[len(values) // 2]
    for family in args.only.split(","):
        folder, parameters = folders[family]
        for mode in args.modes.split(","):
            rows = []
            for r in range(rounds):
                load = os.getloadavg()[0]
                o_tokens, o_rss = ours(args.accel, args.worker, work, folder, family, mode, data, args)
                p_tokens, p_rss = peer(work, folder, family, mode, data, args)
                rows.append((o_tokens, max(o_rss), p_tokens, max(p_rss)))
                print(f"# {family} {MODES[mode]['name']} round {r + 1}: tokens/s {o_tokens:.1f} vs {p_tokens:.1f} "
                      f"({o_tokens / p_tokens:.3f}x); peak RSS per rank MiB ours "
                      f"{', '.join(f'{v / 2**20:.0f}' for v in o_rss)} peer {', '.join(f'{v / 2**20:.0f}' for v in p_rss)}"
                      f" ({max(o_rss) / max(p_rss):.3f}x); load average {load:.1f} -> {os.getloadavg()[0]:.1f}",
                      flush=True)
            key = f"finetune_{family}_{mode}_{'2x1' if mode != 'lora' else '1x2'}"
            tokens = median([row[0] for row in rows])
            peer_tokens = median([row[2] for row in rows])
            print(f"BENCH {key}_tokens_per_s {tokens:.1f} tokens/s peer={peer_tokens:.1f} "
                  f"ratio={median([row[0] / row[2] for row in rows]):.3f} target>=1.2x", flush=True)
            print(f"BENCH {key}_peak_rss_per_rank {median([row[1] for row in rows]) / 2**20:.0f} MiB "
                  f"peer={median([row[3] for row in rows]) / 2**20:.0f} "
                  f"ratio={median([row[1] / row[3] for row in rows]):.3f} target<=0.8x", flush=True)
    print(f"# models: gpt2 {folders['gpt2'][1]:,} parameters, llama {folders['llama'][1]:,} parameters", flush=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
