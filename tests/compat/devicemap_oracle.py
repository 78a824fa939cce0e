#!/usr/bin/env python3
"""Real Accelerate and Transformers as the oracle of tst_devicemapcompat.

Started by the Qt test with the project's Python environment (ACCEL_PYTHON):

  devicemap_oracle.py CASES_JSON

CASES_JSON holds {"models": [{"name", "dir", "save"}...], "cases": [...]}. Each model dir holds a
config.json. A model with "save" is first made real: Transformers builds it from the config.json
(AutoModelForCausalLM.from_config, in the config's dtype, seeded weights) and writes it into the
folder with save_pretrained (safetensors; "save" is {"max_shard_size": null | size,
"original_format": bool, default true: save_original_format, the Hub's names}), which also
rewrites config.json as Transformers does. For every model, Transformers builds the meta model the way Accelerate's documentation
plans a big model: AutoConfig.from_pretrained(dir), AutoModelForCausalLM.from_config(config) under
init_empty_weights(), then model.tie_weights() (ties made inside the context are undone by it).

Each case is {"name", "model", "strategy", "max_memory": {"0": bytes, ..., "mps": bytes, "cpu": bytes}
(keys that are digits become integers, others are passed as given, "xpu:0" too),
"no_split": null (the model's _no_split_modules) | [class, ...], "dtype": null | name,
"clean": bool, "fallback": bool, "offload_buffers": bool}. The strategies run as Transformers and
Accelerate define them: "auto" and "balanced" take get_balanced_memory(low_zero=False),
"balanced_low_0" get_balanced_memory(low_zero=True), "sequential" the budgets as given; then
infer_auto_device_map. dtype "int4", "int2" and "fp8" are Accelerate's CustomDtype values (what
quantisers pass), any other name a torch dtype.

Per model it also runs `accelerate estimate-memory` itself (estimate_command with the default
dtypes float32 float16 int8 int4), with only the Hub look-up replaced by the local folder: the
printed table and gather_data's figures.

A case may hold "quantization": {"method": "int8" | "nf4" | "fp4", "skip_modules": null | [...],
"keep_in_fp32_modules": [...]}: the model is planned at the bytes it holds once bitsandbytes has
quantized it as Accelerate's load_and_quantize_model does (BnbQuantizationConfig, skip_modules
defaulting to get_keys_to_not_convert, replace_with_bnb_layers on a real copy of the model): each
converted Linear weight at the bytes of bitsandbytes' own quantized tensors (int8_vectorwise_quant's
CB and SCB, quantize_4bit's packed indices, absmax and code), parameters holding a
keep_in_fp32_modules entry in float32 (the special_dtypes of get_quantized_model_device_map), the rest
at the case's dtype. Accelerate's planner then runs unchanged over these sizes (compute_module_sizes
replaced). The oracle checks itself against Accelerate's own compute_module_sizes with the
quantized target_dtype: each converted weight's bitsandbytes bytes are that figure plus its scales.

Prints {"accelerate", "transformers", "torch", "models": {name: estimate}, "cases": [result...]}
where a result is {"name", "device_map": [[key, device]...], "budgets": [[device, bytes]...],
"total_bytes", "largest_layer": {"bytes", "names"}, "per_device": [[device, bytes]...],
"no_split": [...], "buffer_warning": bool, "tensorless_keys": [map keys naming modules that hold
no parameter or buffer]} or {"name", "error"}.
"""
import contextlib
import io
import json
import os
import sys
import types
import warnings


def quiet_imports():
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    warnings.simplefilter("ignore")


def build_model(directory):
    import transformers
    from accelerate import init_empty_weights

    config = transformers.AutoConfig.from_pretrained(directory)
    with init_empty_weights():
        model = transformers.AutoModelForCausalLM.from_config(config)
    model.tie_weights()
    return model


def save_checkpoint(directory, options):
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(directory)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    kwargs = {"save_original_format": options.get("original_format", True)}
    if options.get("max_shard_size"):
        kwargs["max_shard_size"] = options["max_shard_size"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        model.save_pretrained(directory, **kwargs)


def target_dtype(name):
    from accelerate.utils import CustomDtype

    if name is None:
        return None
    custom = {"int4": CustomDtype.INT4, "int2": CustomDtype.INT2, "fp8": CustomDtype.FP8}
    return custom.get(name, name)


def device_key(key):
    return int(key) if key.isdigit() else key


def number(value):
    return int(value) if float(value).is_integer() else value


def per_device(model, device_map, dtype, compute_module_sizes):
    """Bytes each device receives: every parameter and buffer (each tensor once) at its size under
    the dtype, looked up by the longest device-map key that covers it."""
    sizes = compute_module_sizes(model, dtype=dtype)
    totals = {}
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    for name in names:
        best = None
        for key in device_map:
            if key == "" or name == key or name.startswith(key + "."):
                if best is None or len(key) > len(best):
                    best = key
        device = device_map[best]
        totals[device] = totals.get(device, 0) + sizes[name]
    return totals


def quantized_sizes(case, model, dtype):
    """compute_module_sizes for the model as bitsandbytes holds it quantized (see the docstring)."""
    import copy

    import bitsandbytes as bnb
    import bitsandbytes.functional as bnb_functional
    import torch
    import transformers
    from accelerate.utils import BnbQuantizationConfig, modeling
    from accelerate.utils.bnb import get_keys_to_not_convert, replace_with_bnb_layers

    quantization = case["quantization"]
    method = quantization["method"]
    config = BnbQuantizationConfig(load_in_8bit=method == "int8", load_in_4bit=method != "int8",
                                   bnb_4bit_quant_type=method if method != "int8" else "fp4",
                                   skip_modules=quantization.get("skip_modules"),
                                   keep_in_fp32_modules=list(quantization.get("keep_in_fp32_modules") or []))
    torch.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        real = transformers.AutoModelForCausalLM.from_config(model.config)
    real.tie_weights()
    skip = config.skip_modules if config.skip_modules is not None else get_keys_to_not_convert(real)
    converted = replace_with_bnb_layers(copy.deepcopy(real), config,
                                        modules_to_not_convert=list(skip) + config.keep_in_fp32_modules)
    names = [n for n, m in converted.named_modules() if isinstance(m, (bnb.nn.Linear8bitLt, bnb.nn.Linear4bit))]
    special = {n: torch.float32 for n, _ in model.named_parameters()
               if any(k in n for k in config.keep_in_fp32_modules)}
    original = ORIGINAL_COMPUTE_MODULE_SIZES
    sizes = original(model, dtype=dtype, special_dtypes=special or None)
    accelerate_target = original(model, dtype=config.target_dtype)
    for name in names:
        weight = real.get_submodule(name).weight.detach().float()
        if method == "int8":
            cb, scb, _ = bnb_functional.int8_vectorwise_quant(weight.half())
            held, scales = cb.nbytes + scb.nbytes, scb.nbytes
        else:
            packed, state = bnb_functional.quantize_4bit(weight, blocksize=64, quant_type=method)
            held = packed.nbytes + state.absmax.nbytes + state.code.nbytes
            scales = state.absmax.nbytes + state.code.nbytes
        key = name + ".weight"
        if accelerate_target[key] + scales != held:
            raise AssertionError(f"{key}: bitsandbytes holds {held} bytes, Accelerate's target_dtype size "
                                 f"{accelerate_target[key]} + scales {scales}")
        delta = held - sizes[key]
        parts = key.split(".")
        for i in range(len(parts) + 1):
            sizes[".".join(parts[:i])] += delta
    return sizes


def run_case(case, model):
    from accelerate.utils import modeling

    dtype = target_dtype(case["dtype"])
    compute_module_sizes = ORIGINAL_COMPUTE_MODULE_SIZES
    if case.get("quantization"):
        held = quantized_sizes(case, model, dtype)

        def compute_module_sizes(model, dtype=None, special_dtypes=None, buffers_only=False):
            if buffers_only:
                return ORIGINAL_COMPUTE_MODULE_SIZES(model, dtype=dtype, special_dtypes=special_dtypes,
                                                     buffers_only=True)
            return held.copy()
    modeling.compute_module_sizes = compute_module_sizes
    try:
        return plan_case(case, model, dtype, compute_module_sizes)
    finally:
        modeling.compute_module_sizes = ORIGINAL_COMPUTE_MODULE_SIZES


def plan_case(case, model, dtype, compute_module_sizes):
    from accelerate.utils import get_balanced_memory, infer_auto_device_map
    from accelerate.utils.modeling import get_max_layer_size, get_max_memory

    no_split = case["no_split"]
    if no_split is None:
        no_split = sorted(model._no_split_modules or [])
    max_memory = {device_key(k): v for k, v in case["max_memory"].items()}
    strategy = case["strategy"]
    if strategy in ("auto", "balanced", "balanced_low_0"):
        budgets = get_balanced_memory(model, max_memory=dict(max_memory), no_split_module_classes=no_split,
                                      dtype=dtype, low_zero=strategy == "balanced_low_0")
    elif strategy == "sequential":
        budgets = get_max_memory(dict(max_memory))
    else:
        raise ValueError(f"unknown strategy {strategy}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        device_map = infer_auto_device_map(model, max_memory=dict(budgets), no_split_module_classes=no_split,
                                           dtype=dtype, clean_result=case["clean"],
                                           offload_buffers=case["offload_buffers"],
                                           fallback_allocation=case["fallback"])
    sizes = compute_module_sizes(model, dtype=dtype)
    roots = (list(model.named_parameters(recurse=False)) + list(model.named_children())
             + list(model.named_buffers(recurse=False)))
    largest, largest_names = get_max_layer_size(roots, sizes, no_split)
    order = [d for d in list(budgets) + ["disk"]]
    placed = per_device(model, device_map, dtype, compute_module_sizes)
    holding = {n.rsplit(".", 1)[0] for n, _ in model.named_parameters(remove_duplicate=False)}
    holding |= {n.rsplit(".", 1)[0] for n, _ in model.named_buffers()}
    tensorless = [k for k in device_map if k and not any(h == k or h.startswith(k + ".") for h in holding)]
    return {
        "name": case["name"],
        "device_map": [[k, v] for k, v in device_map.items()],
        "budgets": [[str(k), number(v)] for k, v in budgets.items()],
        "total_bytes": number(sizes[""]),
        "largest_layer": {"bytes": number(largest), "names": largest_names},
        "per_device": [[str(d), number(placed[d])] for d in order if d in placed],
        "no_split": list(no_split),
        "buffer_warning": any("buffer" in str(w.message) for w in caught),
        "tensorless_keys": tensorless,
    }


def estimate(directory):
    """`accelerate estimate-memory` on the local folder: its own estimate_command and gather_data,
    with only the Hub look-up (verify_on_hub) answered locally. Run from the folder's parent so
    the model name in the table's title is the folder name."""
    from accelerate.commands import estimate as command

    command.verify_on_hub = lambda repo, token=None: types.SimpleNamespace(config={}, library_name="transformers")
    parent, name = os.path.split(os.path.abspath(directory))
    previous = os.getcwd()
    os.chdir(parent)
    try:
        args = types.SimpleNamespace(model_name=name, library_name="transformers",
                                     dtypes=["float32", "float16", "int8", "int4"], trust_remote_code=False)
        with contextlib.redirect_stdout(io.StringIO()):
            data = command.gather_data(args)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            command.estimate_command(args)
    finally:
        os.chdir(previous)
    rows = []
    for dtype, largest, total, training in data:
        most = max(training.values())
        rows.append({"dtype": dtype, "largest_layer_bytes": number(largest), "total_bytes": number(total),
                     "training_adam_bytes": None if most == -1 else number(most)})
    # The table is what follows the "Loading pretrained config" line.
    table = printed.getvalue()
    table = table[table.index("┌"):]
    return {"rows": rows, "table": table}


ORIGINAL_COMPUTE_MODULE_SIZES = None


def main():
    global ORIGINAL_COMPUTE_MODULE_SIZES
    quiet_imports()
    from accelerate.utils import modeling

    ORIGINAL_COMPUTE_MODULE_SIZES = modeling.compute_module_sizes
    import accelerate
    import torch
    import transformers

    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    models, estimates = {}, {}
    for entry in spec["models"]:
        if entry.get("save"):
            save_checkpoint(entry["dir"], entry["save"])
        models[entry["name"]] = build_model(entry["dir"])
        try:
            estimates[entry["name"]] = estimate(entry["dir"])
        except Exception as error:  # the test reports what Accelerate said
            estimates[entry["name"]] = {"error": f"{type(error).__name__}: {error}"}
    results = []
    for case in spec["cases"]:
        try:
            results.append(run_case(case, models[case["model"]]))
        except Exception as error:
            results.append({"name": case["name"], "error": f"{type(error).__name__}: {error}"})
    json.dump({"accelerate": accelerate.__version__, "transformers": transformers.__version__,
               "torch": torch.__version__, "models": estimates, "cases": results}, sys.stdout)


if __name__ == "__main__":
    main()
