#!/usr/bin/env python3
"""Real Transformers as the oracle of tst_familycompat: the Llama-like families and RoPE variants.

Started by the Qt test with the project's Python environment (ACCEL_PYTHON):

  families_oracle.py OUT_DIR [CASE ...]

For each case a tiny random model (2 or 3 layers, hidden 64, 4 heads, 2 key/value heads, vocab
1000, fixed seed, weights of two or more dimensions but the embeddings times 8 so that greedy
choices are varied and not near-ties) is built by Transformers from a config and saved with save_pretrained (safetensors)
into OUT_DIR/<case>/model. Cases: Llama with each RoPE scaling (linear, dynamic NTK past
max_position_embeddings, YaRN, llama3), Phi-3 with LongRoPE crossing its original length during
generation and half-rotated heads, Mistral / Qwen2 / Phi-3 / Gemma 2 with sliding windows shorter
than the generated context, Qwen3, Gemma, Gemma 2 (soft-capping, alternating local and global
layers), Mixtral and Qwen2-MoE (a shared expert, a dense layer). The float32 logits of the case's
input_ids (model.eval()) go to OUT_DIR/<case>/expected_logits.safetensors (tensor "logits",
[1, tokens, vocab]), computed first on the fresh model, and greedy generate's new tokens
(do_sample=False, the config's eos_token_id as the stop) to the printed JSON document:

  {"transformers": VERSION, "cases": [{"name", "family", "model_dir", "input_ids", "logits_file",
    "max_new_tokens", "eos_token_id", "generated", "window", "context", "embedding_bytes"}, ...]}
"""
import json
import os
import sys

VOCAB = 1000
SEED = 20261129
MAX_NEW_TOKENS = 24
PROMPT = [1, 17, 423, 999, 5, 88, 640, 3, 250, 71, 12]
LONG_PROMPT = PROMPT + [400, 401, 7, 9, 33, 520, 640, 811, 2]

GQA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=2, max_position_embeddings=256, vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def cases():
    """(name, family, config keyword arguments, prompt)."""
    llama = dict(GQA, rope_theta=500000.0)
    rope = lambda parameters, **more: dict(llama, rope_parameters=dict(parameters, rope_theta=500000.0), **more)
    return [
        ("llama-rope-linear", "llama", rope({"rope_type": "linear", "factor": 2.0}), PROMPT),
        # max_position_embeddings 16: the long prompt is past it, and so is every generated token.
        ("llama-rope-dynamic", "llama", rope({"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=16),
         LONG_PROMPT),
        ("llama-rope-yarn", "llama", rope({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                                           "beta_fast": 16.0}), PROMPT),
        ("llama-rope-llama3", "llama", rope({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                             "high_freq_factor": 4.0, "original_max_position_embeddings": 64}), PROMPT),
        # Half of each 16-channel head rotated; LongRoPE's short factors up to position 15, long ones after.
        ("phi3-longrope", "phi3", dict(GQA, max_position_embeddings=64, original_max_position_embeddings=16,
                                       rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                                        "partial_rotary_factor": 0.5,
                                                        "short_factor": [1.0, 1.5, 2.0, 3.0],
                                                        "long_factor": [1.0, 4.0, 8.0, 16.0]}), PROMPT),
        ("mistral-window", "mistral", dict(GQA, sliding_window=4), PROMPT),
        ("qwen2-window", "qwen2", dict(GQA, use_sliding_window=True, sliding_window=5, max_window_layers=1), PROMPT),
        ("phi3-window", "phi3", dict(GQA, sliding_window=6), PROMPT),
        ("qwen3", "qwen3", dict(GQA, head_dim=32, attention_bias=True, rope_theta=1000000.0), PROMPT),
        ("gemma", "gemma", dict(GQA, head_dim=16, hidden_act="gelu_pytorch_tanh"), PROMPT),
        ("gemma2", "gemma2", dict(GQA, num_hidden_layers=3, head_dim=16, sliding_window=4, query_pre_attn_scalar=32,
                                  attn_logit_softcapping=5.0, final_logit_softcapping=8.0), PROMPT),
        ("mixtral", "mixtral", dict(GQA, num_local_experts=4, num_experts_per_tok=2), PROMPT),
        ("qwen2_moe", "qwen2_moe", dict(GQA, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=48,
                                        shared_expert_intermediate_size=96, mlp_only_layers=[1],
                                        norm_topk_prob=False), PROMPT),
    ]


def build(family, kwargs):
    import transformers

    classes = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2", "qwen3": "Qwen3", "gemma": "Gemma",
               "gemma2": "Gemma2", "phi3": "Phi3", "mixtral": "Mixtral", "qwen2_moe": "Qwen2Moe"}
    prefix = classes[family]
    config = getattr(transformers, prefix + "Config")(**kwargs)
    return config, getattr(transformers, prefix + "ForCausalLM")(config)


def run_case(out_dir, index, name, family, kwargs, input_ids):
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(SEED + index)
    config, model = build(family, kwargs)
    model = model.to(torch.float32).eval()
    with torch.no_grad():
        for parameter_name, parameter in model.named_parameters():
            if parameter.dim() >= 2 and "embed" not in parameter_name:
                parameter.mul_(8.0)
    case_dir = os.path.join(out_dir, name)
    model_dir = os.path.join(case_dir, "model")
    os.makedirs(model_dir, exist_ok=True)
    model.save_pretrained(model_dir, safe_serialization=True)
    ids = torch.tensor([input_ids], dtype=torch.long)
    with torch.no_grad():
        logits = model(ids).logits.to(torch.float32).contiguous()
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=MAX_NEW_TOKENS, eos_token_id=config.eos_token_id,
                             pad_token_id=config.eos_token_id)
    logits_file = os.path.join(case_dir, "expected_logits.safetensors")
    save_file({"logits": logits}, logits_file)
    generated = out[0, ids.shape[1]:].tolist()
    return {"name": name, "family": family, "model_dir": model_dir, "input_ids": input_ids,
            "logits_file": logits_file, "max_new_tokens": MAX_NEW_TOKENS, "eos_token_id": config.eos_token_id,
            "generated": generated, "window": kwargs.get("sliding_window") or 0,
            "embedding_bytes": 4 * config.vocab_size * config.hidden_size,
            "context": len(input_ids) + len(generated)}


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: families_oracle.py OUT_DIR [CASE ...]")
    import transformers

    out_dir = sys.argv[1]
    wanted = set(sys.argv[2:])
    all_cases = cases()
    unknown = wanted - {case[0] for case in all_cases}
    if unknown:
        raise SystemExit(f"unknown cases {sorted(unknown)}")
    results = [run_case(out_dir, index, *case) for index, case in enumerate(all_cases)
               if not wanted or case[0] in wanted]
    json.dump({"transformers": transformers.__version__, "cases": results}, sys.stdout)


if __name__ == "__main__":
    main()
