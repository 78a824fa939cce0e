#!/usr/bin/env python3
"""llama.cpp peer for bench_inference: the same safetensors checkpoint (GPT-2 or Llama, float32)
written as GGUF with the `gguf` package, then run by llama.cpp through llama-cpp-python, greedy, with
its KV cache, THREADS threads.

  bench_llamacpp.py FOLDER THREADS DECODE_TOKENS TYPE [GGUF]   (TYPE: f32, q8_0)

GGUF, when given, is where the converted file is kept: written when it is not there yet, read as it
is when it is (bench_inference runs this in several rounds on one conversion).

TYPE f32 writes every tensor as stored; q8_0 writes the Linear layers' weights of the blocks as
llama.cpp's Q8_0 (blocks of 32 int8 values with one float16 scale, quantized by the gguf package's
reference quantizer), the embeddings, the output head and the norms in float32: the same layers
our int8 quantizes (the tied or skipped head and the embeddings stay float32 there too).

The tensors get llama.cpp's names and layouts as its own converter gives them (GPT-2's Conv1D
weights transposed to [out, in]; Llama's q / k rows permuted to the interleaved rotary order).
The vocabulary is a placeholder of the model's size (the prompt is given as token ids).

Prints `decode <tokens/s>` ((N - 1) tokens after the first over their time), `first_token_ms <ms>`
(a 16-token prompt evaluated and the first token picked), `weight_bytes <bytes of the GGUF's
tensors>`. Needs llama-cpp-python and gguf (tests/bench/inference/requirements-bench.txt); exits 3
when they are missing."""
import json
import os
import sys
import tempfile
import time

try:
    import gguf
    import llama_cpp
    import numpy as np
except ImportError as error:  # the bench says the peer is missing
    print(f"missing {error.name}: pip install -r tests/bench/inference/requirements-bench.txt", file=sys.stderr)
    sys.exit(3)


def read_safetensors(path):
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(length))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", f"{name}: {info['dtype']} (float32 checkpoints only)"
        begin, end = info["data_offsets"]
        tensors[name] = data[begin:end].view(np.float32).reshape(info["shape"])
    return tensors


def permute(w, heads):  # HF rotate-half rows -> llama.cpp's interleaved pairs
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_tensors(config, tensors):
    """(name, array, quantizable) in llama.cpp's names and layouts."""
    out = []
    if config["model_type"] == "gpt2":
        out.append(("token_embd.weight", tensors["transformer.wte.weight"], False))
        out.append(("position_embd.weight", tensors["transformer.wpe.weight"], False))
        names = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
                 "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
        for i in range(config["n_layer"]):
            for hf, ours in names.items():
                for part in ("weight", "bias"):
                    t = tensors[f"transformer.h.{i}.{hf}.{part}"]
                    linear = part == "weight" and t.ndim == 2
                    out.append((f"blk.{i}.{ours}.{part}", t.T if linear else t, linear))
        out.append(("output_norm.weight", tensors["transformer.ln_f.weight"], False))
        out.append(("output_norm.bias", tensors["transformer.ln_f.bias"], False))
        return out
    heads, kv = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    out.append(("token_embd.weight", tensors["model.embed_tokens.weight"], False))
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(config["num_hidden_layers"]):
        for hf, ours in names.items():
            t = tensors[f"model.layers.{i}.{hf}.weight"]
            if hf == "self_attn.q_proj":
                t = permute(t, heads)
            elif hf == "self_attn.k_proj":
                t = permute(t, kv)
            out.append((f"blk.{i}.{ours}.weight", t, t.ndim == 2))
    out.append(("output_norm.weight", tensors["model.norm.weight"], False))
    head = tensors.get("lm_head.weight", tensors["model.embed_tokens.weight"])
    out.append(("output.weight", head, False))
    return out


def write_gguf(folder, kind, path):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    gpt2 = config["model_type"] == "gpt2"
    arch = "gpt2" if gpt2 else "llama"
    writer = gguf.GGUFWriter(path, arch)
    writer.add_name("bench")
    if gpt2:
        hidden, layers = config["n_embd"], config["n_layer"]
        writer.add_context_length(config.get("n_positions", 1024))
        writer.add_embedding_length(hidden)
        writer.add_feed_forward_length(config.get("n_inner") or 4 * hidden)
        writer.add_block_count(layers)
        writer.add_head_count(config["n_head"])
        writer.add_layer_norm_eps(config.get("layer_norm_epsilon", 1e-5))
    else:
        hidden = config["hidden_size"]
        heads = config["num_attention_heads"]
        writer.add_context_length(config.get("max_position_embeddings", 2048))
        writer.add_embedding_length(hidden)
        writer.add_feed_forward_length(config["intermediate_size"])
        writer.add_block_count(config["num_hidden_layers"])
        writer.add_head_count(heads)
        writer.add_head_count_kv(config.get("num_key_value_heads", heads))
        writer.add_rope_dimension_count(hidden // heads)
        writer.add_rope_freq_base(config.get("rope_theta", 10000.0))
        writer.add_layer_norm_rms_eps(config.get("rms_norm_eps", 1e-6))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if kind == "q8_0" else gguf.LlamaFileType.ALL_F32)
    vocab = config["vocab_size"]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    tokens += [f"t{i}" for i in range(len(tokens), vocab)]
    types += [1] * (vocab - len(types))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens[:vocab])
    writer.add_token_scores([0.0] * vocab)
    writer.add_token_types(types[:vocab])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    weight_bytes = 0
    for name, array, linear in gguf_tensors(config, tensors):
        array = np.ascontiguousarray(array, dtype=np.float32)
        if kind == "q8_0" and linear:
            data = gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(name, data, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            data = array
            writer.add_tensor(name, data)
        weight_bytes += data.nbytes
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return weight_bytes


def main():
    folder, threads, tokens, kind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    kept = sys.argv[5] if len(sys.argv) > 5 else None
    with tempfile.TemporaryDirectory() as scratch:
        path = kept or os.path.join(scratch, "model.gguf")
        if kept and os.path.exists(kept):
            weight_bytes = sum(int(t.n_bytes) for t in gguf.GGUFReader(kept).tensors)
        else:
            weight_bytes = write_gguf(folder, kind, path + ".part" if kept else path)
            if kept:
                os.replace(path + ".part", path)
        model = llama_cpp.Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=256, n_batch=64,
                                logits_all=False, verbose=False, seed=0)
        prompt = [(100 + i) % model.n_vocab() for i in range(16)]  # the bench models: 100..115

        def run(n):
            model.reset()
            start = time.perf_counter()
            count = 0
            for _ in model.generate(prompt, top_k=1, temp=0.0, reset=True):
                count += 1
                if count == n:
                    break
            return time.perf_counter() - start

        run(2)  # warm-up
        first = min(run(1) for _ in range(3))
        full = run(tokens + 1)
        print(f"decode {tokens / (full - first):.2f}")
        print(f"first_token_ms {first * 1000:.1f}")
        print(f"weight_bytes {weight_bytes}")


if __name__ == "__main__":
    main()
