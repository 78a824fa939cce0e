#!/usr/bin/env python3
"""Speculative decoding (`accel generate --draft`) against plain greedy decoding, on a model pair trained
here so that the draft has something to agree with.

Both models are GPT-2-shaped, share one BPE tokenizer trained by `tokenizers` on the project's corpus
(resources/corpus/corpus.txt), start from random weights saved by transformers and are then trained
by accel-worker's causal_lm recipe on that corpus (`accel launch --job`): the model with 8 layers of
width 512, the draft with 2 layers of width 128. Then, for each prompt (the opening words of held-out
paragraphs), `accel generate MODEL --greedy` runs with and without `--draft DRAFT`; the bench checks
that the tokens are identical and reports decode tokens/s (the worker's own `decode_tokens_per_second`),
the ratio, and the draft's acceptance (`draft_accepted / draft_proposed`). ACCEL_BENCH_ROUNDS (default 3)
rounds; medians. --keep DIR reuses the trained models.

  run_bench.py --accel build/bin/accel [--keep DIR] [--threads 2] [--draft_tokens 4] [--steps 400]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CORPUS = os.path.join(SOURCE, "resources", "corpus", "corpus.txt")
VOCAB = 4096
BLOCK = 128
SHAPES = {"model": {"n_layer": 8, "n_embd": 512, "n_head": 8},
          "draft": {"n_layer": 2, "n_embd": 128, "n_head": 4}}


def paragraphs():
    with open(CORPUS, encoding="utf-8") as f:
        return [p.strip() for p in f.read().split("\n\n") if p.strip()]


def prepare(work, steps, accel):
    paras = paragraphs()
    held_out = max(8, len(paras) // 20)
    train = os.path.join(work, "train.txt")
    with open(train, "w", encoding="utf-8") as f:
        f.write("\n\n".join(paras[:-held_out]) + "\n")
    tokenizer_path = os.path.join(work, "tokenizer.json")
    if not os.path.exists(tokenizer_path):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train([train], trainer)
        tok.save(tokenizer_path)
    from tokenizers import Tokenizer
    eos = Tokenizer.from_file(tokenizer_path).token_to_id("<|endoftext|>")
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    folders = {}
    for name, shape in SHAPES.items():
        start = os.path.join(work, name + "-start")
        trained = os.path.join(work, name + "-run")
        folders[name] = os.path.join(trained, "model")
        if os.path.exists(os.path.join(folders[name], "config.json")):
            continue
        torch.manual_seed(1)
        config = GPT2Config(vocab_size=VOCAB, n_positions=512, bos_token_id=eos, eos_token_id=eos, **shape)
        GPT2LMHeadModel(config).save_pretrained(start, safe_serialization=True)
        with open(tokenizer_path, "rb") as src, open(os.path.join(start, "tokenizer.json"), "wb") as dst:
            dst.write(src.read())
        job = os.path.join(work, name + ".yaml")
        with open(job, "w") as f:
            f.write(f"recipe: causal_lm\nseed: 1\noutput_dir: {trained}\nmodel: {{path: {start}}}\n"
                    f"data: {{train: {train}, block_size: {BLOCK}}}\n"
                    f"training: {{max_steps: {steps}, batch_size: 8, learning_rate: 1.0e-3, warmup_steps: 20, "
                    "log_every: 50, resume: none}\n")
        print(f"# training the {name} ({shape}), {steps} steps", flush=True)
        out = subprocess.run([accel, "launch", "--num_processes", "1", "--job", job],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, ACCEL_RUN_DIR=trained))
        if out.returncode != 0:
            sys.exit(f"training the {name} failed:\n{out.stdout[-4000:]}")
        with open(os.path.join(trained, "logs", "rank0.log"), encoding="utf-8") as f:
            steps_logged = [line.strip() for line in f if line.startswith("step ")]
        print("# " + (steps_logged[-1] if steps_logged else "(no step lines in the rank's log)"), flush=True)
    prompts = [" ".join(p.split()[:6]) for p in paras[-held_out:]][:8]
    return folders, prompts


def generate(accel, model, prompt, threads, new_tokens, draft=None, draft_tokens=4):
    cmd = [accel, "generate", model, "--prompt", prompt, "--greedy", "--max_new_tokens", str(new_tokens),
           "--threads", str(threads), "--json",
           # The end-of-text token would end most generations after a sentence; the last id of the
           # vocabulary (the tokenizer's last merge, rare in this text) stops instead.
           "--stop_token_id", str(VOCAB - 1)]
    if draft:
        cmd += ["--draft", draft, "--draft_tokens", str(draft_tokens)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accel", required=True)
    parser.add_argument("--keep", help="a folder to work in and keep (trained models are reused)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--draft_tokens", type=int, default=4)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--new_tokens", type=int, default=96)
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="accel-bench-draft-")
    os.makedirs(work, exist_ok=True)
    folders, prompts = prepare(work, args.steps, args.accel)
    rounds = int(os.environ.get("ACCEL_BENCH_ROUNDS", "3"))
    print(f"# {len(prompts)} prompts, {args.new_tokens} new tokens each, greedy, {args.threads} threads, "
          f"draft_tokens {args.draft_tokens}, {rounds} rounds; load average {os.getloadavg()[0]:.1f}", flush=True)
    ratios, plain_rates, draft_rates, acceptance = [], [], [], []
    for r in range(rounds):
        plain_total = draft_total = 0.0
        proposed = accepted = 0
        for prompt in prompts:
            plain = generate(args.accel, folders["model"], prompt, args.threads, args.new_tokens)
            spec = generate(args.accel, folders["model"], prompt, args.threads, args.new_tokens,
                            folders["draft"], args.draft_tokens)
            if plain["tokens"] != spec["tokens"]:
                sys.exit(f"tokens differ with the draft for prompt {prompt!r}:\n{plain['tokens']}\n{spec['tokens']}")
            plain_total += plain["stats"]["decode_tokens_per_second"]
            draft_total += spec["stats"]["decode_tokens_per_second"]
            proposed += spec["stats"].get("draft_proposed", 0)
            accepted += spec["stats"].get("draft_accepted", 0)
        plain_rate, draft_rate = plain_total / len(prompts), draft_total / len(prompts)
        plain_rates.append(plain_rate)
        draft_rates.append(draft_rate)
        ratios.append(draft_rate / plain_rate)
        acceptance.append(accepted / proposed if proposed else 0.0)
        print(f"# round {r + 1}: decode tokens/s {draft_rate:.1f} with the draft, {plain_rate:.1f} without "
              f"({ratios[-1]:.2f}x); accepted {accepted} of {proposed} proposed ({acceptance[-1]:.0%}); "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
    print(json.dumps({"schema": "accel.bench-draft", "version": 1, "threads": args.threads,
                      "draft_tokens": args.draft_tokens, "prompts": len(prompts), "new_tokens": args.new_tokens,
                      "tokens_per_second_plain": statistics.median(plain_rates),
                      "tokens_per_second_draft": statistics.median(draft_rates),
                      "speedup": statistics.median(ratios), "acceptance": statistics.median(acceptance)}))


if __name__ == "__main__":
    main()
