#!/usr/bin/env python3
"""The peer of the fine-tuning benchmark: the shortest script an Accelerate user writes to fine-tune a
causal LM (transformers model, Accelerator.prepare, torch AdamW; peft's get_peft_model for LoRA), run
under torchrun with the variables `accelerate launch` exports (run_bench.py). The data is packed as
the causal_lm recipe packs it (documents separated by blank lines, tokenized without special tokens,
EOS after each, cut into windows of --block tokens), so both sides train on the same batches. Prints on the main process
  RESULT tokens_per_s <x>
and on every process
  RSS rank <r> <peak resident bytes>
usage: peer_finetune.py MODEL_DIR DATA.txt [--block N] [--batch N] [--warmup N] [--steps N] [--lora MODULES]
"""
import argparse
import resource
import time

import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("data")
parser.add_argument("--block", type=int, default=128)
parser.add_argument("--batch", type=int, default=2)
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--lora", default="")
args = parser.parse_args()

tokenizer = PreTrainedTokenizerFast(tokenizer_file=f"{args.model}/tokenizer.json")
eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
text = open(args.data, encoding="utf-8").read()
documents = [d.strip("\n") for d in text.split("\n\n") if d.strip()]
ids = []
for document in documents:
    ids += tokenizer(document, add_special_tokens=False)["input_ids"] + [eos]
windows = torch.tensor(ids[: len(ids) // args.block * args.block]).view(-1, args.block)

accelerator = Accelerator()
model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
if args.lora:
    from peft import LoraConfig, get_peft_model
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=args.lora.split(","),
                                             task_type="CAUSAL_LM"))
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
loader = torch.utils.data.DataLoader(windows, batch_size=args.batch, shuffle=False)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
model.train()
start = None
for step, batch in enumerate(loader):
    if step == args.warmup:
        start = time.perf_counter()
    if step == args.warmup + args.steps:
        break
    loss = model(input_ids=batch, labels=batch).loss
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
seconds = time.perf_counter() - start
tokens = args.steps * args.batch * args.block * accelerator.num_processes
if accelerator.is_main_process:
    print(f"RESULT tokens_per_s {tokens / seconds:.3f}", flush=True)
print(f"RSS rank {accelerator.process_index} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}", flush=True)
