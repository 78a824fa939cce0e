#!/usr/bin/env bash
# Renders every page of accel-studio to docs/screenshots/<page>.png. Uses a virtual X server
# (xvfb-run) when there is one, else Qt's offscreen platform. The Configure page is shown with a
# sample FSDP config that has one mistake, so the picture includes a validation message.
# Usage: packaging/screenshots.sh [build dir]   (default: $ACCEL_BUILD_DIR or build/)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${ACCEL_BUILD_DIR:-$here/build}}"
studio="$build/bin/accel-studio"
out="$here/docs/screenshots"
if [[ ! -x "$studio" ]]; then
  echo "screenshots.sh: $studio not found; build first (packaging/build.sh)" >&2
  exit 1
fi
mkdir -p "$out"

# A private HOME so that the pictures never show the user's recent files or window layout.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home/.config" XDG_CACHE_HOME="$scratch/home/.cache"
mkdir -p "$HOME" "$scratch/runtime"
chmod 700 "$scratch/runtime"
export XDG_RUNTIME_DIR="$scratch/runtime"
mkdir -p "$HOME/llama-finetune"
sample="$HOME/llama-finetune/fsdp_config.yaml"
cat > "$sample" <<'YAML'
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: FSDP
downcast_bf16: 'no'
enable_cpu_affinity: false
fsdp_config:
  fsdp_activation_checkpointing: false
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_cpu_ram_efficient_loading: true
  fsdp_offload_params: false
  fsdp_reshard_after_forward: true
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
  fsdp_version: 2
machine_rank: 2
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 8
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
YAML

run() {
  if command -v xvfb-run >/dev/null; then
    xvfb-run -a -s "-screen 0 1280x1024x24" "$studio" "$@"
  else
    QT_QPA_PLATFORM=offscreen "$studio" "$@"
  fi
}

for page in hardware configure launch runs bigmodels; do
  args=(--page "$page" --screenshot "$out/$page.png")
  if [[ "$page" == configure ]]; then
    args+=(--config "$sample")
  fi
  run "${args[@]}"
done
echo "screenshots.sh: wrote $(ls "$out"/*.png | wc -l) screenshots to $out"
