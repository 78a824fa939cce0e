#!/usr/bin/env python3
"""The oracle of tst_quantcompat: a tiny Llama trained on real text, and its weights written in the
quantized checkpoint layouts transformers loads.

Started by the Qt test with the project's Python environment (ACCEL_PYTHON):

  quant_oracle.py OUT_DIR TEXT_FILE...

The text (the project's own documentation: real English prose and tables) is read as bytes, ids =
bytes (vocabulary 256); the last 4096 bytes are held out. A LlamaForCausalLM (hidden 64, 2 layers,
4 heads, intermediate 256, untied head) trains on the rest for 150 steps of 8 x 64 bytes with AdamW and is
saved with save_pretrained into OUT_DIR/float32. Its perplexity on the held-out bytes (windows of
256) is printed.

bitsandbytes (0.50, its CPU backend) through transformers' BitsAndBytesConfig, as a user would:

  onload-<m>  for m in int8, nf4, fp4: the float32 folder loaded with load_in_8bit / load_in_4bit
              (quant type m, compute dtype float32, no nested statistics; Accelerate's default skip:
              lm_head). Each quantized layer's weights as bitsandbytes dequantizes them go to
              OUT_DIR/onload-<m>.safetensors (what `--quantization m` must give bit for bit), and the
              model's perplexity (bitsandbytes' CPU path as a user runs it) is printed.
  bnb-int8, bnb-nf4 (nested statistics: bnb_4bit_use_double_quant), bnb-fp4: those models written
              with save_pretrained (bitsandbytes' serialized layouts), loaded back by transformers;
              expected.safetensors holds the reloaded layers' dequantized weights and the printed
              logits are the reloaded model's on the first held-out window. 4-bit products are
              bitsandbytes' float32 definition (exact_4bit); int8 is LLM.int8, which also quantizes
              the activations (to int8 rows of their float16 values).

GPTQ and AWQ (no CPU package of either here) are written from the formats' definitions, every
Linear layer of the decoder blocks quantized (the head stays float32), with config.json's
quantization_config as their tools write it:

  gptq       GPTQ v1 (checkpoint_format gptq), 4 bits, group_size 64, desc_act: inputs in a random
             order, g_idx naming each input's group; qweight int32 [in / 8, out] packed along the
             inputs, qzeros int32 [groups, out / 8] holding zero - 1 packed along the outputs, scales
             float16 [groups, out];
  awq        AWQ GEMM, 4 bits, group_size 64: qweight int32 [in, out / 8] and qzeros packed along the
             outputs in the order 0 2 4 6 1 3 5 7, scales float16 [groups, out].

Their weights as the format defines them (the float16 product scale * (q - zero)) go to
OUT_DIR/<layout>/expected.safetensors under the layers' names.

Printed JSON: {"float32_perplexity", "eval_ids": [...], "float32": dir, "layers": N,
"layouts": {name: dir}, "onload": {m: {"weights": file, "perplexity": p}},
"gpt2": {"folder": dir, "int8" / "nf4": file of the weights bitsandbytes quantized on load},
"logits": {"float32" or a bnb layout: [[...] per position]}} (logits on eval_ids[:256]).
"""
import json
import math
import os
import sys

HIDDEN, INTER, LAYERS, HEADS, VOCAB = 64, 256, 2, 4, 256
GROUP = 64
SEED = 20261129


def train(text):
    import torch
    import transformers

    torch.manual_seed(SEED)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTER,
                                      num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                                      max_position_embeddings=512, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                                      tie_word_embeddings=False)
    model = transformers.LlamaForCausalLM(config).float()
    data = torch.tensor(list(text), dtype=torch.long)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    generator = torch.Generator().manual_seed(SEED)
    model.train()
    for _ in range(150):
        starts = torch.randint(0, len(data) - 65, (8,), generator=generator)
        batch = torch.stack([data[s:s + 64] for s in starts])
        loss = model(batch, labels=batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def perplexity(model, ids):
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(ids) - 1, 256):
            window = torch.tensor([ids[start:start + 257]])
            if window.shape[1] < 2:
                break
            logits = model(window[:, :-1]).logits.float()
            loss = torch.nn.functional.cross_entropy(logits[0], window[0, 1:], reduction="sum")
            total += loss.item()
            count += window.shape[1] - 1
    return math.exp(total / count)


def quantized_linears(model):
    return [(name, module.weight.detach().float().contiguous()) for name, module in model.named_modules()
            if name.startswith("model.layers.") and module.__class__.__name__ == "Linear"]


def bnb_weights(model):
    """The decoder's quantized Linear layers, dequantized as bitsandbytes defines them (float32)."""
    import bitsandbytes.functional as F

    out = {}
    for name, module in model.named_modules():
        kind = module.__class__.__name__
        if kind == "Linear8bitLt":
            out[name] = F.int8_vectorwise_dequant(module.weight.data, module.weight.SCB).float().contiguous()
        elif kind == "Linear4bit":
            out[name] = F.dequantize_4bit(module.weight.data, module.weight.quant_state).float().contiguous()
    return out


def window_logits(model, ids):
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids[:256]])).logits[0].float().tolist()


def bnb_config(method, nested):
    import torch
    import transformers

    if method == "int8":
        return transformers.BitsAndBytesConfig(load_in_8bit=True)
    return transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=method,
                                           bnb_4bit_use_double_quant=nested, bnb_4bit_compute_dtype=torch.float32)


def group_integers(w, generator):
    """Asymmetric 4-bit groups of GROUP inputs: q [out, in], scale float16 and integer zero [groups, out]."""
    import torch

    out, inp = w.shape
    groups = w.reshape(out, inp // GROUP, GROUP)
    low, high = groups.amin(dim=2), groups.amax(dim=2)
    scale = ((high - low) / 15).clamp(min=1e-6).half()
    # Zero points from 1: GPTQ v1 stores zero - 1 in four bits, so a zero of 0 cannot be written.
    zero = torch.round(-low / scale.float()).clamp(1, 15).to(torch.int32)
    q = torch.round(groups / scale.float()[..., None] + zero[..., None]).clamp(0, 15).to(torch.int32)
    return q.reshape(out, inp), scale.t().contiguous(), zero.t().contiguous()


def pack_words(values, axis):
    """int32 [..] -> eight 4-bit values per int32 word along `axis` (value j in bits 4j..4j+3)."""
    import torch

    v = values.movedim(axis, -1)
    shape = list(v.shape)
    v = v.reshape(*shape[:-1], shape[-1] // 8, 8).to(torch.int64)
    word = sum((v[..., j] & 15) << (4 * j) for j in range(8))
    word = torch.where(word >= 2 ** 31, word - 2 ** 32, word).to(torch.int32)
    return word.movedim(-1, axis).contiguous()


def gptq(w, generator):
    import torch

    out, inp = w.shape
    order = torch.randperm(inp, generator=generator)  # act-order: inputs by decreasing importance
    g_idx = torch.empty(inp, dtype=torch.int32)
    g_idx[order] = (torch.arange(inp) // GROUP).to(torch.int32)
    permuted = w[:, order]
    q_perm, scale, zero = group_integers(permuted, generator)
    q = torch.empty_like(q_perm)
    q[:, order] = q_perm
    expected = (scale[g_idx.long()].t().float().half() * (q - zero[g_idx.long()].t()).half()).float()
    tensors = {"qweight": pack_words(q.t().contiguous(), 0), "qzeros": pack_words(zero - 1, 1), "scales": scale,
               "g_idx": g_idx}
    return tensors, expected


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def awq(w, generator):
    import torch

    q, scale, zero = group_integers(w, generator)
    group = torch.arange(w.shape[1]) // GROUP
    expected = (scale[group].t().half() * (q - zero[group].t()).half()).float()

    def pack_awq(values):  # [rows, out] -> [rows, out / 8], output 8c + AWQ_ORDER[j] in nibble j
        rows, cols = values.shape
        v = values.reshape(rows, cols // 8, 8)[..., AWQ_ORDER]
        return pack_words(v.reshape(rows, cols), 1)

    return {"qweight": pack_awq(q.t().contiguous()), "qzeros": pack_awq(zero), "scales": scale}, expected


def write_layout(model, out_dir, name, quantize, config_entry):
    import torch
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(SEED)
    state = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
    expected = {}
    for layer, w in quantized_linears(model):
        del state[layer + ".weight"]
        tensors, want = quantize(w, generator)
        for suffix, tensor in tensors.items():
            state[layer + "." + suffix] = tensor.contiguous()
        expected[layer] = want.contiguous()
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    save_file(state, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    save_file(expected, os.path.join(folder, "expected.safetensors"))
    config = model.config.to_dict()
    config["quantization_config"] = config_entry
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return folder


def exact_4bit(model):
    """Linear4bit's CPU fast path (taken where the CPU has AVX512-BF16) repacks the weights with bfloat16
    absmax and multiplies in bfloat16 whatever bnb_4bit_compute_dtype says; switched off, the product is
    bitsandbytes' definition: the dequantized weights times the input in the compute dtype (float32)."""
    for module in model.modules():
        if hasattr(module, "support_avx512bf16_for_cpu"):
            module.support_avx512bf16_for_cpu = False
    return model


def write_bnb(float_dir, out_dir, eval_ids, result):
    """bitsandbytes through transformers: quantized on load (Accelerate's defaults: no nested statistics),
    saved before any forward (NF4 saved with bnb_4bit_use_double_quant), and loaded back."""
    import transformers
    from safetensors.torch import save_file

    def load(folder, **quantization):
        return transformers.AutoModelForCausalLM.from_pretrained(folder, device_map="cpu", **quantization)

    for method in ("int8", "nf4", "fp4"):
        model = load(float_dir, quantization_config=bnb_config(method, nested=False))  # its perplexity: fast path
        weights = os.path.join(out_dir, "onload-" + method + ".safetensors")
        save_file(bnb_weights(model), weights)
        folder = os.path.join(out_dir, "bnb-" + method)
        if method == "nf4":
            load(float_dir, quantization_config=bnb_config(method, nested=True)).save_pretrained(folder)
        else:
            model.save_pretrained(folder)
        result["onload"][method] = {"weights": weights, "perplexity": perplexity(model, eval_ids)}
        del model
        reloaded = exact_4bit(load(folder))
        save_file(bnb_weights(reloaded), os.path.join(folder, "expected.safetensors"))
        result["layouts"]["bnb-" + method] = folder
        result["logits"]["bnb-" + method] = window_logits(reloaded, eval_ids)


def write_gpt2(out_dir, result):
    """A random GPT-2 (Conv1D layers, tied embeddings) quantized on load: transformers quantizes each Conv1D
    weight [in, out] transposed, as a Linear's [out, in]."""
    import torch
    import transformers
    from safetensors.torch import save_file

    torch.manual_seed(SEED)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=128,
                                     bos_token_id=1, eos_token_id=2)
    folder = os.path.join(out_dir, "gpt2")
    transformers.GPT2LMHeadModel(config).float().save_pretrained(folder)
    result["gpt2"] = {"folder": folder}
    for method in ("int8", "nf4"):
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, quantization_config=bnb_config(method, False),
                                                                  device_map="cpu")
        weights = os.path.join(out_dir, "onload-gpt2-" + method + ".safetensors")
        save_file(bnb_weights(model), weights)
        result["gpt2"][method] = weights


def main():
    import logging

    logging.disable(logging.WARNING)
    out_dir = sys.argv[1]
    text = b"".join(open(path, "rb").read() for path in sys.argv[2:])
    train_text, eval_text = text[:-4096], text[-4096:]
    model = train(train_text)
    float_dir = os.path.join(out_dir, "float32")
    model.save_pretrained(float_dir, safe_serialization=True)
    eval_ids = list(eval_text)
    result = {"float32_perplexity": perplexity(model, eval_ids), "eval_ids": eval_ids, "float32": float_dir,
              "layers": len(quantized_linears(model)), "onload": {}, "layouts": {},
              "logits": {"float32": window_logits(model, eval_ids)}}
    result["layouts"]["gptq"] = write_layout(model, out_dir, "gptq", gptq,
                                             {"quant_method": "gptq", "bits": 4, "group_size": GROUP,
                                              "desc_act": True, "sym": False, "checkpoint_format": "gptq"})
    result["layouts"]["awq"] = write_layout(model, out_dir, "awq", awq,
                                            {"quant_method": "awq", "bits": 4, "group_size": GROUP,
                                             "zero_point": True, "version": "gemm"})
    write_bnb(float_dir, out_dir, eval_ids, result)
    write_gpt2(out_dir, result)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
