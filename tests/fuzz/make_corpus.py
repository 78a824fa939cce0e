#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/), small on purpose.

Safetensors seeds come from the real `safetensors` package (run with the project's Python
environment: .venv/bin/python tests/fuzz/make_corpus.py); the others from tests/data fixtures and
hand-written examples of each format. The corpora are committed; rerun this after changing it.
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(folder, name), mode) as f:
        f.write(data)


def safetensors_seeds():
    import numpy as np
    from safetensors.numpy import save

    write("safetensors", "two_f32.safetensors",
          save({"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.zeros(3, dtype=np.float32)},
               metadata={"format": "pt"}))
    write("safetensors", "mixed.safetensors",
          save({"ids": np.array([1, 2, 3], dtype=np.int64), "h": np.ones((2, 2), dtype=np.float16),
                "flags": np.array([True, False]), "empty": np.zeros((0, 4), dtype=np.float32),
                "scalar": np.array(1.5, dtype=np.float64)}))
    write("safetensors", "layers.safetensors",
          save({f"model.layers.{i}.weight": np.full((2,), i, dtype=np.int8) for i in range(8)},
               metadata={"format": "pt", "note": "eight layers"}))
    # Dtypes numpy lacks, written by hand in the same layout (8-byte length, padded header).
    header = json.dumps({"x": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                         "y": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [4, 8]},
                         "z": {"dtype": "F4", "shape": [4], "data_offsets": [8, 10]}}, separators=(",", ":"))
    header += " " * (-len(header) % 8)
    write("safetensors", "bf16_fp8_f4.safetensors",
          len(header).to_bytes(8, "little") + header.encode() + bytes(range(10)))


def checkpointindex_seeds():
    write("checkpointindex", "sharded.index.json", json.dumps({
        "metadata": {"total_size": 1234},
        "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                       "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
                       "lm_head.weight": "model-00002-of-00002.safetensors"}}, indent=2))
    write("checkpointindex", "bare_map.index.json", json.dumps({"a": "a.safetensors", "b": "sub/b.safetensors"}))
    write("checkpointindex", "metadata_kinds.index.json", json.dumps({
        "metadata": {"total_size": 8, "format": "pt", "nested": {"x": [1, 2]}, "none": None},
        "weight_map": {"w": "model.safetensors"}}))


def modelconfig_seeds():
    write("modelconfig", "gpt2.json", json.dumps({
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
        "n_inner": None, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}}}, indent=2))
    write("modelconfig", "llama.json", json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "vocab_size": 100,
        "max_position_embeddings": 256, "rms_norm_eps": 1e-05, "torch_dtype": "bfloat16",
        "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}, "tie_word_embeddings": False}, indent=2))
    write("modelconfig", "mistral.json", json.dumps({
        "model_type": "mistral", "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,
        "num_hidden_layers": 1, "num_key_value_heads": 1, "vocab_size": 50, "sliding_window": 4096,
        "dtype": "float16"}))
    write("modelconfig", "qwen2.json", json.dumps({
        "model_type": "qwen2", "hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2,
        "num_hidden_layers": 2, "num_key_value_heads": 1, "vocab_size": 30, "tie_word_embeddings": True,
        "head_dim": 8}))
    write("modelconfig", "mixtral.json", json.dumps({
        "model_type": "mixtral", "hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2,
        "num_hidden_layers": 2, "num_key_value_heads": 1, "vocab_size": 30, "num_local_experts": 4,
        "num_experts_per_tok": 2}))


def tokenizer_seeds():
    source = os.path.join(ROOT, "tests", "data", "tokenizers")
    for name in sorted(os.listdir(source)):
        if name.endswith(".json"):
            shutil.copy(os.path.join(source, name), os.path.join(CORPUS, "tokenizer", name))
    write("tokenizer", "tokenizer_config.json",
          json.dumps({"bos_token": {"content": "<s>", "lstrip": False}, "eos_token": "</s>"}))
    write("tokenizer", "generation_config.json", json.dumps({"eos_token_id": [2, 32000], "bos_token_id": 1}))


def metrics_seeds():
    write("metrics", "train.jsonl",
          '{"v":1,"time":1763771234.512,"rank":0,"step":120,"loss":2.314,"lr":0.0003,"samples_per_s":512.0}\n'
          '{"v":1,"time":1763771235.0,"rank":0,"step":121,"loss":2.2,"kind":"eval"}\r\n'
          '{"v":1,"time":1.5,"rank":1,"step":null,"loss":NaN,"grad_norm":Infinity}\n')
    write("metrics", "system.jsonl",
          '{"v":1,"time":1763771234.512,"rank":-1,"kind":"system","cpu_percent":37.5,"mem_used_bytes":6.1e9,'
          '"gpu0_util_percent":97}\n'
          '{"v":2,"time":1,"loss":1}\n')
    write("metrics", "slow_path.jsonl",
          '{"v":1,"step":3,"na\\u006de":1.0,"tags":["a",{"b":1}],"note":"esc\\"aped"}\n'
          'not json at all\n{"v":1,"step":4,"loss":1e400}')


def config_seeds():
    source = os.path.join(ROOT, "tests", "data", "configs")
    for name in ["single_gpu.yaml", "multi_gpu_multinode.yaml", "fsdp2.yaml", "deepspeed_zero3_nvme.yaml",
                 "fp8_te.yaml", "megatron_lm.yaml", "sagemaker.yaml", "fsdp2_parallelism.yaml",
                 "default_config_json.yaml"]:
        with open(os.path.join(source, name)) as f:
            write("config", name, "0" + f.read())  # even first byte: YAML
    for name in ["fsdp2.json", "deepspeed_zero2.json", "default_config_bf16.json"]:
        with open(os.path.join(source, name)) as f:
            write("config", name, "1" + f.read())  # odd first byte: JSON
    write("config", "aliases.yaml", "0base: &b\n  num_processes: 2\nmain: *b\ndistributed_type: MULTI_CPU\n")


def launchargs_seeds():
    write("launchargs", "simple.args", "--num_processes\n2\n--cpu\ntrain.py\n--epochs\n3")
    write("launchargs", "fsdp.args", "--use_fsdp\n--fsdp_sharding_strategy=FULL_SHARD\n--mixed_precision\nbf16\n"
                                     "--num_processes=4\n--fsdp-offload-params\ntrue\ntrain.py")
    write("launchargs", "multinode.args", "--multi_gpu\n--num_machines\n2\n--machine_rank\n1\n--main_process_ip\n"
                                          "10.0.0.1\n--main_process_port\n29501\n--gpu_ids\n0,1\n-m\npkg.train")
    write("launchargs", "deepspeed.args", "--use_deepspeed\n--zero_stage\n3\n--gradient_accumulation_steps\n4\n"
                                          "--offload_optimizer_device\ncpu\n--no_python\n./a.out\n-x")
    write("launchargs", "fp8.args", "--mixed_precision\nfp8\n--fp8_backend\nte\n--dynamo_backend\ninductor\n"
                                    "--num_cpu_threads_per_process\n8\n--max_restarts\n2\ntrain.py")


def main():
    shutil.rmtree(CORPUS, ignore_errors=True)
    os.makedirs(os.path.join(CORPUS, "tokenizer"))
    safetensors_seeds()
    checkpointindex_seeds()
    modelconfig_seeds()
    tokenizer_seeds()
    metrics_seeds()
    config_seeds()
    launchargs_seeds()
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(CORPUS) for f in fs)
    print(f"corpora written to {CORPUS}: {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
