#!/usr/bin/env python3
"""Real Accelerate as the oracle of Accel Studio's compat tests.

Started by the Qt tests in tests/compat with the project's Python environment (ACCEL_PYTHON).
Every subcommand prints one JSON document on stdout.

  load FILE...     each file through accelerate's load_config_from_file: the text its own
                   to_json_file / to_yaml_file would write for the loaded config, or the error.
  write DIR        configs written by Accelerate itself into DIR: write_basic_config for each
                   precision, and ClusterConfig objects with varied values saved with to_yaml_file
                   and to_json_file. Prints the paths.
  launch CASES     CASES is a JSON file: [{"argv": [...], "env": {...}}, ...]. For each case the
                   environment Accelerate's launch code computes: launch_command_parser() parses
                   argv, _validate_launch_command() merges the config, then
                   prepare_simple_launcher_cmd_env / prepare_multi_gpu_env /
                   prepare_deepspeed_cmd_env build the environment, exactly as launch_command()
                   picks them. Prints, per case, the variables added or changed, or the error.
  fields           every field of Accelerate's config dataclasses ("ClusterConfig.num_processes",
                   "FullyShardedDataParallelPlugin.sharding_strategy", ...): the config file's
                   classes, the FSDP, DeepSpeed, Megatron-LM and TorchDynamo plugins,
                   ParallelismConfig and its handlers, the FP8 recipe kwargs.
"""
import contextlib
import io
import json
import os
import random
import sys


def load(paths):
    from accelerate.commands.config.config_args import load_config_from_file
    import yaml

    out = []
    for path in paths:
        try:
            config = load_config_from_file(path)
            as_dict = config.to_dict()
            out.append({"path": path,
                        "json": json.dumps(as_dict, indent=2, sort_keys=True) + "\n",
                        "yaml": yaml.safe_dump(as_dict)})
        except Exception as error:  # the test reports what Accelerate said
            out.append({"path": path, "error": f"{type(error).__name__}: {error}"})
    return out


# Values that stress the YAML/JSON emitters: YAML 1.1 look-alikes, quotes, colons, unicode.
TRICKY_TEXT = ["no", "yes", "on", "1.0", "010", "0x1f", "1e5", "null", "~", "a: b", "#hash", "it's",
               "say \"hi\"", "caf\u00e9", "\u65e5\u672c", "  padded ", "", "-", "[x]", "{y}", "*star", "&amp",
               "!bang", "%percent", "@at", "`tick", "line\nbreak", "tab\there", "x" * 100,
               "/home/user/ds config.json", "0,1,3", "all"]


def varied_configs(count):
    from accelerate.commands.config.config_args import ClusterConfig

    rng = random.Random(20261123)
    types = ["NO", "MULTI_CPU", "MULTI_GPU", "MULTI_XPU", "MULTI_NPU", "MULTI_HPU", "FSDP", "DEEPSPEED",
             "MEGATRON_LM"]
    configs = []
    for index in range(count):
        distributed = types[index % len(types)]
        text = lambda: rng.choice(TRICKY_TEXT)  # noqa: E731
        kwargs = dict(
            compute_environment="LOCAL_MACHINE",
            distributed_type=distributed,
            mixed_precision=rng.choice(["no", "fp16", "bf16", "fp8", None]),
            use_cpu=distributed in ("NO", "MULTI_CPU") and rng.random() < 0.5,
            debug=rng.random() < 0.3,
            num_processes=rng.choice([1, 2, 8, 16, -1]),
            machine_rank=0,
            num_machines=rng.choice([1, 1, 2, 4]),
            gpu_ids=rng.choice([None, "all", "0,1", "0,1,3"]),
            main_process_ip=rng.choice([None, "10.0.0.1", "node-0.cluster", text()]),
            main_process_port=rng.choice([None, 0, 29500, 65535]),
            rdzv_backend=rng.choice(["static", "c10d", "etcd", "etcd-v2"]),
            same_network=rng.random() < 0.5,
            main_training_function=rng.choice(["main", "train", text()]),
            enable_cpu_affinity=rng.random() < 0.3,
            downcast_bf16=rng.choice([False, True, "no", "yes"]),
            tpu_env=rng.choice([None, [], ["A=1", text()]]),
            tpu_use_cluster=rng.random() < 0.2,
            tpu_use_sudo=rng.random() < 0.2,
        )
        if rng.random() < 0.4:
            kwargs["dynamo_config"] = {"dynamo_backend": rng.choice(["INDUCTOR", "EAGER", "AOT_EAGER"]),
                                       "dynamo_mode": rng.choice(["default", "reduce-overhead", "max-autotune"]),
                                       "dynamo_use_fullgraph": rng.random() < 0.5,
                                       "dynamo_use_dynamic": rng.random() < 0.5,
                                       "dynamo_use_regional_compilation": rng.random() < 0.5}
        if distributed == "FSDP":
            version = rng.choice([1, 2])
            kwargs["fsdp_config"] = {
                "fsdp_version": version,
                "fsdp_reshard_after_forward": rng.choice([True, False]) if version == 2
                else rng.choice(["FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD"]),
                "fsdp_offload_params": rng.random() < 0.5,
                "fsdp_auto_wrap_policy": rng.choice(["TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"]),
                "fsdp_transformer_layer_cls_to_wrap": rng.choice(["LlamaDecoderLayer", "Block, Layer", text()]),
                "fsdp_min_num_params": rng.choice([0, 100000000, 2 ** 40]),
                "fsdp_state_dict_type": rng.choice(["FULL_STATE_DICT", "SHARDED_STATE_DICT"]),
                "fsdp_cpu_ram_efficient_loading": rng.random() < 0.5,
                "fsdp_activation_checkpointing": rng.random() < 0.5,
                "fsdp_ignored_modules": rng.choice([None, "lm_head", ".*norm.*"]),
            }
            if version == 2 and rng.random() < 0.5:
                kwargs["parallelism_config"] = {"parallelism_config_dp_replicate_size": rng.choice([1, 2]),
                                                "parallelism_config_dp_shard_size": rng.choice([1, 2, -1]),
                                                "parallelism_config_tp_size": rng.choice([1, 2]),
                                                "parallelism_config_cp_size": rng.choice([1, 2]),
                                                "parallelism_config_cp_comm_strategy": "alltoall"}
        if distributed == "DEEPSPEED":
            kwargs["deepspeed_config"] = {
                "zero_stage": rng.choice([0, 1, 2, 3]),
                "offload_optimizer_device": rng.choice(["none", "cpu", "nvme"]),
                "offload_param_device": rng.choice(["none", "cpu"]),
                "offload_optimizer_nvme_path": rng.choice(["/nvme", text()]),
                "gradient_accumulation_steps": rng.choice([1, 4, 64]),
                "gradient_clipping": rng.choice([1.0, 0.5, 1e-5, 3.0, 0.1, 2.5e10]),
                "zero3_init_flag": rng.random() < 0.5,
                "zero3_save_16bit_model": rng.random() < 0.5,
                "deepspeed_multinode_launcher": rng.choice(["pdsh", "standard", "slurm"]),
            }
        if distributed == "MEGATRON_LM":
            kwargs["megatron_lm_config"] = {"megatron_lm_tp_degree": rng.choice([1, 2, 4]),
                                            "megatron_lm_pp_degree": rng.choice([1, 2]),
                                            "megatron_lm_sequence_parallelism": rng.random() < 0.5,
                                            "megatron_lm_num_micro_batches": rng.choice([1, 8]),
                                            "megatron_lm_recompute_activations": True,
                                            "megatron_lm_use_distributed_optimizer": True,
                                            "megatron_lm_gradient_clipping": rng.choice([1.0, 0.3])}
        if kwargs["mixed_precision"] == "fp8":
            backend = rng.choice(["TE", "AO", "MSAMP"])
            block = {"backend": backend}
            if backend == "TE":
                block.update(fp8_format=rng.choice(["HYBRID", "E4M3"]), margin=rng.choice([0, 2]),
                             interval=1, amax_history_len=rng.choice([16, 1024]),
                             amax_compute_algo=rng.choice(["max", "most_recent"]),
                             override_linear_precision=rng.choice([[False, False, True], [False, False, False]]),
                             use_autocast_during_eval=rng.random() < 0.5)
            elif backend == "MSAMP":
                block.update(opt_level=rng.choice(["O1", "O2"]))
            else:
                block.update(enable_fsdp_float8_all_gather=rng.random() < 0.5, pad_inner_dim=rng.random() < 0.5)
            kwargs["fp8_config"] = block
        if distributed == "MULTI_CPU" and rng.random() < 0.5:
            kwargs["mpirun_config"] = {"mpirun_hostfile": rng.choice(["/home/user/hostfile", text()])}
        configs.append(ClusterConfig(**kwargs))
    return configs


def write(folder):
    from accelerate.commands.config.default import write_basic_config

    os.makedirs(folder, exist_ok=True)
    paths = []
    for precision in ["no", "fp16", "bf16", "fp8"]:
        for suffix in ["yaml", "json"]:
            path = os.path.join(folder, f"basic_{precision}.{suffix}")
            with contextlib.redirect_stdout(io.StringIO()):
                write_basic_config(mixed_precision=precision, save_location=path)
            paths.append(path)
    for index, config in enumerate(varied_configs(36)):
        for suffix in ["yaml", "json"]:
            path = os.path.join(folder, f"varied_{index:02d}.{suffix}")
            if suffix == "yaml":
                config.to_yaml_file(path)
            else:
                config.to_json_file(path)
            paths.append(path)
    return paths


def launch(cases_file):
    import accelerate.commands.launch as launch_module
    import accelerate.utils.launch as launch_utils

    # FP8 needs TransformerEngine, MS-AMP or torchao installed only to run; the environment the
    # launcher builds does not depend on it.
    launch_utils.is_fp8_available = lambda: True
    with open(cases_file, encoding="utf-8") as f:
        cases = json.load(f)
    parser = launch_module.launch_command_parser()
    results = []
    base = dict(os.environ)
    for case in cases:
        os.environ.clear()
        os.environ.update(base)
        for key, value in case.get("env", {}).items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        before = dict(os.environ)
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr):
                args = parser.parse_args(case["argv"])
                args, defaults, mp_from_config = launch_module._validate_launch_command(args)
                if args.use_deepspeed and not args.cpu:
                    fields = list(defaults.deepspeed_config.keys()) if defaults else []
                    if mp_from_config:
                        fields.append("mixed_precision")
                    args.deepspeed_fields_from_accelerate_config = ",".join(fields)
                    _, env = launch_utils.prepare_deepspeed_cmd_env(args)
                    launcher = "deepspeed"
                elif (args.use_fsdp or args.use_megatron_lm or args.multi_gpu) and not args.cpu:
                    env = launch_utils.prepare_multi_gpu_env(args)
                    launcher = "torchrun"
                else:
                    _, env = launch_utils.prepare_simple_launcher_cmd_env(args)
                    launcher = "simple"
            changed = {k: v for k, v in env.items() if before.get(k) != v}
            results.append({"launcher": launcher, "env": changed})
        except SystemExit as error:
            results.append({"error": f"argument error ({error.code}): {stderr.getvalue().strip()}"})
        except Exception as error:
            results.append({"error": f"{type(error).__name__}: {error}"})
    os.environ.clear()
    os.environ.update(base)
    return results


def fields():
    import dataclasses
    from accelerate.commands.config.config_args import ClusterConfig, SageMakerConfig
    from accelerate.parallelism_config import ParallelismConfig
    from accelerate.utils import dataclasses as plugins

    classes = [ClusterConfig, SageMakerConfig, ParallelismConfig] + [
        getattr(plugins, name)
        for name in (
            "FullyShardedDataParallelPlugin", "DeepSpeedPlugin", "MegatronLMPlugin", "TorchDynamoPlugin",
            "TorchContextParallelConfig", "TorchTensorParallelConfig", "DeepSpeedSequenceParallelConfig",
            "TERecipeKwargs", "MSAMPRecipeKwargs", "AORecipeKwargs", "FP8RecipeKwargs",
        )
    ]
    return sorted(f"{cls.__name__}.{field.name}" for cls in classes for field in dataclasses.fields(cls))


def main():
    command, rest = sys.argv[1], sys.argv[2:]
    if command == "load":
        result = load(rest)
    elif command == "write":
        result = write(rest[0])
    elif command == "launch":
        result = launch(rest[0])
    elif command == "fields":
        result = fields()
    else:
        raise SystemExit(f"unknown command {command}")
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
