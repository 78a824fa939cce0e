#!/usr/bin/env python3
"""transformers peer for bench_inference's quantized rows: the same GPT-2 checkpoint loaded by
transformers (float32, bfloat16, or quantized on load by bitsandbytes: int8, nf4 with compute dtype float32),
greedy `generate` with its KV cache on the same torch, 2 threads.

  bench_transformers.py FOLDER THREADS DECODE_TOKENS METHOD   (METHOD: float32, bfloat16, int8, nf4)

Prints `decode <tokens/s>` (tokens after the first, as (N - 1) / (time of N tokens - time of 1)) and
`first_token_ms <ms>` for a 16-token prompt."""
import logging
import sys
import time

import torch
import transformers


def main():
    folder, threads, tokens, method = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    logging.disable(logging.WARNING)
    torch.set_num_threads(threads)
    quantization = None
    if method == "int8":
        quantization = transformers.BitsAndBytesConfig(load_in_8bit=True)
    elif method == "nf4":
        quantization = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                       bnb_4bit_compute_dtype=torch.float32)
    dtype = torch.bfloat16 if method == "bfloat16" else torch.float32
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, device_map="cpu",
                                                              quantization_config=quantization).eval()
    prompt = torch.arange(100, 116).unsqueeze(0)

    def run(n):
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False, use_cache=True,
                                 pad_token_id=0)
        assert out.shape[1] == 16 + n
        return time.perf_counter() - start

    run(2)  # warm-up
    first = min(run(1) for _ in range(3))
    full = run(tokens + 1)
    print(f"decode {tokens / (full - first):.2f}")
    print(f"first_token_ms {first * 1000:.1f}")


if __name__ == "__main__":
    main()
