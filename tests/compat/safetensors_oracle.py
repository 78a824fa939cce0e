#!/usr/bin/env python3
"""The real `safetensors` package as the oracle of Accel Studio's safetensors compat test.

Started by tests/compat/tst_safetensorscompat.cpp with the project's Python environment
(ACCEL_PYTHON). Every subcommand prints one JSON document on stdout.

  read FILE...     each file as `safetensors` reads it: the header's dtype code and shape of every
                   tensor (safe_open(...).get_slice), the sha256 of its raw bytes as
                   safetensors.torch loads it and as safetensors.numpy loads it (null when numpy
                   has no such dtype), the __metadata__ map (null when absent), the header length,
                   and whether safetensors.torch.save of the loaded tensors with the same metadata
                   gives the same file bytes. A tensor that cannot be loaded reports its error.
  index FILE       a sharded checkpoint loaded as transformers does: the index's weight_map and
                   metadata, every shard opened with safe_open, its tensors checked against the
                   weight_map (missing / unexpected), and each tensor reported as by `read`.
  write DIR        files written by `safetensors` itself into DIR (safetensors.torch.save_file and
                   safetensors.numpy.save_file with every dtype, metadata, scalars, empty tensors,
                   odd names and every header padding from 0 to 7 spaces) plus a sharded checkpoint
                   saved by huggingface_hub.save_torch_state_dict; reports what was written.
"""
import hashlib
import json
import os
import random
import struct
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import _TYPES, save, save_file

RNG = random.Random(6)


def raw_bytes(tensor):
    if tensor.numel() == 0:
        return b""
    return tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def sha(data):
    return hashlib.sha256(data).hexdigest()


def header_of(path):
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        text = f.read(length)
    return length, len(text) - len(text.rstrip(b" "))


def read_one(path):
    length, padding = header_of(path)
    out = {"path": path, "header_size": length, "padding": padding, "tensors": {}}
    loaded = {}
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata()
        for name in f.keys():
            piece = f.get_slice(name)
            entry = {"dtype": piece.get_dtype(), "shape": list(piece.get_shape())}
            try:
                tensor = f.get_tensor(name)
                loaded[name] = tensor
                entry["sha256"] = sha(raw_bytes(tensor))
                entry["torch_dtype"] = str(tensor.dtype).replace("torch.", "")
            except Exception as error:  # the test lists what safetensors cannot load
                entry["error"] = f"{type(error).__name__}: {error}"
            out["tensors"][name] = entry
    out["metadata"] = metadata
    with safe_open(path, framework="np") as f:
        for name in f.keys():
            try:
                array = f.get_tensor(name)
                out["tensors"][name]["numpy_sha256"] = sha(np.ascontiguousarray(array).tobytes())
            except Exception:  # numpy has no bfloat16 / float8 / float4: reported as null
                out["tensors"][name]["numpy_sha256"] = None
    if len(loaded) == len(out["tensors"]):
        with open(path, "rb") as f:
            given = f.read()
        out["resaved"] = compare_files(given, save(loaded, metadata=metadata))
    return out


def split_file(data):
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + length], object_pairs_hook=list)
    metadata = dict(next((value for key, value in header if key == "__metadata__"), []))
    tensors = [(key, value) for key, value in header if key != "__metadata__"]
    return length, metadata, tensors, data[8 + length:]


def compare_files(given, resaved):
    """"identical", "metadata order" when only the order of the __metadata__ keys differs (the
    reference writer keeps them in a hash map, so its order changes from run to run), else "differs"."""
    if given == resaved:
        return "identical"
    return "metadata order" if split_file(given) == split_file(resaved) else "differs"


def read(paths):
    return {"files": [read_one(path) for path in paths]}


def index(path):
    folder = os.path.dirname(path)
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    weight_map = document["weight_map"]
    out = {"metadata": document.get("metadata"), "weight_map": weight_map, "tensors": {}, "problems": []}
    for shard in sorted(set(weight_map.values())):
        expected = {name for name, file in weight_map.items() if file == shard}
        read_shard = read_one(os.path.join(folder, shard))
        found = set(read_shard["tensors"])
        for name in sorted(expected - found):
            out["problems"].append(f"{shard}: missing {name}")
        for name in sorted(found - expected):
            out["problems"].append(f"{shard}: unexpected {name}")
        for name, entry in read_shard["tensors"].items():
            entry["shard"] = shard
            out["tensors"][name] = entry
    return out


def random_tensor(dtype, shape):
    count = 1
    for d in shape:
        count *= d
    if dtype == torch.bool:
        return torch.tensor([RNG.random() < 0.5 for _ in range(count)], dtype=torch.bool).reshape(shape)
    size = torch.empty(0, dtype=dtype).element_size()
    data = bytes(RNG.getrandbits(8) for _ in range(count * size))
    if not data:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape)


def describe(path, tensors, metadata, codes):
    entries = {}
    for name, tensor in tensors.items():
        array = tensor if isinstance(tensor, np.ndarray) else None
        data = np.ascontiguousarray(array).tobytes() if array is not None else raw_bytes(tensor)
        shape = list(tensor.shape)
        if codes[name] == "F4":
            shape[-1] *= 2
        entries[name] = {"dtype": codes[name], "shape": shape, "sha256": sha(data)}
    length, padding = header_of(path)
    return {"path": path, "metadata": metadata, "header_size": length, "padding": padding, "tensors": entries}


def write(folder):
    by_torch = {dtype: code for code, dtype in _TYPES.items()}
    extra = {"F8_E8M0": getattr(torch, "float8_e8m0fnu", None), "F4": getattr(torch, "float4_e2m1fn_x2", None)}
    for code, dtype in extra.items():
        if dtype is not None:
            by_torch[dtype] = code
    files = []

    def torch_file(name, tensors, metadata):
        path = os.path.join(folder, name)
        save_file(tensors, path, metadata=metadata)
        files.append(describe(path, tensors, metadata, {k: by_torch[t.dtype] for k, t in tensors.items()}))

    dtypes = {}
    for dtype, code in sorted(by_torch.items(), key=lambda item: item[1]):
        dtypes["w." + code.lower()] = random_tensor(dtype, [3, 5])
    torch_file("dtypes.safetensors", dtypes,
               {"format": "pt", "note": "ünïcode ✓ \"quoted\"\nnew line", "empty": "", "z": "last"})
    scalars = {"scalar." + by_torch[d].lower(): random_tensor(d, []) for d in
               (torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.float8_e4m3fn)}
    empty = {"empty.f32": random_tensor(torch.float32, [0]), "empty.f16": random_tensor(torch.float16, [3, 0, 2]),
             "empty.bool": random_tensor(torch.bool, [0, 4]), "empty.i8": random_tensor(torch.int8, [0])}
    torch_file("scalars_empty.safetensors", {**scalars, **empty}, None)
    names = {}
    for i, name in enumerate(["model.layers.0.self_attn.q_proj.weight", "ünïcode.名字", "with space",
                              "quote\"and\\backslash", "x" * 300, "a"]):
        names[name] = random_tensor(torch.float16, [i + 1, 2])
    torch_file("names.safetensors", names, {"format": "pt"})
    # One tensor whose name grows by one character: the header length takes every residue mod 8,
    # so the writer pads with 0 to 7 spaces.
    for pad in range(8):
        torch_file(f"padding{pad}.safetensors", {"t" * (pad + 1): random_tensor(torch.float32, [2])},
                   {"format": "pt"})

    arrays = {}
    for kind in ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32",
                 "uint64", "bool", "complex64"):
        shape = [2, 3]
        if kind == "bool":
            arrays["np." + kind] = np.array([RNG.random() < 0.5 for _ in range(6)]).reshape(shape)
        else:
            size = np.dtype(kind).itemsize
            arrays["np." + kind] = np.frombuffer(bytes(RNG.getrandbits(8) for _ in range(6 * size)),
                                                 dtype=kind).reshape(shape)
    arrays["np.scalar"] = np.array(1.5, dtype=np.float32)
    arrays["np.empty"] = np.zeros([0, 3], dtype=np.int32)
    path = os.path.join(folder, "numpy.safetensors")
    save_numpy(arrays, path, metadata={"format": "np"})
    numpy_codes = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32",
                   "int16": "I16", "int8": "I8", "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
                   "bool": "BOOL", "complex64": "C64"}
    files.append(describe(path, arrays, {"format": "np"}, {k: numpy_codes[str(a.dtype)] for k, a in arrays.items()}))

    from huggingface_hub import save_torch_state_dict

    sharded = os.path.join(folder, "sharded")
    state = {f"layers.{i}.weight": random_tensor(torch.bfloat16 if i % 2 else torch.float32, [16, 8])
             for i in range(7)}
    state["embed.weight"] = random_tensor(torch.float16, [32, 8])
    os.makedirs(sharded, exist_ok=True)
    save_torch_state_dict(state, sharded, max_shard_size=1024)
    shard_entries = {}
    for name, tensor in state.items():
        shard_entries[name] = {"dtype": by_torch[tensor.dtype], "shape": list(tensor.shape),
                               "sha256": sha(raw_bytes(tensor))}
    return {"files": files, "sharded": {"folder": sharded, "tensors": shard_entries,
                                        "files": sorted(os.listdir(sharded))}}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("read", "index", "write"):
        sys.exit("usage: safetensors_oracle.py read FILE... | index FILE | write DIR")
    command, arguments = sys.argv[1], sys.argv[2:]
    result = {"read": lambda: read(arguments), "index": lambda: index(arguments[0]),
              "write": lambda: write(arguments[0])}[command]()
    json.dump(result, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
