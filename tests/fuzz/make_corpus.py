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


def serverequest_seeds():
    # The examples of docs/worker-protocol.md, one session per seed.
    def lines(*requests):
        return "".join((r if isinstance(r, str) else json.dumps(r, separators=(",", ":"))) + "\n" for r in requests)
    write("serverequest", "protocol_examples.jsonl", lines(
        {"op": "load", "id": 1, "model": "DIR", "device_map": "auto", "max_memory": "cpu=8GiB",
         "offload_folder": "DIR", "dtype": "bfloat16", "threads": 4},
        {"op": "generate", "id": "g1", "prompt": "text", "max_new_tokens": 32, "greedy": False, "temperature": 1.0,
         "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, "seed": 0, "stop": ["\n\n"], "stop_token_ids": [2]},
        {"op": "cancel"}, {"op": "unload", "id": 7}, {"op": "shutdown"}))
    # What the studio's playground sends: a planned device map, sampling controls, token ids.
    write("serverequest", "playground.jsonl", lines(
        {"op": "load", "id": "load-1", "model": "/models/gpt2",
         "device_map": {"transformer.wte": "cpu", "transformer.h.0": "disk", "transformer.h.1": 0, "": "cpu"},
         "threads": 2},
        {"op": "generate", "id": "gen-2", "max_new_tokens": 64, "greedy": True, "temperature": 0.7, "top_k": 40,
         "top_p": 0.95, "repetition_penalty": 1.1, "seed": 5, "input_ids": [1, 2, 3]},
        {"op": "generate", "id": "gen-3", "prompt": "Once upon a time", "stop": ["\n", "\t"], "seed": 0},
        {"op": "cancel"}, {"op": "unload", "id": "unload-4"}, {"op": "shutdown"}))
    # The requests of tst_inferenceworker and tst_workerinput (a shallower deep id, a small map).
    write("serverequest", "worker_tests.jsonl", lines(
        {"op": "generate", "id": "early", "input_ids": [1]},
        {"op": "load", "id": "l1", "model": "/tmp/gpt2", "device_map": {"transformer.h.0": "disk", "": "cpu"}},
        {"op": "generate", "id": "g1", "input_ids": [5, 6, 7], "max_new_tokens": 4, "greedy": True,
         "stop_token_ids": [-1]},
        {"op": "generate", "id": "long", "input_ids": [1, 2], "max_new_tokens": 1000000, "stop_token_ids": [-1]},
        {"op": "cancel", "id": "long"},
        '{"op":"unload","id":' + "[" * 70 + "]" * 70 + "}",
        {"op": 5, "id": "a"}, {"op": "load", "id": "b", "model": ["x"]},
        {"op": "load", "id": "c", "model": "/tmp/gpt2", "device_map": {"transformer.h.0": [1]}},
        {"op": "unload", "id": "d"}, {"op": "shutdown"}))
    write("serverequest", "odd_lines.jsonl",
          "\n   \t\r\n" + '{"op":"unload","id":null}\r\n' + "[1,2]\n" + '"load"\n' + "{\n" +
          '{"op":"generate","id":{"k":[true,false]},"input_ids":[9223372036854775807],"seed":18446744073709551615}\n' +
          '{"op":"load","model":"m","device_map":"{\\"\\": \\"cpu\\"}","dtype":"float16"}')


def deepspeed_seeds():
    # DeepSpeed config files as Accelerate's examples write them, and the shapes that crashed the
    # reader before it went through the input guard.
    shutil.copy(os.path.join(ROOT, "tests", "data", "configs", "deepspeed_zero2.json"),
                os.path.join(CORPUS, "deepspeed", "zero2_fixture.json"))
    write("deepspeed", "zero3_offload.json", json.dumps({
        "train_batch_size": "auto", "gradient_accumulation_steps": 4, "gradient_clipping": 1.0,
        "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True},
                              "offload_param": {"device": "cpu"}, "stage3_prefetch_bucket_size": 0,
                              "stage3_gather_16bit_weights_on_model_save": True},
        "bf16": {"enabled": True}}, indent=2))
    write("deepspeed", "auto.json", json.dumps({"gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
                                               "zero_optimization": {"stage": 1}}))
    write("deepspeed", "wrong_shapes.json", json.dumps({"optimizer": [], "zero_optimization": {
        "offload_optimizer": "cpu", "stage": 4294967299}, "gradient_accumulation_steps": 4294967297}))


def jobfile_seeds():
    for name in ("demo-gpt.yaml", "selftest.yaml"):
        shutil.copy(os.path.join(ROOT, "resources", "jobs", name), os.path.join(CORPUS, "jobfile", name))
    write("jobfile", "mlp.yaml", "recipe: mlp\noutput_dir: out\nmlp:\n  data: data.safetensors\n  hidden: [16, 8]\n"
          "  optimizer: adamw\ntraining: {max_steps: 60, batch_size: 16, learning_rate: 0.1, mixed_precision: BF16}\n")
    write("jobfile", "aliases.yaml", "recipe: gpt\nbase: &b {n_layer: 2, n_head: 4}\nmodel: *b\n"
          "x0: &x0 [a, a, a]\nx1: &x1 [*x0, *x0, *x0]\nx2: [*x1, *x1]\n")
    write("jobfile", "quoted.yaml", 'recipe: "gpt"\nname: "tab\\there \\"q\\""\nsample: {prompt: \'it\'\'s\'}\n'
          "data:\n  corpus: ~/c.txt\n---\nrecipe: mlp\n")


def textsteps_seeds():
    # Bytes: normalizer count, pre-tokenizer count, then each step (kind, flags, strings) and the text.
    b = bytes
    write("textsteps", "gpt2_bytelevel.bin", b([0, 1, 0, 3]) + "Hello world, it's 2026!  \n".encode())
    write("textsteps", "llama_metaspace.bin",
          b([2, 1, 0, 3]) + "\xe2\x96\x81".encode() + b([1, 1]) + b" " + b([3]) + "\xe2\x96\x81".encode() +
          b([2, 4, 0]) + "the lower caf\xc3\xa9".encode())
    write("textsteps", "split_regex.bin", b([1, 2, 2, 2, 3, 1, 3, 0]) + b"aa  bb\n\n12 x" )
    write("textsteps", "backtracking.bin", b([0, 1, 1, 1, 4]) + b"a" * 300)
    write("textsteps", "digits_punct.bin", b([0, 3, 5, 1, 6, 2, 3, 0]) + b"x=12,345; y:=[7]")


def mergeindex_seeds():
    index = {"format": "accel-sharded-v1", "kind": "model", "ranks": 2, "step": 0, "tensors": {
        "fc.weight": {"shape": [2, 3], "pieces": [{"file": "rank0.safetensors", "offset": 0, "numel": 4},
                                                 {"file": "rank1.safetensors", "offset": 4, "numel": 2}]},
        "fc.bias": {"shape": [2], "pieces": [{"file": "rank1.safetensors", "offset": 0, "numel": 2}]}}}
    write("mergeindex", "two_ranks.json", json.dumps(index, indent=1))
    huge = json.loads(json.dumps(index))
    huge["tensors"]["fc.weight"]["shape"] = [1000000, 517]
    write("mergeindex", "huge_shape.json", json.dumps(huge))
    gap = json.loads(json.dumps(index))
    gap["tensors"]["fc.weight"]["pieces"][1]["offset"] = 3
    write("mergeindex", "overlap.json", json.dumps(gap))


def main():
    # Everything but the regression_* inputs of fixed findings is written again.
    for folder, _, files in os.walk(CORPUS):
        for name in files:
            if not name.startswith("regression_"):
                os.remove(os.path.join(folder, name))
    for target in ("tokenizer", "deepspeed", "jobfile"):
        os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    safetensors_seeds()
    checkpointindex_seeds()
    modelconfig_seeds()
    tokenizer_seeds()
    metrics_seeds()
    config_seeds()
    launchargs_seeds()
    serverequest_seeds()
    deepspeed_seeds()
    jobfile_seeds()
    textsteps_seeds()
    mergeindex_seeds()
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(CORPUS) for f in fs)
    print(f"corpora written to {CORPUS}: {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
