#!/usr/bin/env python3
"""Real Transformers as the oracle of tst_logitscompat.

Started by the Qt test with the project's Python environment (ACCEL_PYTHON):

  transformers_oracle.py OUT_DIR [CASE ...]

For each case a tiny random model (GPT-2, Llama, Mistral, Qwen2; 2 layers, hidden 64, 4 heads,
2 key/value heads for the GQA families, vocab 1000, fixed seed; two GPT-2 cases with
scale_attn_by_inverse_layer_idx, and with scale_attn_weights false and reorder_and_upcast_attn) is built by Transformers from a
config and saved with save_pretrained (safetensors) into OUT_DIR/<case>/model; one case is saved
sharded (>= 2 shards and model.safetensors.index.json). Its float32 logits for the case's
input_ids (model.eval()) go to OUT_DIR/<case>/expected_logits.safetensors (tensor "logits",
[1, tokens, vocab]) and greedy generate's new tokens (do_sample=False, the config's
eos_token_id as the stop, as accel generate does; in the "-eos" case that is a token greedy decoding
reaches midway) to the printed JSON document (only the named cases when CASEs are given):

  {"transformers": VERSION, "cases": [{"name", "family", "model_dir", "sharded", "shards",
    "input_ids", "logits_file", "max_new_tokens", "eos_token_id", "generated"}, ...]}
"""
import json
import os
import sys

VOCAB = 1000
SEED = 20261126
MAX_NEW_TOKENS = 24


def family_config(family, overrides=None):
    import transformers

    common = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, **(overrides or {}))
    if family == "gpt2":
        return transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=128, **common)
    gqa = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=256, **common)
    # Each family with a value or two off its defaults, as real checkpoints have them.
    if family == "llama":
        return transformers.LlamaConfig(rope_theta=500000.0, rms_norm_eps=1e-5, **gqa)
    if family == "mistral":
        return transformers.MistralConfig(sliding_window=4096, **gqa)
    if family == "qwen2":
        return transformers.Qwen2Config(tie_word_embeddings=True, rope_theta=1000000.0, **gqa)
    raise SystemExit(f"unknown family {family}")


def model_class(family):
    import transformers

    return {"gpt2": transformers.GPT2LMHeadModel, "llama": transformers.LlamaForCausalLM,
            "mistral": transformers.MistralForCausalLM, "qwen2": transformers.Qwen2ForCausalLM}[family]


def greedy(model, ids, eos_token_id):
    import torch

    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=MAX_NEW_TOKENS,
                             eos_token_id=eos_token_id, pad_token_id=eos_token_id)
    return out[0, ids.shape[1]:].tolist()


def run_case(out_dir, index, name, family, sharded, stop_midway, input_ids, overrides=None):
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(SEED + index)
    config = family_config(family, overrides)
    model = model_class(family)(config).to(torch.float32).eval()
    ids = torch.tensor([input_ids], dtype=torch.long)
    # Random init keeps the weights near 0.02: scale them up so the logits spread and greedy
    # choices are not near-ties decided by rounding.
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() >= 2:
                parameter.mul_(4.0)
    if stop_midway:
        # The eos token becomes one greedy decoding reaches after a few steps: both must stop
        # there, with the eos token as the last one.
        free_run = greedy(model, ids, None)
        config.eos_token_id = free_run[5]
        model.generation_config.eos_token_id = free_run[5]
    case_dir = os.path.join(out_dir, name)
    model_dir = os.path.join(case_dir, "model")
    os.makedirs(model_dir, exist_ok=True)
    # ~0.3 MB of float32 weights: 100KB shards give several.
    model.save_pretrained(model_dir, safe_serialization=True, max_shard_size="100KB" if sharded else "1GB")
    shards = sorted(f for f in os.listdir(model_dir) if f.endswith(".safetensors"))
    if sharded and (len(shards) < 2 or not os.path.exists(os.path.join(model_dir, "model.safetensors.index.json"))):
        raise SystemExit(f"{name}: save_pretrained gave {shards}, not a sharded checkpoint")

    with torch.no_grad():
        logits = model(ids).logits.to(torch.float32).contiguous()
    generated = greedy(model, ids, config.eos_token_id)
    logits_file = os.path.join(case_dir, "expected_logits.safetensors")
    save_file({"logits": logits}, logits_file)
    return {"name": name, "family": family, "model_dir": model_dir, "sharded": sharded, "shards": len(shards),
            "input_ids": input_ids, "logits_file": logits_file, "max_new_tokens": MAX_NEW_TOKENS,
            "eos_token_id": config.eos_token_id, "generated": generated}


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: transformers_oracle.py OUT_DIR [CASE ...]")
    import transformers

    out_dir = sys.argv[1]
    wanted = set(sys.argv[2:])
    input_ids = [1, 17, 423, 999, 5, 88, 640, 3, 250, 71, 12]
    cases = [(family, family, False, False) for family in ("gpt2", "llama", "mistral", "qwen2")]
    cases += [("llama-sharded", "llama", True, False), ("qwen2-eos", "qwen2", False, True)]
    # GPT-2's attention scaling keys: by 1/(layer + 1) more, and unscaled with the float32 upcast
    # (identical math in float32; transformers' eager attention path, which the upcast belongs to).
    cases += [("gpt2-inverse-layer-scale", "gpt2", False, False, {"scale_attn_by_inverse_layer_idx": True}),
              ("gpt2-unscaled-upcast", "gpt2", False, False,
               {"scale_attn_weights": False, "reorder_and_upcast_attn": True, "attn_implementation": "eager"})]
    unknown = wanted - {case[0] for case in cases}
    if unknown:
        raise SystemExit(f"unknown cases {sorted(unknown)}")
    results = [run_case(out_dir, index, *case[:4], input_ids, *case[4:]) for index, case in enumerate(cases)
               if not wanted or case[0] in wanted]
    json.dump({"transformers": transformers.__version__, "cases": results}, sys.stdout)


if __name__ == "__main__":
    main()
