"""The reference side of tst_finetune: tiny random models saved by transformers, a tokenizer trained by
tokenizers, and the same training done with transformers + torch AdamW, so that accel-worker's causal_lm
recipe can be compared step by step.

  finetune_oracle.py prepare DIR      models, tokenizer and data in DIR; reference runs -> DIR/reference.json
  finetune_oracle.py check DIR        loads the folders accel-worker wrote with transformers and peft;
                                      prints {"name": max |ours - reference| / max |reference|, ...}

Everything is float32 on the CPU, one thread. The data rules are the recipe's (docs/finetune.md): documents
separated by blank lines, tokenized without special tokens, each followed by EOS, joined, cut into windows
of block_size tokens; instruction examples are prompt + completion + EOS with labels -100 on the prompt,
padded per batch with EOS.
"""
import json
import math
import os
import random
import sys

import torch

BLOCK = 16
INSTRUCTION_BLOCK = 20
BATCH = 4
STEPS = 10
LR = 2e-3
WARMUP = 2
MIN_LR_RATIO = 0.1
GRAD_CLIP = 1.0
WORDS = ("alpha beta gamma delta river stone cloud garden lantern meadow quiet bright silver "
         "winter summer morning evening market harbor window candle forest mountain valley "
         "über café naïve paper engine signal bridge orange violet copper wooden").split()


def documents(text):
    docs, current = [], []
    for line in text.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if line.strip(" \t\r\f\v") == "":
            if current:
                docs.append("\n".join(current))
                current = []
        else:
            current.append(line)
    if current:
        docs.append("\n".join(current))
    return docs


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def write_data(folder):
    rng = random.Random(7)
    docs = []
    for _ in range(60):
        lines = [sentence(rng, rng.randint(4, 9)) for _ in range(rng.randint(1, 3))]
        docs.append("\n".join(lines))
    with open(os.path.join(folder, "train.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(docs[:50]) + "\n")
    with open(os.path.join(folder, "eval.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n  \n".join(docs[50:]) + "\n")
    records = [{"prompt": "Q: " + sentence(rng, rng.randint(1, 5)) + " A:",
                "completion": " " + sentence(rng, rng.randint(1, 5))} for _ in range(40)]
    with open(os.path.join(folder, "instruct.jsonl"), "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    return docs + [r["prompt"] + r["completion"] for r in records]


def train_tokenizer(docs, folder):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(docs, trainer)
    tok.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
                   "bos_token": "<|endoftext|>", "model_max_length": 64}, f)
    return tok


def make_model(family, vocab, eos, folder):
    torch.manual_seed(1 if family == "llama" else 2)
    if family == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM
        config = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                             bos_token_id=eos, eos_token_id=eos, tie_word_embeddings=False)
        model = LlamaForCausalLM(config)
    else:
        from transformers import GPT2Config, GPT2LMHeadModel
        config = GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=eos,
                            eos_token_id=eos, embd_pdrop=0.0, attn_pdrop=0.0, resid_pdrop=0.0)
        model = GPT2LMHeadModel(config)
    model.save_pretrained(folder)
    return model


def tokenizer_of(folder):
    from tokenizers import Tokenizer
    return Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))


def packed_windows(tok, eos, path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    ids = []
    for doc in documents(text):
        ids += tok.encode(doc, add_special_tokens=False).ids + [eos]
    n = len(ids) // BLOCK
    return torch.tensor(ids[: n * BLOCK], dtype=torch.long).view(n, BLOCK)


def instruction_examples(tok, eos, path):
    examples = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            prompt = tok.encode(record["prompt"], add_special_tokens=False).ids
            completion = tok.encode(record["completion"], add_special_tokens=False).ids + [eos]
            ids = (prompt + completion)[:INSTRUCTION_BLOCK]
            if len(prompt) >= len(ids):
                continue
            examples.append((ids, len(prompt)))
    return examples


def instruction_batch(examples, eos):
    longest = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), longest), eos, dtype=torch.long)
    labels = torch.full((len(examples), longest), -100, dtype=torch.long)
    for b, (example, prompt) in enumerate(examples):
        ids[b, : len(example)] = torch.tensor(example)
        labels[b, prompt: len(example)] = torch.tensor(example[prompt:])
    return ids, labels


def schedule(step, steps):
    if WARMUP > 0 and step < WARMUP:
        return (step + 1) / WARMUP
    progress = min(1.0, (step - WARMUP) / max(1, steps - WARMUP))
    return MIN_LR_RATIO + (1 - MIN_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * progress))


def reference_run(folder, batches):
    """transformers + torch AdamW over `batches` [(input_ids, labels)], the recipe's schedule and clipping."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: schedule(s, len(batches)))
    losses = []
    for ids, labels in batches:
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return model, losses


def probe_ids(folder):
    tok = tokenizer_of(folder)
    return tok.encode("Silver river. Quiet garden under the lantern, café morning.",
                      add_special_tokens=False).ids[:BLOCK]


def save_logits(model, ids, path):
    from safetensors.torch import save_file
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits.float().contiguous()
    save_file({"logits": logits}, path)
    return logits


def prepare(root):
    docs = write_data(root)
    tok = train_tokenizer(docs, root)
    eos = tok.token_to_id("<|endoftext|>")
    vocab = tok.get_vocab_size()
    result = {"eos": eos, "vocab": vocab, "block": BLOCK, "batch": BATCH, "steps": STEPS}
    for family in ("llama", "gpt2"):
        folder = os.path.join(root, family)
        make_model(family, vocab, eos, folder)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(root, name), "rb") as src, open(os.path.join(folder, name), "wb") as dst:
                dst.write(src.read())
        windows = packed_windows(tok, eos, os.path.join(root, "train.txt"))
        assert windows.size(0) >= 2 * BATCH * STEPS, windows.size(0)
        batches = [(windows[k * BATCH:(k + 1) * BATCH],) * 2 for k in range(STEPS)]
        model, losses = reference_run(folder, batches)
        ids = probe_ids(root)
        save_logits(model, ids, os.path.join(root, family + "-reference-logits.safetensors"))
        result[family] = {"losses": losses, "windows": windows.size(0)}
    result["probe_ids"] = probe_ids(root)
    # Instruction data on the llama: padded batches, loss on completions only.
    examples = instruction_examples(tok, eos, os.path.join(root, "instruct.jsonl"))
    batches = [instruction_batch(examples[k * BATCH:(k + 1) * BATCH], eos) for k in range(3)]
    _, losses = reference_run(os.path.join(root, "llama"), batches)
    result["instruction"] = {"losses": losses, "examples": len(examples), "block": INSTRUCTION_BLOCK}
    with open(os.path.join(root, "reference.json"), "w") as f:
        json.dump(result, f)
    print(json.dumps(result))


def relative(ours, theirs):
    return float((ours - theirs).abs().max() / theirs.abs().max())


def check(root):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM
    ids = probe_ids(root)
    out = {}
    for family in ("llama", "gpt2"):
        model = AutoModelForCausalLM.from_pretrained(os.path.join(root, "run-" + family, "model"))
        ours = save_logits(model, ids, os.path.join(root, family + "-transformers-logits.safetensors"))
        reference = load_file(os.path.join(root, family + "-reference-logits.safetensors"))["logits"]
        out[family] = relative(ours, reference)
    from peft import PeftModel
    for family in ("llama", "gpt2"):
        base = AutoModelForCausalLM.from_pretrained(os.path.join(root, family))
        plain = save_logits(base, ids, os.path.join(root, "base-" + family + "-logits.safetensors"))
        adapter = os.path.join(root, "run-lora-" + family, "adapter")
        model = PeftModel.from_pretrained(base, adapter)
        theirs = save_logits(model, ids, os.path.join(root, "lora-" + family + "-peft-logits.safetensors"))
        ours = load_file(os.path.join(root, "lora-" + family + "-logits.safetensors"))["logits"]
        out["lora-" + family] = relative(ours, theirs)
        # The adapter changes the model (lora_B left its zero initialisation).
        out["lora-" + family + "-effect"] = relative(theirs, plain)
    print(json.dumps(out))


if __name__ == "__main__":
    torch.set_num_threads(1)
    command, folder = sys.argv[1], sys.argv[2]
    {"prepare": prepare, "check": check}[command](folder)
