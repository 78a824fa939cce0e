#!/usr/bin/env python3
"""Writes the config corpus of Accel Studio's config tests.

Each file holds the dict Accelerate's questionnaire (or `accelerate config default`) produces for
one setup, as Accelerate's own code builds it, serialised the way Accelerate
serialises it: yaml.safe_dump() for .yaml files, json.dumps(indent=2, sort_keys=True) + newline for
.json files (and for the JSON-in-.yaml file `accelerate config default` writes). The files are
committed; this script documents how they were made and re-creates them:

    python3 tests/data/configs/make_corpus.py
"""
import json
import os

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def base(**overrides):
    """Top-level keys every questionnaire answer writes (single process, this machine)."""
    config = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": "NO",
        "downcast_bf16": "no",
        "enable_cpu_affinity": False,
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": "no",
        "num_machines": 1,
        "num_processes": 1,
        "rdzv_backend": "static",
        "same_network": True,
        "tpu_env": [],
        "tpu_use_cluster": False,
        "tpu_use_sudo": False,
        "use_cpu": False,
    }
    config.update(overrides)
    return {k: v for k, v in config.items() if v is not None}


def multinode(**overrides):
    settings = dict(num_machines=2, machine_rank=0, main_process_ip="10.0.0.1", main_process_port=29500)
    settings.update(overrides)
    return base(**settings)


CORPUS = {
    "single_cpu.yaml": base(use_cpu=True),
    "single_gpu.yaml": base(gpu_ids="all", mixed_precision="fp16"),
    "single_gpu_affinity.yaml": base(gpu_ids="0", mixed_precision="bf16", enable_cpu_affinity=True),
    "multi_cpu.yaml": base(distributed_type="MULTI_CPU", num_processes=4, use_cpu=True),
    "multi_cpu_mpirun.yaml": base(distributed_type="MULTI_CPU", num_processes=8, use_cpu=True,
                                  mpirun_config={"mpirun_hostfile": "/home/user/hostfile"}),
    "multi_cpu_ipex_legacy.yaml": base(distributed_type="MULTI_CPU", num_processes=4, use_cpu=True,
                                       ipex_config={"ipex": True},
                                       mpirun_config={"mpirun_ccl": 1, "mpirun_hostfile": "/home/user/hostfile"}),
    "multi_gpu.yaml": base(distributed_type="MULTI_GPU", num_processes=2, gpu_ids="all", mixed_precision="bf16"),
    "multi_gpu_ids.yaml": base(distributed_type="MULTI_GPU", num_processes=3, gpu_ids="0,1,3", mixed_precision="fp16"),
    "multi_gpu_multinode.yaml": multinode(distributed_type="MULTI_GPU", num_processes=16, gpu_ids="all",
                                          mixed_precision="bf16"),
    "multi_gpu_multinode_c10d.yaml": multinode(distributed_type="MULTI_GPU", num_processes=8, gpu_ids="all",
                                               same_network=False, rdzv_backend="c10d", machine_rank=1),
    "multi_gpu_dynamo.yaml": base(distributed_type="MULTI_GPU", num_processes=2, gpu_ids="all",
                                  dynamo_config={"dynamo_backend": "INDUCTOR", "dynamo_mode": "max-autotune",
                                                 "dynamo_use_dynamic": True, "dynamo_use_fullgraph": False,
                                                 "dynamo_use_regional_compilation": True}),
    "multi_gpu_dynamo_default.yaml": base(distributed_type="MULTI_GPU", num_processes=2, gpu_ids="all",
                                          dynamo_config={"dynamo_backend": "EAGER"}),
    "multi_npu.yaml": base(distributed_type="MULTI_NPU", num_processes=8, gpu_ids="all", mixed_precision="bf16"),
    "multi_xpu.yaml": base(distributed_type="MULTI_XPU", num_processes=2, gpu_ids="all"),
    "multi_hpu.yaml": base(distributed_type="MULTI_HPU", num_processes=8, gpu_ids="all", mixed_precision="bf16"),
    "multi_mlu.yaml": base(distributed_type="MULTI_MLU", num_processes=4, gpu_ids="all"),
    "multi_musa.yaml": base(distributed_type="MULTI_MUSA", num_processes=4, gpu_ids="all"),
    "multi_sdaa.yaml": base(distributed_type="MULTI_SDAA", num_processes=4, gpu_ids="all"),
    "multi_neuron.yaml": base(distributed_type="MULTI_NEURON", num_processes=2, gpu_ids="all"),
    "fsdp1.yaml": base(distributed_type="FSDP", num_processes=4, mixed_precision="bf16", fsdp_config={
        "fsdp_activation_checkpointing": False,
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_backward_prefetch": "BACKWARD_PRE",
        "fsdp_cpu_ram_efficient_loading": True,
        "fsdp_forward_prefetch": False,
        "fsdp_offload_params": False,
        "fsdp_reshard_after_forward": "SHARD_GRAD_OP",
        "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        "fsdp_sync_module_states": True,
        "fsdp_transformer_layer_cls_to_wrap": "LlamaDecoderLayer",
        "fsdp_use_orig_params": True,
        "fsdp_version": 1,
    }),
    "fsdp1_legacy_strategy.yaml": base(distributed_type="FSDP", num_processes=2, mixed_precision="fp16", fsdp_config={
        "fsdp_auto_wrap_policy": "SIZE_BASED_WRAP",
        "fsdp_backward_prefetch": "BACKWARD_POST",
        "fsdp_min_num_params": 100000000,
        "fsdp_offload_params": True,
        "fsdp_sharding_strategy": "FULL_SHARD",
        "fsdp_state_dict_type": "FULL_STATE_DICT",
        "fsdp_sync_module_states": True,
        "fsdp_use_orig_params": False,
    }),
    "fsdp2.yaml": base(distributed_type="FSDP", num_processes=8, mixed_precision="bf16", fsdp_config={
        "fsdp_activation_checkpointing": True,
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_cpu_ram_efficient_loading": True,
        "fsdp_offload_params": False,
        "fsdp_reshard_after_forward": True,
        "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        "fsdp_version": 2,
    }),
    "fsdp2_parallelism.yaml": multinode(distributed_type="FSDP", num_processes=16, mixed_precision="bf16", fsdp_config={
        "fsdp_activation_checkpointing": False,
        "fsdp_auto_wrap_policy": "SIZE_BASED_WRAP",
        "fsdp_cpu_ram_efficient_loading": False,
        "fsdp_min_num_params": 1000000,
        "fsdp_offload_params": True,
        "fsdp_reshard_after_forward": False,
        "fsdp_state_dict_type": "FULL_STATE_DICT",
        "fsdp_version": 2,
    }, parallelism_config={
        "parallelism_config_cp_comm_strategy": "alltoall",
        "parallelism_config_cp_size": 2,
        "parallelism_config_dp_replicate_size": 2,
        "parallelism_config_dp_shard_size": 2,
        "parallelism_config_tp_size": 2,
    }),
    "deepspeed_zero2.yaml": base(distributed_type="DEEPSPEED", num_processes=2, mixed_precision="fp16", deepspeed_config={
        "gradient_accumulation_steps": 4,
        "gradient_clipping": 1.0,
        "offload_optimizer_device": "cpu",
        "offload_param_device": "none",
        "zero3_init_flag": False,
        "zero_stage": 2,
    }),
    "deepspeed_zero3_nvme.yaml": base(distributed_type="DEEPSPEED", num_processes=4, mixed_precision="bf16", deepspeed_config={
        "deepspeed_moe_layer_cls_names": "MixtralSparseMoeBlock",
        "gradient_accumulation_steps": 1,
        "offload_optimizer_device": "nvme",
        "offload_optimizer_nvme_path": "/nvme",
        "offload_param_device": "nvme",
        "offload_param_nvme_path": "/local_nvme",
        "zero3_init_flag": True,
        "zero3_save_16bit_model": True,
        "zero_stage": 3,
    }),
    "deepspeed_json_file.yaml": {k: v for k, v in base(distributed_type="DEEPSPEED", num_processes=2,
                                                        deepspeed_config={
        "deepspeed_config_file": "/home/user/ds_config.json",
        "zero3_init_flag": True,
    }).items() if k != "mixed_precision"},
    "deepspeed_multinode.yaml": multinode(distributed_type="DEEPSPEED", num_processes=16, mixed_precision="bf16", deepspeed_config={
        "deepspeed_exclusion_filter": "worker-1:0",
        "deepspeed_hostfile": "/home/user/hostfile",
        "deepspeed_inclusion_filter": "worker-0",
        "deepspeed_multinode_launcher": "pdsh",
        "gradient_accumulation_steps": 1,
        "offload_optimizer_device": "none",
        "offload_param_device": "none",
        "zero3_init_flag": False,
        "zero_stage": 1,
    }),
    "megatron_lm.yaml": base(distributed_type="MEGATRON_LM", num_processes=8, mixed_precision="bf16", megatron_lm_config={
        "megatron_lm_gradient_clipping": 1.0,
        "megatron_lm_num_micro_batches": 2,
        "megatron_lm_pp_degree": 2,
        "megatron_lm_recompute_activations": True,
        "megatron_lm_sequence_parallelism": True,
        "megatron_lm_tp_degree": 2,
        "megatron_lm_use_distributed_optimizer": True,
    }),
    "fp8_te.yaml": base(distributed_type="MULTI_GPU", num_processes=2, gpu_ids="all", mixed_precision="fp8", fp8_config={
        "amax_compute_algorithm": "max",
        "amax_history_length": 1024,
        "backend": "TE",
        "fp8_format": "HYBRID",
        "interval": 1,
        "margin": 0,
        "override_linear_precision": [False, False, False],
        "use_autocast_during_eval": False,
    }),
    "fp8_msamp.yaml": base(gpu_ids="all", mixed_precision="fp8", fp8_config={"backend": "MSAMP", "optimization_level": "O2"}),
    "fp8_ao.yaml": base(distributed_type="FSDP", num_processes=2, mixed_precision="fp8", fp8_config={
        "backend": "AO", "enable_fsdp_float8_all_gather": True, "pad_inner_dim": True,
    }, fsdp_config={
        "fsdp_activation_checkpointing": False,
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_cpu_ram_efficient_loading": False,
        "fsdp_offload_params": False,
        "fsdp_reshard_after_forward": True,
        "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        "fsdp_transformer_layer_cls_to_wrap": "GPT2Block,GPT2MLP",
        "fsdp_version": 2,
    }),
    "tpu_pod.yaml": base(distributed_type="XLA", num_processes=8, mixed_precision="bf16", downcast_bf16="yes",
                         main_training_function="train_loop", tpu_name="my-tpu", tpu_zone="us-central1-a",
                         tpu_use_cluster=True, tpu_use_sudo=True,
                         commands=["pip install accelerate", "echo 'ready: yes'", "cd /data && ls"],
                         tpu_vm=["tpu-vm-0", "tpu-vm-1"], tpu_env=["WANDB_MODE=offline", "XLA_USE_BF16=1"]),
    "tpu_command_file.yaml": base(distributed_type="XLA", num_processes=8, tpu_name="pod", tpu_zone="europe-west4-a",
                                  tpu_use_cluster=True, command_file="/home/user/startup.sh"),
    "sagemaker.yaml": {
        "base_job_name": "accelerate-sagemaker-1",
        "compute_environment": "AMAZON_SAGEMAKER",
        "debug": False,
        "distributed_type": "DATA_PARALLEL",
        "ec2_instance_type": "ml.p3.16xlarge",
        "enable_cpu_affinity": False,
        "gpu_ids": "all",
        "iam_role_name": "accelerate_sagemaker_execution_role",
        "mixed_precision": "fp16",
        "num_machines": 2,
        "profile": "default",
        "py_version": "py38",
        "pytorch_version": "1.10.2",
        "region": "us-east-1",
        "transformers_version": "4.17.0",
        "use_cpu": False,
    },
    "sagemaker_custom.yaml": {
        "additional_args": {"max_run": 3600, "use_spot_instances": True, "volume_size": 30.5},
        "base_job_name": "accelerate-sagemaker-1",
        "compute_environment": "AMAZON_SAGEMAKER",
        "debug": False,
        "distributed_type": "NO",
        "dynamo_config": {"dynamo_backend": "INDUCTOR"},
        "ec2_instance_type": "ml.p3.2xlarge",
        "enable_cpu_affinity": False,
        "gpu_ids": "all",
        "iam_role_name": "my-role",
        "image_uri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/train:latest",
        "mixed_precision": "no",
        "num_machines": 1,
        "py_version": "py38",
        "pytorch_version": "1.10.2",
        "region": "eu-west-1",
        "sagemaker_inputs_file": "/home/user/inputs.tsv",
        "sagemaker_metrics_file": "/home/user/metrics.tsv",
        "transformers_version": "4.17.0",
        "use_cpu": False,
    },
}

# What `accelerate config default` writes: ClusterConfig dataclass defaults, to_dict() drops None.
DEFAULT_CPU = {
    "compute_environment": "LOCAL_MACHINE",
    "debug": False,
    "distributed_type": "NO",
    "downcast_bf16": False,
    "enable_cpu_affinity": False,
    "machine_rank": 0,
    "main_training_function": "main",
    "mixed_precision": "no",
    "num_machines": 1,
    "num_processes": 1,
    "rdzv_backend": "static",
    "same_network": False,
    "tpu_use_cluster": False,
    "tpu_use_sudo": False,
    "use_cpu": True,
}
JSON_CORPUS = {
    "default_config_json.yaml": DEFAULT_CPU,  # JSON text in a .yaml file
    "default_config_bf16.json": dict(DEFAULT_CPU, mixed_precision="bf16"),
    "fsdp2.json": CORPUS["fsdp2.yaml"],
    "deepspeed_zero2.json": CORPUS["deepspeed_zero2.yaml"],
}


def main():
    for name, config in CORPUS.items():
        with open(os.path.join(HERE, name), "w") as f:
            yaml.safe_dump(config, f)
    for name, config in JSON_CORPUS.items():
        with open(os.path.join(HERE, name), "w") as f:
            f.write(json.dumps(config, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
